// Generators of whole runs (layout, per-module training configs, checkpoint sharding config) and
// of layout changes for a resume.
//
// Contracts:
//  - RunUpTo yields a RunSpec whose states build (InitialStates ok) and shard: one module mostly,
//    two non-colocated named modules sometimes; both optimizer formats (dp_reshardable forces
//    dense+expert chaining on models with experts, as Megatron always chains them).
//  - ResumeRunFor yields the run a resume uses: the same configs on the same layout, or on another
//    layout that fits every module's model (data.dp_size and ranks follow the new layout).
#pragma once

#include <ostream>

#include <rapidcheck.h>

#include "generators/layout_gen.h"
#include "model/run_spec.h"

namespace ckptspec {
namespace gen {

rc::Gen<RunSpec> RunUpTo(int max_world, bool allow_heterogeneous = true);
// `run` saving its optimizer state in `format`, its configs fitted to it as RunUpTo fits them
// (dp_reshardable chains the expert optimizer).
RunSpec WithOptimizerFormat(RunSpec run, OptimizerFormat format);
// `run` with every module following the torch.optim freezing family (training_state.h): the
// per-parameter step, no CPU offload, the fully_reshardable format.
RunSpec WithTorchOptimFreezing(RunSpec run);
// `run` with every module's data iterator a per-DP-rank loader (DataSampler::kPerRank).
RunSpec WithPerRankLoaders(RunSpec run);
// Same module count and models; `change_layout` false keeps the layout.
rc::Gen<RunSpec> ResumeRunFor(const RunSpec& saved, int max_world, bool change_layout);
// `run` with every module's optimizer keeping its moments in `dtype` (fp32 or bf16).
RunSpec WithMomentDtype(RunSpec run, DType dtype);
// A resume under other precisions some of the time (docs/SEMANTICS.md §4, load rules L1 and L3):
// `resume`, the run a resume of `saved` uses (the same modules), with, drawn at every size, in a
// quarter of the draws every module's params dtype changed (to fp32, bf16 or fp16, other than the
// module's in `saved`), in a quarter its moment dtype changed (fp32 <-> bf16, from the module's in
// `saved`), in an eighth both; in the rest `resume` as it is. Draw it after a property's other
// draws, so that theirs stay as they were.
rc::Gen<RunSpec> ResumePrecision(const RunSpec& saved, RunSpec resume);
// As ResumeRunFor with change_layout, each module's layout differing in its DP size only
// (gen::LayoutChangingOnlyDp): the resume a DP-only resharding needs, which the free choice of
// layouts draws rarely.
// A direction other than kAny moves each module's DP size that way where a size fits.
rc::Gen<RunSpec> ResumeRunChangingOnlyDp(const RunSpec& saved, int max_world,
                                         DpDirection direction = DpDirection::kAny);

}  // namespace gen

void showValue(const RunSpec& run, std::ostream& os);

}  // namespace ckptspec
