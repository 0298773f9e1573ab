// P10, scheduler and iteration semantics per the flag table (load_semantics.h L0, L2, L5, L6):
// resumed with generated flags and, sometimes, a changed scheduler config (max_lr, min_lr, decay
// style), the iteration, the scheduler state (config and num_steps) and every group's lr, max_lr
// and min_lr are the spec's. Independently of the spec: override_scheduler together with
// use_checkpoint_scheduler is refused; a changed scheduler config without either flag is refused
// when the optimizer (and so the scheduler) is loaded; num_steps comes from the checkpoint when
// loaded and is 0 when not; under finetune the iteration is 0, else the checkpoint's.
// Catches: B05 (the override ignored because the LR bounds come from the stale saved groups; and
// its inverse, the override writing global bounds over explicit per-group ones).
#include <sstream>

#include "generators/config_gen.h"
#include "generators/run_gen.h"
#include "model/describe.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/scenarios.h"

namespace ckptspec {
namespace {

enum class SchedulerChange { kNone, kMaxLr, kMinLr, kDecayStyle };

const char* ChangeName(SchedulerChange c) {
  switch (c) {
    case SchedulerChange::kNone:
      return "unchanged";
    case SchedulerChange::kMaxLr:
      return "max_lr x2";
    case SchedulerChange::kMinLr:
      return "min_lr / 2";
    case SchedulerChange::kDecayStyle:
      return "decay style";
  }
  return "?";
}

// How RapidCheck prints the generated change in a counterexample.
void showValue(SchedulerChange c, std::ostream& os) { os << ChangeName(c); }

// Applies `change` to `c` when the result stays valid; returns whether the config changed.
bool ApplyChange(SchedulerChange change, LrDecayStyle style, SchedulerConfig* c) {
  SchedulerConfig n = *c;
  switch (change) {
    case SchedulerChange::kNone:
      return false;
    case SchedulerChange::kMaxLr:
      n.max_lr *= 2;
      break;
    case SchedulerChange::kMinLr:
      n.min_lr = n.min_lr > 0 ? n.min_lr / 2 : n.max_lr / 4;
      break;
    case SchedulerChange::kDecayStyle:
      n.lr_decay_style = style;
      break;
  }
  if (n == *c || !ValidateSchedulerConfig(n).ok()) return false;
  *c = n;
  return true;
}

std::string OptionalNum(const std::optional<double>& v) {
  if (!v) return "None";
  std::ostringstream os;
  os << *v;
  return os.str();
}

// The first difference in what P10 covers (iteration, scheduler, group LR fields), or "".
std::string SchedulerDifference(const TrainingState& got, const TrainingState& want) {
  std::ostringstream os;
  if (got.iteration != want.iteration) {
    os << "iteration " << got.iteration << " vs " << want.iteration;
  } else if (got.scheduler.num_steps != want.scheduler.num_steps) {
    os << "scheduler num_steps " << got.scheduler.num_steps << " vs " << want.scheduler.num_steps;
  } else if (got.scheduler.config != want.scheduler.config) {
    os << "scheduler config: max_lr " << got.scheduler.config.max_lr << " vs "
       << want.scheduler.config.max_lr << ", min_lr " << got.scheduler.config.min_lr << " vs "
       << want.scheduler.config.min_lr << ", decay style "
       << LrDecayStyleName(got.scheduler.config.lr_decay_style) << " vs "
       << LrDecayStyleName(want.scheduler.config.lr_decay_style) << " (or another field)";
  } else if (got.optimizers.size() != want.optimizers.size()) {
    os << got.optimizers.size() << " sub-optimizers vs " << want.optimizers.size();
  } else {
    for (size_t o = 0; o < got.optimizers.size() && os.str().empty(); ++o) {
      const auto& a = got.optimizers[o].groups;
      const auto& b = want.optimizers[o].groups;
      if (a.size() != b.size()) {
        os << "sub-optimizer " << o << ": " << a.size() << " groups vs " << b.size();
        break;
      }
      for (size_t g = 0; g < a.size(); ++g) {
        const std::string where =
            "sub-optimizer " + std::to_string(o) + " group " + std::to_string(g);
        if (a[g].identity.max_lr != b[g].identity.max_lr) {
          os << where << " max_lr " << OptionalNum(a[g].identity.max_lr) << " vs "
             << OptionalNum(b[g].identity.max_lr);
        } else if (a[g].identity.min_lr != b[g].identity.min_lr) {
          os << where << " min_lr " << OptionalNum(a[g].identity.min_lr) << " vs "
             << OptionalNum(b[g].identity.min_lr);
        } else if (a[g].lr != b[g].lr) {
          os << where << " lr " << a[g].lr << " vs " << b[g].lr;
        } else if (a[g].weight_decay != b[g].weight_decay) {
          os << where << " weight_decay " << a[g].weight_decay << " vs " << b[g].weight_decay;
        }
        if (!os.str().empty()) break;
      }
    }
  }
  return os.str();
}

}  // namespace

void CheckSchedulerIteration(const TargetFactory& factory) {
  const RunSpec saved_run = *gen::RunUpTo(8);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 4);
  RunSpec run = *gen::ResumeRunFor(saved_run, 8,
                                   factory.capabilities.resharding && *rc::gen::inRange(0, 4) == 0);
  LoadFlags flags = *gen::LoadFlagsGen(false);
  // The scheduler flags are the point: one of them (rarely both) half the time.
  switch (*rc::gen::inRange(0, 8)) {
    case 0:
    case 1:
      flags.override_scheduler = true;
      flags.use_checkpoint_scheduler = false;
      break;
    case 2:
    case 3:
      flags.use_checkpoint_scheduler = true;
      flags.override_scheduler = false;
      break;
    case 4:
      flags.override_scheduler = flags.use_checkpoint_scheduler = true;
      break;
    default:
      break;
  }
  const SchedulerChange change =
      *rc::gen::element(SchedulerChange::kNone, SchedulerChange::kMaxLr, SchedulerChange::kMinLr,
                        SchedulerChange::kDecayStyle);
  const LrDecayStyle style =
      *rc::gen::element(LrDecayStyle::kConstant, LrDecayStyle::kLinear, LrDecayStyle::kCosine,
                        LrDecayStyle::kInverseSquareRoot);
  bool changed = false;
  for (TrainingConfig& c : run.configs) changed |= ApplyChange(change, style, &c.scheduler);

  RC_LOG() << "scenario:\n  save: " << DescribeRun(saved_run) << "\n  train " << k
           << ", save, restart\n  resume: " << DescribeRun(run)
           << "\n  scheduler change: " << (changed ? ChangeName(change) : "none")
           << "\n  flags: " << DescribeLoadFlags(flags) << "\n";
  const bool load_optim = !flags.finetune && !flags.no_load_optim;
  RC_TAG(changed ? ChangeName(change) : "scheduler unchanged");
  RC_CLASSIFY(flags.override_scheduler && flags.use_checkpoint_scheduler, "both scheduler flags");
  RC_CLASSIFY(flags.override_scheduler && !flags.use_checkpoint_scheduler, "override_scheduler");
  RC_CLASSIFY(flags.use_checkpoint_scheduler && !flags.override_scheduler,
              "use_checkpoint_scheduler");
  RC_CLASSIFY(load_optim, "optimizer loaded");
  RC_CLASSIFY(flags.finetune, "finetune");

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(saved_run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, k));
  RestartedResume r;
  CKPTSPEC_RC_ASSERT_OK(SaveRestartResume(factory, saved_run, states, run, flags, &r));
  const Status& spec = r.spec;
  const Status& got = r.got;
  std::vector<TrainingState>& expected = r.expected;
  std::vector<TrainingState>& resumed = r.resumed;
  RC_LOG() << "spec: " << spec.ToString() << "\ntarget: " << got.ToString() << "\n";

  // The flag table's refusals, stated directly.
  if (flags.override_scheduler && flags.use_checkpoint_scheduler) {
    RC_ASSERT(!spec.ok());
    if (got.ok()) RC_FAIL("override_scheduler with use_checkpoint_scheduler was accepted");
    return;
  }
  if (changed && load_optim && !flags.override_scheduler && !flags.use_checkpoint_scheduler) {
    RC_ASSERT(!spec.ok());
    if (got.ok()) RC_FAIL("a changed scheduler config without either flag was accepted");
    return;
  }
  if (!spec.ok()) {
    RC_CLASSIFY(true, "spec refuses for another reason");
    if (got.ok()) RC_FAIL("the target accepted a resume the spec refuses: " + spec.ToString());
    return;
  }
  if (!got.ok()) RC_FAIL("the target refused a resume the spec accepts: " + got.ToString());

  for (size_t m = 0; m < resumed.size(); ++m) {
    const TrainingState& s = resumed[m];
    RC_ASSERT(s.iteration == (flags.finetune ? 0 : states[m].iteration));
    RC_ASSERT(s.scheduler.num_steps == (load_optim ? states[m].scheduler.num_steps : 0));
    if (flags.override_scheduler && load_optim) {
      // L6 stated directly: the bounds come from the new config's groups, never the saved ones.
      TrainingState fresh;
      CKPTSPEC_RC_ASSERT_OK(InitialTrainingState(run.configs[m], &fresh));
      RC_ASSERT(fresh.optimizers.size() == s.optimizers.size());
      for (size_t o = 0; o < s.optimizers.size(); ++o) {
        RC_ASSERT(fresh.optimizers[o].groups.size() == s.optimizers[o].groups.size());
        for (size_t g = 0; g < s.optimizers[o].groups.size(); ++g) {
          const ParamGroupIdentity& a = s.optimizers[o].groups[g].identity;
          const ParamGroupIdentity& b = fresh.optimizers[o].groups[g].identity;
          if (a.max_lr != b.max_lr || a.min_lr != b.min_lr) {
            RC_FAIL("override_scheduler: sub-optimizer " + std::to_string(o) + " group " +
                    std::to_string(g) + " has bounds (" + OptionalNum(a.max_lr) + ", " +
                    OptionalNum(a.min_lr) + "), the new config's are (" + OptionalNum(b.max_lr) +
                    ", " + OptionalNum(b.min_lr) + ")");
          }
        }
      }
    }
    CKPTSPEC_RC_ASSERT_SAME(SchedulerDifference(s, expected[m]),
                            "module " + std::to_string(m) + " (resumed vs spec)");
  }
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, expected),
                          "resumed state differs from the spec's");
}

}  // namespace ckptspec
