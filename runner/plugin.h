// The public mutant interface: targets written outside the catalog, loaded by
// `ckptspec run --plugin FILE.so` (and `ckptspec replay --plugin`) and run through the same
// property catalog. docs/PLUGINS.md is the recipe: the installed CMake package and its
// ckptspec_add_plugin, the engine's steps a mutant overrides, worked examples.
//
// A plugin is a shared library with one definition
//     CKPTSPEC_PLUGIN(registrar) { registrar->Add(factory, PluginExpectation::Killed()); ... }
// which exports the entry point ckptspec_register_targets and the plugin's compatibility stamp
// (runner/plugin_stamp.h). Each target is added with what `ckptspec run` holds it to.
//
// Route and limits: the ckptspec executable is linked with its symbols exported (CMake
// ENABLE_EXPORTS), and a plugin is built against the same headers and links NOTHING of ckptspec:
// its references to ckptspec's classes (CanonicalFramework, ReferenceEngine, MemEnv, ...) resolve
// against the executable at load time. So a plugin must be built by the same compiler and
// standard library, with the same language standard, from the same headers, as the executable
// that loads it (C++ types such as TargetFactory and std::function cross the boundary; there is
// no stable ABI): the loader compares the plugin's stamp with its own before it loads the plugin,
// and refuses a mismatch naming each field that differs. A plugin may use only what the
// executable links (the model, targets, mutants and properties libraries). Plugins are never
// unloaded.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/status.h"
#include "runner/expectations.h"
#include "runner/plugin_stamp.h"
#include "targets/target_factory.h"

namespace ckptspec {

// What `ckptspec run` holds a plugin's target to (cli/run_judging.h), in the vocabulary of the
// adapters' expectation files (docs/ADAPTERS.md, "Expectations").
struct PluginExpectation {
  enum class Kind { kKilled, kClean, kListed };
  Kind kind = Kind::kKilled;
  std::string expectations_json;  // kListed: an expectations file's text

  // A mutant: at least one selected property must fail.
  static PluginExpectation Killed() { return {Kind::kKilled, {}}; }
  // Every selected property passes or is n/a (an equivalent mutant, a wrapper of a real engine).
  static PluginExpectation Clean() { return {Kind::kClean, {}}; }
  // Exactly the outcomes an expectations file lists ({"format": "ckptspec.expectations",
  // "version": 1, "properties": {"P13": {"expect": "fail", "reason": "..."}}}; a property it does
  // not list must pass). No "extends". Parsed when the plugin is loaded; errors name the plugin
  // and the target.
  static PluginExpectation Listed(std::string expectations_json) {
    return {Kind::kListed, std::move(expectations_json)};
  }
};

class TargetRegistrar {
 public:
  TargetRegistrar() = default;
  TargetRegistrar(const TargetRegistrar&) = delete;  // a polymorphic base: never copied
  TargetRegistrar& operator=(const TargetRegistrar&) = delete;
  virtual ~TargetRegistrar() = default;
  // Registers one target and what the run expects of it (factory.expect_killed is set from
  // `expectation`). Its name is what --target selects (it must not clash with a built-in target's
  // name).
  virtual void Add(TargetFactory factory, PluginExpectation expectation) = 0;
};

// The symbols a plugin exports.
inline constexpr const char* kPluginEntryPoint = "ckptspec_register_targets";
extern "C" {
typedef void (*RegisterTargetsFunction)(TargetRegistrar* registrar);
}

// A plugin's definition: the stamp of the translation unit it is written in, in the section the
// loader reads, and the entry point, whose body follows the macro:
//     CKPTSPEC_PLUGIN(registrar) { registrar->Add(...); }
#define CKPTSPEC_PLUGIN(registrar)                                                         \
  extern "C" __attribute__((visibility("default"), used, section(CKPTSPEC_STAMP_SECTION))) \
  const char ckptspec_plugin_stamp[] = CKPTSPEC_BUILD_STAMP;                               \
  extern "C" __attribute__((visibility("default"))) void ckptspec_register_targets(        \
      ::ckptspec::TargetRegistrar* registrar)

// This executable's stamp (CKPTSPEC_BUILD_STAMP as ckptspec itself was compiled).
const char* ExecutableBuildStamp();

// The differences between a plugin's stamp and the executable's, field by field, in words
// ("c++ 202002L (this ckptspec: 201703L)"), joined by "; "; empty when they are equal. A field
// one stamp lacks counts as different.
std::string StampDifferences(const std::string& plugin, const std::string& executable);

// A target a plugin registered, with what it declared the run expects of it.
struct PluginTarget {
  TargetFactory factory;  // expect_killed is set from `expected`
  PluginExpectation::Kind expected = PluginExpectation::Kind::kKilled;
  Expectations listed;  // kListed: the parsed expectations
};

// Reads the stamp from `path`'s ELF section, compares it with this executable's, then dlopens
// the plugin and calls its entry point; appends the targets it registers to *out. Errors
// (InvalidArgument, naming the file): not a readable 64-bit ELF file, no stamp section (not
// built with CKPTSPEC_PLUGIN), a stamp that differs (each differing field named), the file
// cannot be loaded (unresolved symbols: dlerror's text), no entry point, no target registered,
// or a listed expectation that does not parse (naming the target).
Status LoadTargetPlugin(const std::string& path, std::vector<PluginTarget>* out);

}  // namespace ckptspec
