// B20 ocdbt-detect. Upstream: https://github.com/google/orbax/issues/924.
//
// Mechanism: orbax's is_ocdbt_checkpoint looked for manifest.ocdbt at the top of the checkpoint
// directory, while the save nests it under ocdbt.process_0/; the valid checkpoint was
// misclassified and opened with the zarr driver, which failed with a misleading NOT_FOUND. The
// reference reads two index layouts (format.h): one metadata.json, or one index per writer under
// writer_NNNNN/ (format version 2). The mutant engine's probe looks only at the top level of the
// iteration directory: a per-writer checkpoint is taken for a single-index one, whose reader then
// reports the missing metadata.json. Saving is unchanged, so its own saves (single index) load.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/mutant_target.h"

namespace ckptspec {
namespace {

class TopLevelProbeEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;
  Status ProbeIndexLayout(const std::string&, IndexLayout* layout) override {
    *layout = IndexLayout::kSingle;  // only a top-level marker is looked for, and none is needed
    return Status::OK();
  }
};

}  // namespace

ReplacedParts B20Parts(int /*process*/) { return EngineParts<TopLevelProbeEngine>(); }

}  // namespace ckptspec
