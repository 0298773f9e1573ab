// P8, param-group identity: optimizer state attaches to param groups by identity (wd_mult,
// lr_mult, is_expert_parallel, is_decoupled_lr and the declared LR bounds), never by position.
//  - Groups that differ only in their declared LR bounds (per-region bounds) are distinct: each
//    resumes with its own bounds, lr and step.
//  - Order: the saved groups of every sub-optimizer are stored in a permuted order (and the
//    resuming config's lr_mult overrides sometimes come reversed): the resume equals the spec's
//    expectation, and -- when the identities still match -- the resume of the same state saved in
//    its natural order.
//  - Colliding identities (two saved groups of one sub-optimizer with the same identity) and a
//    missing identity key (a core field absent from a saved group, B01) are refused with an error,
//    at the save or at the resume, never merged or matched silently; the spec refuses too.
// Catches: B01 (lr_mult popped from the runtime groups / identity checked only on load), B05's
// group side (bounds from stale groups), B21 and Megatron's make_needed_groups collapsing
// duplicates.
#include <algorithm>

#include "generators/run_gen.h"
#include "model/describe.h"
#include "properties/property.h"
#include "properties/property_util.h"

namespace ckptspec {
namespace {

enum class Case { kPermuted, kColliding, kMissingKey };

const char* CaseName(Case c) {
  switch (c) {
    case Case::kPermuted:
      return "groups permuted";
    case Case::kColliding:
      return "colliding identities";
    case Case::kMissingKey:
      return "missing identity key";
  }
  return "?";
}

// How RapidCheck prints the generated case in a counterexample.
void showValue(Case c, std::ostream& os) { os << CaseName(c); }

}  // namespace

void CheckParamGroupIdentity(const TargetFactory& factory) {
  const RunSpec saved_run = *gen::RunUpTo(8);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 3);
  std::vector<TrainingState> natural;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(saved_run, &natural));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&natural, k));

  // Sub-optimizers (module, index) with at least two groups: where identities can collide.
  std::vector<std::pair<size_t, size_t>> multi;
  for (size_t m = 0; m < natural.size(); ++m) {
    for (size_t o = 0; o < natural[m].optimizers.size(); ++o) {
      if (natural[m].optimizers[o].groups.size() >= 2) multi.emplace_back(m, o);
    }
  }
  // Groups of one sub-optimizer that differ only in their LR bounds (a per-region bound): the
  // older identity key collapses them (B21).
  bool bounds_only = false;
  for (const TrainingState& s : natural) {
    for (const SubOptimizer& o : s.optimizers) {
      bounds_only |= SomeGroupsDifferOnlyInLrBounds(Identities(o.groups));
    }
  }
  std::vector<Case> cases{Case::kPermuted, Case::kMissingKey};
  if (!multi.empty()) cases.push_back(Case::kColliding);
  const Case c = *rc::gen::elementOf(cases);

  std::vector<TrainingState> saved = natural;
  std::string edit;
  if (c == Case::kPermuted) {
    for (size_t m = 0; m < saved.size(); ++m) {
      for (size_t o = 0; o < saved[m].optimizers.size(); ++o) {
        std::vector<ParamGroup>& groups = saved[m].optimizers[o].groups;
        std::vector<size_t> order(groups.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        for (size_t i = order.size(); i > 1; --i) {  // Fisher-Yates from generated draws
          std::swap(order[i - 1], order[*rc::gen::inRange<size_t>(0, i)]);
        }
        std::vector<ParamGroup> permuted;
        for (size_t i : order) permuted.push_back(groups[i]);
        groups = std::move(permuted);
        edit += "\n  module " + std::to_string(m) + " sub-optimizer '" +
                saved[m].optimizers[o].name + "' groups stored in order";
        for (size_t i : order) edit += " " + std::to_string(i);
      }
    }
  } else if (c == Case::kColliding) {
    const auto [m, o] = *rc::gen::elementOf(multi);
    std::vector<ParamGroup>& groups = saved[m].optimizers[o].groups;
    const size_t i = *rc::gen::inRange<size_t>(0, groups.size());
    size_t j = *rc::gen::inRange<size_t>(0, groups.size() - 1);
    if (j >= i) ++j;
    groups[j].identity = groups[i].identity;
    edit = "\n  module " + std::to_string(m) + " sub-optimizer '" + saved[m].optimizers[o].name +
           "': group " + std::to_string(j) + " given group " + std::to_string(i) + "'s identity";
  } else {
    const size_t m = *rc::gen::inRange<size_t>(0, saved.size());
    RC_PRE(!saved[m].optimizers.empty());
    const size_t o = *rc::gen::inRange<size_t>(0, saved[m].optimizers.size());
    std::vector<ParamGroup>& groups = saved[m].optimizers[o].groups;
    RC_PRE(!groups.empty());
    const size_t g = *rc::gen::inRange<size_t>(0, groups.size());
    const IdentityField field =
        *rc::gen::element(IdentityField::kWdMult, IdentityField::kLrMult,
                          IdentityField::kIsExpertParallel, IdentityField::kIsDecoupledLr);
    groups[g].identity.Remove(field);
    edit = "\n  module " + std::to_string(m) + " sub-optimizer '" + saved[m].optimizers[o].name +
           "' group " + std::to_string(g) + ": '" + IdentityFieldName(field) + "' removed";
  }

  // The resuming config sometimes lists its lr_mult overrides in reverse (first match wins, so
  // this reorders or regroups the current groups).
  RunSpec run = saved_run;
  bool reversed = false;
  if (*rc::gen::inRange(0, 4) == 0) {
    for (TrainingConfig& config : run.configs) {
      auto& overrides = config.optimizer.grouping.lr_mult_overrides;
      if (overrides.size() < 2) continue;
      std::reverse(overrides.begin(), overrides.end());
      reversed = true;
    }
  }
  RC_LOG() << "scenario:\n  " << DescribeRun(saved_run) << "\n  train " << k << ", " << CaseName(c)
           << ":" << edit << "\n  save, restart, resume on the same layout"
           << (reversed ? " with the lr_mult overrides reversed" : "") << "\n";
  RC_TAG(CaseName(c));
  RC_CLASSIFY(reversed, "lr_mult overrides reversed");
  RC_CLASSIFY(!multi.empty(), "a sub-optimizer with several groups");
  RC_CLASSIFY(bounds_only, "groups that differ only in LR bounds");

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  const Status saved_status =
      SaveRun(target, saved_run, saved, saved.front().iteration, SaveOptions());
  std::vector<TrainingState> expected;
  const Status spec = ExpectedResume(saved_run, saved, run, LoadFlags(), &expected);

  if (c != Case::kPermuted) {
    RC_ASSERT(!spec.ok());  // the load rules themselves must refuse
    RC_LOG() << "spec: " << spec.ToString() << "\nsave: " << saved_status.ToString() << "\n";
    if (!saved_status.ok()) {
      RC_TAG("refused at save");
      return;
    }
    CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());
    under_test->NewProcess();
    std::vector<TrainingState> resumed;
    const Status got = ResumeRun(under_test->target(), run, ResumeOptions(), &resumed);
    RC_LOG() << "resume: " << got.ToString() << "\n";
    if (got.ok()) RC_FAIL(std::string(CaseName(c)) + " was accepted at save and at resume");
    RC_TAG("refused at resume");
    return;
  }

  CKPTSPEC_RC_ASSERT_OK(saved_status);
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());
  under_test->NewProcess();
  std::vector<TrainingState> resumed;
  const Status got = ResumeRun(under_test->target(), run, ResumeOptions(), &resumed);
  RC_CLASSIFY(!spec.ok(), "spec refuses (overrides regrouped)");
  if (!spec.ok()) {
    RC_LOG() << "spec refuses: " << spec.ToString() << "\ntarget: " << got.ToString() << "\n";
    if (got.ok()) RC_FAIL("the target accepted a resume the spec refuses: " + spec.ToString());
    return;
  }
  if (!got.ok()) RC_FAIL("the target refused a resume the spec accepts: " + got.ToString());
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, expected),
                          "resumed state differs from the spec's expected resume");
  // Order never matters: the same as resuming the groups saved in their natural order.
  std::vector<TrainingState> from_natural;
  CKPTSPEC_RC_ASSERT_OK(ExpectedResume(saved_run, natural, run, LoadFlags(), &from_natural));
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, from_natural),
                          "resume from permuted groups differs from the resume from natural order");
}

}  // namespace ckptspec
