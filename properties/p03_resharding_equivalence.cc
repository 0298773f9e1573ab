// P3, resharding equivalence: a run saved under layout L1 and resumed under layout L2 (another
// TP/PP/DP/EP, or the same) with any flag set, some of the time under another params dtype or
// moment dtype (rules L1, L3), gives exactly the specification's expected state
// (ExpectedResume: the load rules L0-L9 applied to the saved global state), bit for bit; where
// the rules name an error, the target refuses too. Accepting what the spec refuses, or refusing
// what it accepts, fails.
// Catches: B08 (a per-expert tensor without its expert axis collides under a new topology),
// B07 (dp_reshardable per-rank lists), B02 (mis-sharded optimizer state), and any resharding
// error of the chunk-intersection load.
// Export form (half the cases): the saved checkpoint also goes through its consolidated export, is
// imported into fresh storage and resumed from there the same way (export_resume.h); the spec's
// answer is the same. Catches B32 (an export without the frozen parameters).
#include <cstdlib>

#include "generators/config_gen.h"
#include "generators/run_gen.h"
#include "model/describe.h"
#include "model/state_sharding.h"
#include "properties/export_resume.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/scenarios.h"

namespace ckptspec {
namespace {

// Whether some dp_reshardable bucket of the saved states is not a multiple of the size of the
// group it is split over under `to` (DP x CP for dense buffers, expert DP for expert ones): a
// new DP size that splits a bucket unevenly.
bool SomeBucketIndivisible(const RunSpec& saved, const std::vector<TrainingState>& states,
                           const RunSpec& to) {
  for (size_t i = 0; i < states.size(); ++i) {
    std::vector<ShardedStateDict> dicts;
    if (!ShardTrainingState(saved.layout.modules()[i].layout, states[i], saved.sharding, &dicts)
             .ok()) {
      continue;
    }
    const Layout& now = to.layout.modules()[i].layout;
    for (const ShardedStateDict& d : dicts) {
      for (const ShardedTensor& t : d.tensors) {
        if (t.spec.key.find(".bucket_idx_") == std::string::npos) continue;
        // "chained_{sub}." leads the key when the module has several sub-optimizers.
        const size_t sub =
            t.spec.key.rfind("chained_", 0) == 0
                ? static_cast<size_t>(std::strtoul(t.spec.key.c_str() + 8, nullptr, 10))
                : 0;
        const bool expert =
            sub < states[i].optimizers.size() && states[i].optimizers[sub].name == "expert";
        const int64_t group = expert ? now.edp() : now.GroupSize(GroupKind::kDataContext);
        if (t.spec.global_shape.at(0) % group != 0) return true;
      }
    }
  }
  return false;
}

// "TP 2->4, DP 2->1" for the sizes that changed between module layouts, or "".
std::string LayoutChange(const Layout& a, const Layout& b) {
  std::string out;
  auto add = [&out](const char* name, int64_t x, int64_t y) {
    if (x == y) return;
    out += (out.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(x) + "->" +
           std::to_string(y);
  };
  add("TP", a.tp(), b.tp());
  add("PP", a.pp(), b.pp());
  add("CP", a.cp(), b.cp());
  add("DP", a.dp(), b.dp());
  add("EP", a.ep(), b.ep());
  add("ETP", a.etp(), b.etp());
  return out;
}

// "module 0: params bf16->fp32, moments fp32->bf16" for the dtypes that changed between the runs'
// configs, or "".
std::string PrecisionChange(const RunSpec& a, const RunSpec& b) {
  std::string out;
  for (size_t i = 0; i < a.configs.size() && i < b.configs.size(); ++i) {
    std::string module;
    const auto add = [&module](const char* what, DType x, DType y) {
      if (x == y) return;
      module += (module.empty() ? "" : ", ") + std::string(what) + " " + DTypeName(x) + "->" +
                DTypeName(y);
    };
    add("params", a.configs[i].model.params_dtype, b.configs[i].model.params_dtype);
    add("moments", a.configs[i].optimizer.moment_dtype, b.configs[i].optimizer.moment_dtype);
    if (module.empty()) continue;
    out += (out.empty() ? "" : "; ") + ("module " + std::to_string(i) + ": ") + module;
  }
  return out;
}

}  // namespace

void CheckReshardingEquivalence(const TargetFactory& factory) {
  RunSpec saved_run = *gen::RunUpTo(16);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  // What varies, drawn first (swarm-style) at a pinned size, so that small early cases are not
  // all of one kind: one case in eight keeps the layout, three in eight change only the DP size
  // (a change the free choice of layouts draws rarely), the rest take any layout that fits. Three
  // in four DP-only cases also load the optimizer (no finetune, no no_load_optim): the conjunction
  // a DP-only resharding bug of the distributed optimizer needs.
  const int varies = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0, 8));
  const bool dp_only_change = varies >= 1 && varies <= 3;
  // Half of the DP-only changes save dp_reshardable state, whatever the run drew.
  if (dp_only_change && *rc::gen::arbitrary<bool>()) {
    saved_run = gen::WithOptimizerFormat(saved_run, OptimizerFormat::kDpReshardable);
  }
  RunSpec run = varies == 0      ? saved_run
                : dp_only_change ? *gen::ResumeRunChangingOnlyDp(saved_run, 16)
                                 : *gen::ResumeRunFor(saved_run, 16, true);
  LoadFlags flags = *gen::LoadFlagsGen(*rc::gen::inRange(0, 10) == 0);
  if (dp_only_change && *rc::gen::inRange(0, 4) != 0) {
    // The optimizer loaded, and none of the refusals that have nothing to do with it: no
    // conflicting scheduler flags (L0), no per-DP-rank RNG for DP ranks the save did not have
    // (L7 under data_parallel_random_init), no per-DP-rank loaders under a new DP size (L9).
    flags.finetune = false;
    flags.no_load_optim = false;
    flags.use_checkpoint_scheduler = flags.use_checkpoint_scheduler && !flags.override_scheduler;
    for (const TrainingConfig& c : saved_run.configs) {
      flags.no_load_rng = flags.no_load_rng || c.data_parallel_random_init;
      flags.reset_dataloader = flags.reset_dataloader || c.data.sampler == DataSampler::kPerRank;
    }
  }
  // The precisions, drawn last so that the draws above stay as they were: the saved run's moments
  // in fp32 or (a third of the time) bf16, and the resume under another params or moment dtype
  // some of the time.
  const DType saved_moments =
      *rc::gen::elementOf(std::vector<DType>{DType::kFloat32, DType::kFloat32, DType::kBFloat16});
  saved_run = gen::WithMomentDtype(saved_run, saved_moments);
  run = *gen::ResumePrecision(saved_run, gen::WithMomentDtype(run, saved_moments));
  if (dp_only_change && saved_run.sharding.optimizer_format == OptimizerFormat::kDpReshardable) {
    // The DP-only resharding of dp_reshardable buffers keeps the saved params dtype: its buffers
    // are keyed by it, and L3 refuses a change (the refusal is reached by the other cases).
    for (size_t i = 0; i < run.configs.size(); ++i) {
      run.configs[i].model.params_dtype = saved_run.configs[i].model.params_dtype;
    }
  }
  const std::string precision = PrecisionChange(saved_run, run);
  const bool params_dtype_changed = precision.find("params ") != std::string::npos;
  if (params_dtype_changed && *rc::gen::elementOf(std::vector<int>{0, 1, 2, 3}) != 0) {
    // A params dtype change matters most where the optimizer's masters and moments load (L1, L3):
    // three in four of these cases load them, saved (unless only DP changes, whose format stays
    // as drawn) in the format whose optimizer state can change dtype (dp_reshardable's buffers
    // are keyed by it: refused).
    flags.finetune = false;
    flags.no_load_optim = false;
    if (!dp_only_change) {
      saved_run = gen::WithOptimizerFormat(saved_run, OptimizerFormat::kFullyReshardable);
      run.sharding = saved_run.sharding;
    }
  }

  std::string changes;
  for (size_t i = 0; i < run.configs.size(); ++i) {
    const std::string c =
        LayoutChange(saved_run.layout.modules()[i].layout, run.layout.modules()[i].layout);
    if (c.empty()) continue;
    changes += (changes.empty() ? "" : "; ") + c;
  }
  RC_LOG() << "scenario:\n  save: " << DescribeRun(saved_run) << "\n  train " << k
           << ", save, restart\n  resume: " << DescribeRun(run)
           << "\n  layout change: " << (changes.empty() ? "none" : changes)
           << "\n  precision change: " << (precision.empty() ? "none" : precision)
           << "\n  flags: " << DescribeLoadFlags(flags) << "\n";
  for (const char* dim : {"TP", "PP", "DP", "EP"}) {
    if (changes.find(std::string(dim) + " ") != std::string::npos)
      RC_TAG(std::string(dim) + " changed");
  }
  RC_CLASSIFY(changes.empty(), "same layout");
  if (params_dtype_changed) RC_TAG("params dtype changed");
  if (precision.find("moments ") != std::string::npos) RC_TAG("moment dtype changed");
  bool only_dp = !changes.empty();
  for (size_t i = 0; i < run.configs.size(); ++i) {
    const Layout& a = saved_run.layout.modules()[i].layout;
    const Layout& b = run.layout.modules()[i].layout;
    only_dp = only_dp && a.tp() == b.tp() && a.pp() == b.pp() && a.cp() == b.cp() &&
              a.ep() == b.ep() && a.etp() == b.etp();
  }
  const bool dp_only_reshard =
      saved_run.sharding.optimizer_format == OptimizerFormat::kDpReshardable && only_dp &&
      !flags.no_load_optim && !flags.finetune;
  RC_TAG(OptimizerFormatName(saved_run.sharding.optimizer_format));
  RC_CLASSIFY(flags.finetune, "finetune");
  RC_CLASSIFY(flags.no_load_optim, "no_load_optim");
  RC_CLASSIFY(flags.no_load_rng, "no_load_rng");
  RC_CLASSIFY(flags.override_scheduler, "override_scheduler");
  RC_CLASSIFY(flags.use_checkpoint_scheduler, "use_checkpoint_scheduler");
  RC_CLASSIFY(flags.reset_dataloader, "reset_dataloader");

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(saved_run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, k));

  // The export form, one case in two, drawn after every other draw of the case: the checkpoint
  // also goes through its consolidated export (one file, imported into fresh storage) and is
  // resumed from there the same way; the spec's answer is the same (docs/SEMANTICS.md §10).
  if (*rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0, 2)) == 0) {
    bool exported = false;
    const std::string failed =
        ExportResumeDifference(factory, saved_run, states, run, flags, &exported);
    bool frozen = false;
    for (const TrainingState& s : states) {
      for (const ParamState& p : s.params) frozen = frozen || p.frozen;
    }
    RC_CLASSIFY(exported, "resumed from a consolidated export");
    RC_CLASSIFY(exported && frozen, "resumed from a consolidated export holding frozen parameters");
    if (exported) RC_LOG() << "also exported into one file, imported, resumed from the import\n";
    if (!failed.empty()) RC_FAIL(failed);
  }

  RestartedResume r;
  CKPTSPEC_RC_ASSERT_OK(SaveRestartResume(factory, saved_run, states, run, flags, &r));
  const Status& spec = r.spec;
  const Status& got = r.got;

  RC_CLASSIFY(!spec.ok(), "spec refuses");
  // Where a dtype change matters most: the optimizer's masters and moments load (L1, L3).
  RC_CLASSIFY(params_dtype_changed && spec.ok() && !flags.finetune && !flags.no_load_optim,
              "params dtype changed, optimizer loaded");
  // The conjunction a DP-only resharding bug of the distributed optimizer needs, counted where
  // the load goes through; and its trigger: the new DP size splits some bucket unevenly.
  RC_CLASSIFY(dp_only_reshard && spec.ok(), "dp_reshardable, only DP changed, optimizer loaded");
  RC_CLASSIFY(
      dp_only_reshard && spec.ok() && SomeBucketIndivisible(saved_run, states, run),
      "dp_reshardable, only DP changed, optimizer loaded, a bucket not divisible by the new "
      "DP size");
  if (!spec.ok()) {
    RC_LOG() << "spec refuses: " << spec.ToString() << "\ntarget: " << got.ToString() << "\n";
    if (got.ok()) RC_FAIL("the target accepted a resume the spec refuses: " + spec.ToString());
    return;
  }
  if (!got.ok()) RC_FAIL("the target refused a resume the spec accepts: " + got.ToString());
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(r.resumed, r.expected),
                          "resumed state differs from the spec's expected resume");
}

}  // namespace ckptspec
