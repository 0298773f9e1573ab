// The public mutant interface: targets written outside the catalog, loaded by
// `ckptspec run --plugin FILE.so` and run through the same property catalog.
//
// A plugin is a shared library that exports
//     extern "C" void ckptspec_register_targets(ckptspec::TargetRegistrar* registrar);
// and calls registrar->Add(factory) for each target (targets/target_factory.h's TargetFactory; a
// mutant is most easily made with targets/mutants/mutant_target.h's MutantTargetFactory and a
// CanonicalFramework subclass, see examples/plugin/).
//
// Route and limits: the ckptspec executable is linked with its symbols exported (CMake
// ENABLE_EXPORTS), and a plugin is built against the same headers and links NOTHING of ckptspec:
// its references to ckptspec's classes (CanonicalFramework, ReferenceEngine, MemEnv, ...) resolve
// against the executable at load time. So a plugin must be built by the same compiler and
// standard library, from the same source tree version, as the executable that loads it (C++ types
// such as TargetFactory and std::function cross the boundary; there is no stable ABI), and it may
// use only what the executable links (the model, targets, mutants and properties libraries).
// Plugins are never unloaded.
#pragma once

#include <string>
#include <vector>

#include "model/status.h"
#include "targets/target_factory.h"

namespace ckptspec {

class TargetRegistrar {
 public:
  TargetRegistrar() = default;
  TargetRegistrar(const TargetRegistrar&) = delete;  // a polymorphic base: never copied
  TargetRegistrar& operator=(const TargetRegistrar&) = delete;
  virtual ~TargetRegistrar() = default;
  // Registers one target; its name is what --target selects (it must not clash with a built-in
  // target's name).
  virtual void Add(TargetFactory factory) = 0;
};

// The symbol a plugin exports.
inline constexpr const char* kPluginEntryPoint = "ckptspec_register_targets";
extern "C" {
typedef void (*RegisterTargetsFunction)(TargetRegistrar* registrar);
}

// dlopens `path` and calls its entry point; appends the targets it registers to *out. Errors
// (InvalidArgument, naming the file): the file cannot be loaded (missing, not a shared library,
// unresolved symbols: dlerror's text), it lacks the entry point, or it registers no target.
Status LoadTargetPlugin(const std::string& path, std::vector<TargetFactory>* out);

}  // namespace ckptspec
