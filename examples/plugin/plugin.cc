// The example plugin (docs/PLUGINS.md): the three worked examples, each registered with what
// `ckptspec run` expects of it.
#include "examples.h"
#include "runner/plugin.h"

CKPTSPEC_PLUGIN(registrar) {
  using ckptspec::PluginExpectation;
  registrar->Add(example::DataIteratorLosingTarget(), PluginExpectation::Killed());
  registrar->Add(example::CoordinatorOnlyIndexTarget(), PluginExpectation::Killed());
  registrar->Add(example::TimestampingEngineTarget(), PluginExpectation::Listed(R"({
    "format": "ckptspec.expectations", "version": 1,
    "properties": {
      "P17": {"expect": "fail", "reason": "each save records its wall-clock time in the metadata"}
    }})"));
}
