// P14, async isolation: an async save (completed under the test's control: deferred_async)
// holds the state at scheduling time. The save input is the training loop's own dicts (SaveInput
// shared with the engine), with each tensor placed on the device or the host; after scheduling the
// loop trains on, writes every step's state into those same buffers in place, and from a drawn
// step on polls the engine after each step (Engine::Poll) as Megatron's and DCP's loops do; the
// checkpoint still resumes to the spec's state at the scheduled iteration. Before completion the
// tracker still names the previous checkpoint (a fresh process on a copy of the storage resumes
// it). A write failure injected into the completion (one failing storage operation, or every
// write failing) surfaces at the call that completes it (a Poll, or the next Finalize / Save /
// Load), which then must not report success -- and a call that reports success means the
// checkpoint is there (an async save completed by a later Save is loaded by its iteration too,
// not only the tracker's); after a failure the previous checkpoint still loads.
// Catches: B28 (host tensors aliased by the staging), B19 (async error swallowed), a tracker
// written at scheduling time.
// On a target whose storage is the real disk (TargetFactory::disk_faults) the disk form runs
// instead: storage faults injected into a sync or async save
// (properties/p14_storage_faults_on_disk.cc). On a target that holds several async saves at once,
// a quarter of the cases schedule several from the loop's dicts, under retention
// (properties/p14_isolation_saves_in_flight.cc).
#include <memory>
#include <optional>

#include "generators/run_gen.h"
#include "properties/disk_forms.h"
#include "properties/in_flight_forms.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "harness/storage_util.h"

namespace ckptspec {

namespace {

enum class SaveFault { kNone, kFailOneOperation, kFailEveryWrite };
enum class NextCall { kFinalize, kSave, kLoad };

const char* SaveFaultName(SaveFault f) {
  switch (f) {
    case SaveFault::kNone:
      return "no fault";
    case SaveFault::kFailOneOperation:
      return "one failing operation";
    case SaveFault::kFailEveryWrite:
      return "every write failing";
  }
  return "?";
}

const char* NextCallName(NextCall c) {
  switch (c) {
    case NextCall::kFinalize:
      return "Finalize";
    case NextCall::kSave:
      return "Save";
    case NextCall::kLoad:
      return "Load";
  }
  return "?";
}

// How RapidCheck prints the generated fault and next call in a counterexample.
void showValue(SaveFault f, std::ostream& os) { os << SaveFaultName(f); }
void showValue(NextCall c, std::ostream& os) { os << NextCallName(c); }

enum class Placing { kDevice, kHost, kMixed };

const char* PlacingName(Placing p) {
  switch (p) {
    case Placing::kDevice:
      return "every tensor on the device";
    case Placing::kHost:
      return "every tensor on the host";
    case Placing::kMixed:
      return "tensors on the device and the host";
  }
  return "?";
}

void showValue(Placing p, std::ostream& os) { os << PlacingName(p); }

// Resumes on a fresh target holding a copy of `from`'s storage, from the tracker's iteration or
// from `iteration`; the resumed states.
std::vector<TrainingState> ResumeCopy(const TargetFactory& factory, TargetUnderTest& from,
                                      const RunSpec& run,
                                      std::optional<int64_t> iteration = std::nullopt) {
  std::unique_ptr<TargetUnderTest> copy;
  CKPTSPEC_RC_ASSERT_OK(RestartOnCopy(factory, TargetOptions(), from, &copy));
  ResumeOptions options;
  options.iteration = iteration;
  std::vector<TrainingState> resumed;
  CKPTSPEC_RC_ASSERT_OK(ResumeRun(copy->target(), run, options, &resumed));
  return resumed;
}

void AssertSpecState(const RunSpec& run, const std::vector<TrainingState>& got, const char* what) {
  std::vector<TrainingState> expected;
  CKPTSPEC_RC_ASSERT_OK(ExpectedAtIteration(run, got.front().iteration, &expected));
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(got, expected), what);
}

}  // namespace

void CheckAsyncIsolation(const TargetFactory& factory) {
  if (!factory.fault_injection) {
    CheckStorageFaultsOnDisk(factory);
    return;
  }
  // A quarter of the cases of a target that holds several async saves at once schedule several
  // instead (properties/p14_isolation_saves_in_flight.cc).
  if (factory.capabilities.overlapping_async &&
      *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0, 4)) == 0) {
    CheckIsolationWithSavesInFlight(factory);
    return;
  }
  const RunSpec run = *gen::RunUpTo(8);
  const int64_t a = *rc::gen::inRange<int64_t>(0, 3);
  const int64_t b = a + *rc::gen::inRange<int64_t>(1, 3);
  const int64_t m = *rc::gen::inRange<int64_t>(1, 4);  // training steps after scheduling
  // The loop polls after every step from this one on; m + 1: it never polls.
  const int64_t poll_from = *rc::gen::elementOf(std::vector<int64_t>{1, m, m + 1, m + 1, m + 1});
  const Placing placing =
      *rc::gen::elementOf(std::vector<Placing>{Placing::kDevice, Placing::kHost, Placing::kMixed});
  const SaveFault fault = *rc::gen::elementOf(std::vector<SaveFault>{
      SaveFault::kNone, SaveFault::kFailOneOperation, SaveFault::kFailEveryWrite});
  const NextCall next = *rc::gen::elementOf(
      std::vector<NextCall>{NextCall::kFinalize, NextCall::kSave, NextCall::kLoad});

  std::vector<TrainingState> at_a, at_b;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &at_a));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&at_a, a));
  at_b = at_a;
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&at_b, b - a));
  SaveOptions async;
  async.async = true;

  // The failing operation is one of the completion's, counted on a separate target.
  int64_t k = -1, completion_ops = 0;
  if (fault == SaveFault::kFailOneOperation) {
    auto dry = factory.make(TargetOptions());
    CKPTSPEC_RC_ASSERT_OK(SaveRun(dry->target(), run, at_a, a, SaveOptions()));
    CKPTSPEC_RC_ASSERT_OK(SaveRun(dry->target(), run, at_b, b, async));
    dry->mem_env()->ResetOpCount();
    CKPTSPEC_RC_ASSERT_OK(dry->target().engine().Finalize());
    completion_ops = dry->mem_env()->op_count();
    RC_PRE(completion_ops > 0);
    k = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(0, completion_ops));
  }

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  MemEnv* env = under_test->mem_env();
  CKPTSPEC_RC_ASSERT_OK(SaveRun(target, run, at_a, a, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());

  // The loop's live dicts, shared with the engine, and where each tensor lives.
  auto live = std::make_shared<std::vector<ShardedStateDict>>();
  CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(run.layout, at_b, run.sharding, &*live));
  std::vector<std::vector<Placement>> placement;
  size_t host_tensors = 0, tensors = 0;
  for (const ShardedStateDict& d : *live) {
    std::vector<bool> on_host(d.tensors.size(), placing == Placing::kHost);
    if (placing == Placing::kMixed && !d.tensors.empty()) {
      // The host tensors as a list of indices rather than a flag per tensor: shrinking removes a
      // list's elements in chunks, the whole list first, where a flag per tensor costs a run of
      // the scenario for every flag that is set.
      const auto host =
          *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, d.tensors.size()));
      for (size_t i : host) on_host[i] = true;
    }
    placement.emplace_back();
    for (bool host : on_host) {
      placement.back().push_back(host ? Placement::kHost : Placement::kDevice);
      host_tensors += host ? 1 : 0;
    }
    tensors += d.tensors.size();
  }
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << a << ", save (sync), train to "
           << b << ", save (async) from the loop's own dicts (" << host_tensors << " of " << tensors
           << " tensors on the host), train " << m
           << " more writing each step into those dicts in place"
           << (poll_from <= m ? ", polling from step " + std::to_string(poll_from) : std::string())
           << "; " << SaveFaultName(fault)
           << (k >= 0 ? " (operation " + std::to_string(k) + " of the completion's " +
                            std::to_string(completion_ops) + ")"
                      : std::string())
           << "; next call: " << NextCallName(next) << "\n";
  RC_TAG(SaveFaultName(fault));
  RC_CLASSIFY(host_tensors > 0, "host tensors in the save input");
  RC_CLASSIFY(host_tensors > 0 && host_tensors < tensors, "device and host tensors in one save");
  CKPTSPEC_RC_ASSERT_OK(target.engine().Save(b, SaveInput(live, placement), async));

  // Arms the injected fault (once) before the first engine call that may complete the save.
  bool armed = false;
  const auto arm = [&] {
    if (armed) return;
    armed = true;
    env->ResetOpCount();
    if (fault == SaveFault::kFailOneOperation) env->FailOp(k);
    if (fault == SaveFault::kFailEveryWrite) env->FailWritesTo(under_test->root());
  };
  std::vector<TrainingState> later = at_b;
  std::optional<Status> status;  // of the call that completed the async save
  const char* completed_by = nullptr;
  int64_t completed_at_step = 0;
  for (int64_t step = 1; step <= m; ++step) {
    CKPTSPEC_RC_ASSERT_OK(TrainRun(&later, 1));
    std::vector<ShardedStateDict> fresh;
    CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(run.layout, later, run.sharding, &fresh));
    RC_ASSERT(WriteStateInPlace(fresh, &*live) == tensors);  // the structure stays
    if (step == 1) {
      // Not complete yet: a fresh process sees the previous checkpoint only.
      const std::vector<TrainingState> before = ResumeCopy(factory, *under_test, run);
      RC_LOG() << "  before completion a fresh process resumes iteration "
               << before.front().iteration << "\n";
      RC_ASSERT(before.front().iteration == a);
      AssertSpecState(run, before, "resume before the async save completed");
    }
    if (status || step < poll_from) continue;
    arm();
    bool complete = false;
    const Status polled = target.engine().Poll(&complete);
    if (!polled.ok() || complete) {
      status = polled;
      completed_by = "Poll";
      completed_at_step = step;
    }
  }
  if (status) env->ClearFaults();

  std::vector<TrainingState> loaded;
  const int64_t c = later.front().iteration;
  if (!status) arm();
  Status next_status;
  switch (next) {
    case NextCall::kFinalize:
      next_status = target.engine().Finalize();
      break;
    case NextCall::kSave:
      next_status = SaveRun(target, run, later, c, SaveOptions());
      break;
    case NextCall::kLoad:
      next_status = ResumeRun(target, run, ResumeOptions(), &loaded);
      break;
  }
  env->ClearFaults();
  if (status) {
    RC_LOG() << "  Poll after step " << completed_at_step
             << " completed the async save: " << status->ToString() << "\n";
    // Nothing was pending any more: the next call is an ordinary one.
    CKPTSPEC_RC_ASSERT_OK(next_status);
  } else {
    status = next_status;
    completed_by = NextCallName(next);
  }
  RC_LOG() << "  " << NextCallName(next) << " returned: " << next_status.ToString() << "\n";
  RC_TAG(std::string("completed by ") + completed_by);
  RC_CLASSIFY(!status->ok(), "the failure surfaced");
  if (fault == SaveFault::kNone) CKPTSPEC_RC_ASSERT_OK(*status);

  if (status->ok()) {
    // Success means the async save is complete (and a Save's own checkpoint too).
    if (next == NextCall::kLoad) {
      RC_ASSERT(loaded.front().iteration == b);
      AssertSpecState(run, loaded, "the Load after the async save completed");
    }
    const std::vector<TrainingState> resumed = ResumeCopy(factory, *under_test, run);
    RC_LOG() << "  a fresh process resumes iteration " << resumed.front().iteration << "\n";
    RC_ASSERT(resumed.front().iteration == (next == NextCall::kSave ? c : b));
    AssertSpecState(run, resumed, "resume after the completed async save");
    if (next == NextCall::kSave) {
      // The async save holds iteration b's state: loaded by its iteration, not through the
      // tracker (which names c).
      const std::vector<TrainingState> explicit_b = ResumeCopy(factory, *under_test, run, b);
      RC_ASSERT(explicit_b.front().iteration == b);
      AssertSpecState(run, explicit_b, "explicit load of the async save before a later Save");
    }
  } else {
    // Reported; the previous checkpoint (or b's, if it committed before the failing operation)
    // still loads, in this process and in a fresh one; a failed Save never saved its own data,
    // and a Save after the failed save's Poll saved c.
    const bool saved_c = completed_by == std::string("Poll") && next == NextCall::kSave;
    std::vector<TrainingState> resumed;
    CKPTSPEC_RC_ASSERT_OK(ResumeRun(target, run, ResumeOptions(), &resumed));
    RC_LOG() << "  after the failure the same process resumes iteration "
             << resumed.front().iteration << "\n";
    if (saved_c) {
      RC_ASSERT(resumed.front().iteration == c);
    } else {
      RC_ASSERT(resumed.front().iteration == a || resumed.front().iteration == b);
    }
    AssertSpecState(run, resumed, "resume after the failed async save");
    const std::vector<TrainingState> fresh = ResumeCopy(factory, *under_test, run);
    RC_ASSERT(fresh.front().iteration == resumed.front().iteration);
    AssertSpecState(run, fresh, "fresh resume after the failed async save");
  }
}

}  // namespace ckptspec
