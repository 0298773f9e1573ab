// P3, resharding equivalence: a run saved under layout L1 and resumed under layout L2 (another
// TP/PP/DP/EP, or the same) with any flag set gives exactly the specification's expected state
// (ExpectedResume: the load rules L0-L9 applied to the saved global state), bit for bit; where
// the rules name an error, the target refuses too. Accepting what the spec refuses, or refusing
// what it accepts, fails.
// Catches: B08 (a per-expert tensor without its expert axis collides under a new topology),
// B07 (dp_reshardable per-rank lists), B02 (mis-sharded optimizer state), and any resharding
// error of the chunk-intersection load.
#include "generators/config_gen.h"
#include "generators/run_gen.h"
#include "model/describe.h"
#include "properties/property.h"
#include "properties/property_util.h"

namespace ckptspec {
namespace {

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

}  // namespace

void CheckReshardingEquivalence(const TargetFactory& factory) {
  const RunSpec saved_run = *gen::RunUpTo(16);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  // What varies, drawn first (swarm-style) at a pinned size, so that small early cases are not
  // all of one kind: one case in eight keeps the layout, two in eight change only the DP size (a
  // change the free choice of layouts draws rarely), the rest take any layout that fits.
  const int varies = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0, 8));
  const RunSpec run = varies == 0   ? saved_run
                      : varies <= 2 ? *gen::ResumeRunChangingOnlyDp(saved_run, 16)
                                    : *gen::ResumeRunFor(saved_run, 16, true);
  const LoadFlags flags = *gen::LoadFlagsGen(*rc::gen::inRange(0, 10) == 0);

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
           << "\n  flags: " << DescribeLoadFlags(flags) << "\n";
  for (const char* dim : {"TP", "PP", "DP", "EP"}) {
    if (changes.find(std::string(dim) + " ") != std::string::npos)
      RC_TAG(std::string(dim) + " changed");
  }
  RC_CLASSIFY(changes.empty(), "same layout");
  // The conjunction a DP-only resharding bug of the distributed optimizer needs.
  bool only_dp = !changes.empty();
  for (size_t i = 0; i < run.configs.size(); ++i) {
    const Layout& a = saved_run.layout.modules()[i].layout;
    const Layout& b = run.layout.modules()[i].layout;
    only_dp = only_dp && a.tp() == b.tp() && a.pp() == b.pp() && a.cp() == b.cp() &&
              a.ep() == b.ep() && a.etp() == b.etp();
  }
  RC_CLASSIFY(saved_run.sharding.optimizer_format == OptimizerFormat::kDpReshardable && only_dp &&
                  !flags.no_load_optim && !flags.finetune,
              "dp_reshardable, only DP changed, optimizer loaded");
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

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  CKPTSPEC_RC_ASSERT_OK(
      SaveRun(target, saved_run, states, states.front().iteration, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());

  std::vector<TrainingState> expected;
  const Status spec = ExpectedResume(saved_run, states, run, flags, &expected);
  ResumeOptions options;
  options.flags = flags;
  std::vector<TrainingState> resumed;
  const Status got = ResumeRun(target, run, options, &resumed);

  RC_CLASSIFY(!spec.ok(), "spec refuses");
  if (!spec.ok()) {
    RC_LOG() << "spec refuses: " << spec.ToString() << "\ntarget: " << got.ToString() << "\n";
    if (got.ok()) RC_FAIL("the target accepted a resume the spec refuses: " + spec.ToString());
    return;
  }
  if (!got.ok()) RC_FAIL("the target refused a resume the spec accepts: " + got.ToString());
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, expected),
                          "resumed state differs from the spec's expected resume");
}

}  // namespace ckptspec
