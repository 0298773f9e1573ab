// P14 with several async saves in flight (docs/SEMANTICS.md §3, "Several async saves in flight"):
// a run saves at iteration a (sync), then schedules 2 or 3 async saves from the training loop's
// own dicts (SaveInput shared with the engine, every tensor on the device or every one on the
// host), training in between and writing each step's state into those dicts in place; retention
// keeps keep_last > 0 checkpoints and the bound holds every save. Before any completes, a fresh
// process resumes a. The saves complete through Polls (one each) or Finalizes, with no fault, one
// failing storage operation, or every write failing: no call reports success for a save that
// failed, every failure surfaces at a call of its own (every write failing: one error per save),
// and a fresh process then resumes a checkpoint no earlier than the last save that reported
// success, while every checkpoint that must survive loads by its iteration with the state of its
// own scheduling, never a later step's.
// Catches: staging that aliases the loop's buffers while several saves are in flight (B28), an
// error of one save hidden by a later save's success (B19), retention run for a save still in
// flight (B30).
#include <memory>

#include "generators/run_gen.h"
#include "properties/in_flight_forms.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/saves_in_flight.h"
#include "harness/storage_util.h"

namespace ckptspec {

namespace {

enum class InFlightFault { kNone, kFailOneOperation, kFailEveryWrite };

const char* InFlightFaultName(InFlightFault f) {
  switch (f) {
    case InFlightFault::kNone:
      return "no fault";
    case InFlightFault::kFailOneOperation:
      return "one failing operation";
    case InFlightFault::kFailEveryWrite:
      return "every write failing";
  }
  return "?";
}

void showValue(InFlightFault f, std::ostream& os) { os << InFlightFaultName(f); }

// A fresh target of `factory` on a copy of `from`'s storage: a new process after a restart.
std::unique_ptr<TargetUnderTest> Restarted(const TargetFactory& factory,
                                           const TargetOptions& options, TargetUnderTest& from) {
  std::unique_ptr<TargetUnderTest> copy;
  CKPTSPEC_RC_ASSERT_OK(RestartOnCopy(factory, options, from, &copy));
  return copy;
}

// One case: what it drew.
struct InFlightCase {
  RunSpec run;
  int64_t a = 0;
  InFlightSchedule schedule;
  Placement placement = Placement::kDevice;
  InFlightFault fault = InFlightFault::kNone;
  bool drain_by_poll = true;
  TargetOptions options;
};

// Saves a, then schedules the saves from the loop's live dicts with training in between, on
// `under_test`; `arm` runs before the first call that may complete a save. Then drains them (Polls
// until none is left, or Finalizes until one succeeds, at most one call per save and one more).
// *iterations gets the saves' iterations.
void RunCase(const InFlightCase& c, TargetUnderTest& under_test, const std::function<void()>& arm,
             const std::function<void()>& before_completion, InFlightDriver* driver,
             std::vector<int64_t>* iterations) {
  Target& target = under_test.target();
  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(c.run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, c.a));
  CKPTSPEC_RC_ASSERT_OK(SaveRun(target, c.run, states, c.a, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());
  auto live = std::make_shared<std::vector<ShardedStateDict>>();
  std::vector<std::vector<Placement>> placement;
  SaveOptions async;
  async.async = true;
  bool armed = false;
  const auto arm_once = [&] {
    if (!armed) arm();
    armed = true;
  };
  for (size_t j = 0; j < c.schedule.saves(); ++j) {
    CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, c.schedule.steps[j]));
    std::vector<ShardedStateDict> fresh;
    CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(c.run.layout, states, c.run.sharding,
                                                          j == 0 ? &*live : &fresh));
    if (j == 0) {
      placement = EveryTensorOn(*live, c.placement);
    } else {
      WriteStateInPlace(fresh, &*live);
    }
    const int64_t it = states.front().iteration;
    // The driver records every call's outcome: the checks come after the calls.
    const Status saved =
        driver->Save([&] { return target.engine().Save(it, SaveInput(live, placement), async); });
    if (saved.ok()) iterations->push_back(it);
    if (j == 0) before_completion();
    if (!c.schedule.poll_after[j]) continue;
    arm_once();
    driver->Poll().IgnoreError();  // recorded by the driver
  }
  // One more step into the live dicts: the last save must not see it either.
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, 1));
  std::vector<ShardedStateDict> fresh;
  CKPTSPEC_RC_ASSERT_OK(
      target.framework().ToStateDicts(c.run.layout, states, c.run.sharding, &fresh));
  WriteStateInPlace(fresh, &*live);
  arm_once();
  for (size_t call = 0; call <= c.schedule.saves(); ++call) {
    if (c.drain_by_poll) {
      driver->Poll().IgnoreError();  // recorded by the driver
      if (driver->scheduled() > 0 &&
          driver->outcomes().back() != InFlightDriver::Outcome::kInFlight) {
        break;
      }
    } else if (driver->Finalize().ok()) {
      break;
    }
  }
}

}  // namespace

void CheckIsolationWithSavesInFlight(const TargetFactory& factory) {
  InFlightCase c;
  c.run = *gen::RunUpTo(8);
  c.a = *rc::gen::inRange<int64_t>(0, 3);
  c.schedule = DrawInFlightSchedule(/*bound_covers_saves=*/true);
  c.placement = *rc::gen::arbitrary<bool>() ? Placement::kHost : Placement::kDevice;
  c.fault = *rc::gen::element(InFlightFault::kNone, InFlightFault::kFailOneOperation,
                              InFlightFault::kFailEveryWrite);
  // One failing operation is pinned to its save by draining one save per Poll.
  c.drain_by_poll = c.fault == InFlightFault::kFailOneOperation || *rc::gen::arbitrary<bool>();
  c.options.deferred_async = true;
  c.options.keep_last = c.schedule.keep_last;
  c.options.max_async_in_flight = c.schedule.bound;

  // The failing operation is one of the completions', counted on a separate target.
  int64_t k = -1, completion_ops = 0;
  if (c.fault == InFlightFault::kFailOneOperation) {
    auto dry = factory.make(c.options);
    InFlightDriver driver(&dry->target().engine(), c.schedule.bound);
    std::vector<int64_t> iterations;
    RunCase(
        c, *dry, [&] { dry->mem_env()->ResetOpCount(); }, [] {}, &driver, &iterations);
    completion_ops = dry->mem_env()->op_count();
    RC_PRE(completion_ops > 0);
    k = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(0, completion_ops));
  }

  std::vector<int64_t> planned;
  for (int64_t steps : c.schedule.steps)
    planned.push_back((planned.empty() ? c.a : planned.back()) + steps);
  RC_LOG() << "scenario:\n  " << DescribeRun(c.run) << "\n  train " << c.a << ", save (sync); then "
           << DescribeInFlightSchedule(c.schedule, planned)
           << ", from the loop's own dicts (every tensor on the "
           << (c.placement == Placement::kHost ? "host" : "device")
           << "), training between them and once more after, writing each step into those dicts "
              "in place; "
           << InFlightFaultName(c.fault)
           << (k >= 0 ? " (operation " + std::to_string(k) + " of the completions' " +
                            std::to_string(completion_ops) + ")"
                      : std::string())
           << "; completed by " << (c.drain_by_poll ? "Polls" : "Finalizes") << "\n";

  auto under_test = factory.make(c.options);
  MemEnv* env = under_test->mem_env();
  InFlightDriver driver(&under_test->target().engine(), c.schedule.bound);
  std::vector<int64_t> iterations;
  const auto arm = [&] {
    env->ResetOpCount();
    if (c.fault == InFlightFault::kFailOneOperation) env->FailOp(k);
    if (c.fault == InFlightFault::kFailEveryWrite) env->FailWritesTo(under_test->root());
  };
  int64_t before = -1;
  const auto before_completion = [&] {
    auto copy = Restarted(factory, c.options, *under_test);
    std::vector<TrainingState> resumed;
    CKPTSPEC_RC_ASSERT_OK(ResumeRun(copy->target(), c.run, ResumeOptions(), &resumed));
    before = resumed.front().iteration;
  };
  RunCase(c, *under_test, arm, before_completion, &driver, &iterations);
  env->ClearFaults();
  RC_LOG() << "  the calls:\n" << driver.trace();
  RC_TAG("several async saves in flight");
  RC_TAG(InFlightFaultName(c.fault));
  RC_CLASSIFY(driver.errors() > 0, "several in flight, a failure surfaced");

  RC_LOG() << "  before any save completed a fresh process resumes iteration " << before << "\n";
  RC_ASSERT(before == c.a);
  std::vector<bool> failed{false};  // a, then each save
  for (InFlightDriver::Outcome outcome : driver.outcomes()) {
    if (outcome == InFlightDriver::Outcome::kInFlight) {
      RC_FAIL("a save is still in flight after its completing calls");
    }
    failed.push_back(outcome != InFlightDriver::Outcome::kSucceeded);
  }
  const int saves = static_cast<int>(driver.scheduled());
  if (c.fault == InFlightFault::kNone && driver.errors() > 0) {
    RC_FAIL("a call failed with no fault injected");
  }
  if (c.fault == InFlightFault::kFailOneOperation && driver.errors() > 1) {
    RC_FAIL("one failing storage operation, but " + std::to_string(driver.errors()) +
            " calls failed");
  }
  if (c.fault == InFlightFault::kFailEveryWrite && driver.errors() != saves) {
    RC_FAIL("every write failed, but " + std::to_string(driver.errors()) + " of the " +
            std::to_string(saves) + " saves' failures surfaced (each must, at a call of its own)");
  }

  std::vector<int64_t> all{c.a};
  all.insert(all.end(), iterations.begin(), iterations.end());
  auto restarted = Restarted(factory, c.options, *under_test);
  size_t t = 0;
  const std::string violation = JudgeSurvivors(restarted->target(), c.run, all, failed,
                                               driver.reported(), c.schedule.keep_last, &t);
  if (t < all.size()) RC_LOG() << "  a fresh process resumes iteration " << all[t] << "\n";
  if (!violation.empty()) RC_FAIL(violation);
  if (c.fault == InFlightFault::kFailEveryWrite) RC_ASSERT(t == 0);
}

}  // namespace ckptspec
