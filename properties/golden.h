// Golden checkpoints (P18): small checkpoints written by a reference of a known format version,
// committed under corpus/golden/<scenario>/ as real files, that every later version must load.
//
// Layout of one scenario directory:
//   scenario.json   {"scenario", "description", "format_version", "iteration", "world_size",
//                    "optimizer_format", "param_group_key", "files": {relative path: size}}
//                   "param_group_key": "with_declared_lr_bounds" when the saved param groups
//                   record their declared LR bounds (model/param_groups.h); absent in goldens of
//                   the older form, written before the field existed.
//   checkpoint/     the checkpoint root as the writing target left it (tracker, iter_N/, ...)
//
// Contracts:
//  - GoldenScenarios() is fixed: each scenario's run is built by code (no randomness), so the
//    run a golden checkpoint was written from can always be rebuilt; a scenario is never changed
//    once its checkpoint is committed (add a new one instead).
//  - WriteGoldenScenario saves the run trained to `iteration` through a fresh target of `factory`
//    (a reference saving in the scenario's index layout) and writes scenario.json (with the
//    layout's format version) and checkpoint/ under `dir` on `env` (replacing what is there).
//    Only the make_golden tool calls it: goldens are regenerated deliberately, never in CI.
//  - ReadGoldenScenario reads them back and checks scenario.json against the tree and the code.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "model/param_groups.h"
#include "model/run_spec.h"
#include "harness/storage_util.h"
#include "targets/reference/format.h"
#include "targets/target_factory.h"

namespace ckptspec {

struct GoldenScenario {
  std::string name;
  RunSpec run;
  int64_t iteration = 0;
  // The index layout the golden was written in (make_golden uses ReferenceTargetFactory(this)).
  IndexLayout index_layout = IndexLayout::kSingle;
};

// TP2·PP2·DP2 dense bf16 fully_reshardable; MoE EP2 dp_reshardable; two heterogeneous modules
// (all format version 1, single index); TP2·DP2 dense fp32 in format version 2's per-writer index
// (these four in the older param-group form); DP2 dense fp32 with two regions of declared LR bounds
// (format version 1, groups keyed with their declared bounds).
const std::vector<GoldenScenario>& GoldenScenarios();
// How RapidCheck prints a chosen scenario in a counterexample: its name.
void showValue(const GoldenScenario& scenario, std::ostream& os);

// corpus/golden in the source tree (a compile definition of the source directory).
std::string GoldenCorpusDir();

Status WriteGoldenScenario(const GoldenScenario& scenario, const TargetFactory& factory, Env* env,
                           const std::string& dir);

struct GoldenCheckpoint {
  int format_version = 0;
  int64_t iteration = 0;
  IdentityKeySet param_group_key = IdentityKeySet::kCore;  // scenario.json's "param_group_key"
  StorageTree tree;                                        // checkpoint/, relative paths
};
Status ReadGoldenScenario(const GoldenScenario& scenario, Env* env, const std::string& dir,
                          GoldenCheckpoint* out);

}  // namespace ckptspec
