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

// One drawn case: the run, the iterations saved (a sync, then b async), the steps trained after
// scheduling, from which step the loop polls, where tensors live, the fault, the call after.
struct IsolationCase {
  RunSpec run;
  int64_t a = 0, b = 0, m = 0, poll_from = 0;
  Placing placing = Placing::kDevice;
  SaveFault fault = SaveFault::kNone;
  NextCall next = NextCall::kFinalize;
  // kFailOneOperation: the failing operation k of the completion's completion_ops.
  int64_t k = -1, completion_ops = 0;
};

// Draws a case's run, iterations, steps, polling, placing, fault and next call (not k).
IsolationCase DrawIsolationCase() {
  IsolationCase s;
  s.run = *gen::RunUpTo(8);
  s.a = *rc::gen::inRange<int64_t>(0, 3);
  s.b = s.a + *rc::gen::inRange<int64_t>(1, 3);
  s.m = *rc::gen::inRange<int64_t>(1, 4);  // training steps after scheduling
  // The loop polls after every step from this one on; m + 1: it never polls.
  s.poll_from = *rc::gen::elementOf(std::vector<int64_t>{1, s.m, s.m + 1, s.m + 1, s.m + 1});
  s.placing =
      *rc::gen::elementOf(std::vector<Placing>{Placing::kDevice, Placing::kHost, Placing::kMixed});
  s.fault = *rc::gen::elementOf(std::vector<SaveFault>{
      SaveFault::kNone, SaveFault::kFailOneOperation, SaveFault::kFailEveryWrite});
  s.next = *rc::gen::elementOf(
      std::vector<NextCall>{NextCall::kFinalize, NextCall::kSave, NextCall::kLoad});
  return s;
}

// The options of an async save.
SaveOptions AsyncSaveOptions() {
  SaveOptions async;
  async.async = true;
  return async;
}

// Counts the completion's operations on a separate target and draws the failing one (s->k).
void DrawFailingOperation(const TargetFactory& factory, const std::vector<TrainingState>& at_a,
                          const std::vector<TrainingState>& at_b, IsolationCase* s) {
  auto dry = factory.make(TargetOptions());
  CKPTSPEC_RC_ASSERT_OK(SaveRun(dry->target(), s->run, at_a, s->a, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(SaveRun(dry->target(), s->run, at_b, s->b, AsyncSaveOptions()));
  dry->mem_env()->ResetOpCount();
  CKPTSPEC_RC_ASSERT_OK(dry->target().engine().Finalize());
  s->completion_ops = dry->mem_env()->op_count();
  RC_PRE(s->completion_ops > 0);
  s->k = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(0, s->completion_ops));
}

// Where each tensor of the save input lives, and how many of them are on the host.
struct TensorPlacing {
  std::vector<std::vector<Placement>> placement;  // per rank, per tensor
  size_t host_tensors = 0, tensors = 0;
};

// Places the tensors of `dicts` as `placing` says (kMixed: a drawn set of each rank's on the host).
TensorPlacing PlaceTensors(const std::vector<ShardedStateDict>& dicts, Placing placing) {
  TensorPlacing out;
  for (const ShardedStateDict& d : dicts) {
    std::vector<bool> on_host(d.tensors.size(), placing == Placing::kHost);
    if (placing == Placing::kMixed && !d.tensors.empty()) {
      // The host tensors as a list of indices rather than a flag per tensor: shrinking removes a
      // list's elements in chunks, the whole list first, where a flag per tensor costs a run of
      // the scenario for every flag that is set.
      const auto host =
          *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, d.tensors.size()));
      for (size_t i : host) on_host[i] = true;
    }
    out.placement.emplace_back();
    for (bool host : on_host) {
      out.placement.back().push_back(host ? Placement::kHost : Placement::kDevice);
      out.host_tensors += host ? 1 : 0;
    }
    out.tensors += d.tensors.size();
  }
  return out;
}

// Logs the scenario and tags and classifies the case.
void DescribeIsolationCase(const IsolationCase& s, const TensorPlacing& placed) {
  RC_LOG() << "scenario:\n  " << DescribeRun(s.run) << "\n  train " << s.a
           << ", save (sync), train to " << s.b << ", save (async) from the loop's own dicts ("
           << placed.host_tensors << " of " << placed.tensors << " tensors on the host), train "
           << s.m << " more writing each step into those dicts in place"
           << (s.poll_from <= s.m ? ", polling from step " + std::to_string(s.poll_from)
                                  : std::string())
           << "; " << SaveFaultName(s.fault)
           << (s.k >= 0 ? " (operation " + std::to_string(s.k) + " of the completion's " +
                              std::to_string(s.completion_ops) + ")"
                        : std::string())
           << "; next call: " << NextCallName(s.next) << "\n";
  RC_TAG(SaveFaultName(s.fault));
  RC_CLASSIFY(placed.host_tensors > 0, "host tensors in the save input");
  RC_CLASSIFY(placed.host_tensors > 0 && placed.host_tensors < placed.tensors,
              "device and host tensors in one save");
}

// Arms the injected fault (once) before the first engine call that may complete the save.
class FaultArm {
 public:
  FaultArm(const IsolationCase& s, TargetUnderTest& under_test) : s_(s), under_test_(under_test) {}
  void Arm() {
    if (armed_) return;
    armed_ = true;
    MemEnv* env = under_test_.mem_env();
    env->ResetOpCount();
    if (s_.fault == SaveFault::kFailOneOperation) env->FailOp(s_.k);
    if (s_.fault == SaveFault::kFailEveryWrite) env->FailWritesTo(under_test_.root());
  }

 private:
  const IsolationCase& s_;
  TargetUnderTest& under_test_;
  bool armed_ = false;
};

// The call that completed the async save (when one did) and what it returned.
struct Completion {
  std::optional<Status> status;
  const char* completed_by = nullptr;
  int64_t completed_at_step = 0;
};

// Trains m steps writing each into `live` in place, polling from poll_from; who completed the save.
Completion TrainWhileSaving(const TargetFactory& factory, const IsolationCase& s,
                            TargetUnderTest& under_test, size_t tensors,
                            std::vector<ShardedStateDict>* live, FaultArm* arm,
                            std::vector<TrainingState>* later) {
  Target& target = under_test.target();
  Completion done;
  for (int64_t step = 1; step <= s.m; ++step) {
    CKPTSPEC_RC_ASSERT_OK(TrainRun(later, 1));
    std::vector<ShardedStateDict> fresh;
    CKPTSPEC_RC_ASSERT_OK(
        target.framework().ToStateDicts(s.run.layout, *later, s.run.sharding, &fresh));
    RC_ASSERT(WriteStateInPlace(fresh, live) == tensors);  // the structure stays
    if (step == 1) {
      // Not complete yet: a fresh process sees the previous checkpoint only.
      const std::vector<TrainingState> before = ResumeCopy(factory, under_test, s.run);
      RC_LOG() << "  before completion a fresh process resumes iteration "
               << before.front().iteration << "\n";
      RC_ASSERT(before.front().iteration == s.a);
      AssertSpecState(s.run, before, "resume before the async save completed");
    }
    if (done.status || step < s.poll_from) continue;
    arm->Arm();
    bool complete = false;
    const Status polled = target.engine().Poll(&complete);
    if (!polled.ok() || complete) {
      done.status = polled;
      done.completed_by = "Poll";
      done.completed_at_step = step;
    }
  }
  return done;
}

// Makes the case's next call (Finalize, a Save of `later` as iteration c, or a Load into *loaded).
Status MakeNextCall(const IsolationCase& s, Target& target, const std::vector<TrainingState>& later,
                    int64_t c, std::vector<TrainingState>* loaded) {
  switch (s.next) {
    case NextCall::kFinalize:
      return target.engine().Finalize();
    case NextCall::kSave:
      return SaveRun(target, s.run, later, c, SaveOptions());
    case NextCall::kLoad:
      return ResumeRun(target, s.run, ResumeOptions(), loaded);
  }
  return Status();
}

// After a reported success: the async save (and a Save's own checkpoint) is there and loads.
void CheckCompletedSave(const TargetFactory& factory, TargetUnderTest& under_test,
                        const IsolationCase& s, int64_t c,
                        const std::vector<TrainingState>& loaded) {
  // Success means the async save is complete (and a Save's own checkpoint too).
  if (s.next == NextCall::kLoad) {
    RC_ASSERT(loaded.front().iteration == s.b);
    AssertSpecState(s.run, loaded, "the Load after the async save completed");
  }
  const std::vector<TrainingState> resumed = ResumeCopy(factory, under_test, s.run);
  RC_LOG() << "  a fresh process resumes iteration " << resumed.front().iteration << "\n";
  RC_ASSERT(resumed.front().iteration == (s.next == NextCall::kSave ? c : s.b));
  AssertSpecState(s.run, resumed, "resume after the completed async save");
  if (s.next == NextCall::kSave) {
    // The async save holds iteration b's state: loaded by its iteration, not through the
    // tracker (which names c).
    const std::vector<TrainingState> explicit_b = ResumeCopy(factory, under_test, s.run, s.b);
    RC_ASSERT(explicit_b.front().iteration == s.b);
    AssertSpecState(s.run, explicit_b, "explicit load of the async save before a later Save");
  }
}

// After a reported failure: the previous checkpoint (or b's, or c's) loads here and in a fresh one.
void CheckFailedSave(const TargetFactory& factory, TargetUnderTest& under_test,
                     const IsolationCase& s, int64_t c, const char* completed_by) {
  // Reported; the previous checkpoint (or b's, if it committed before the failing operation)
  // still loads, in this process and in a fresh one; a failed Save never saved its own data,
  // and a Save after the failed save's Poll saved c.
  const bool saved_c = completed_by == std::string("Poll") && s.next == NextCall::kSave;
  std::vector<TrainingState> resumed;
  CKPTSPEC_RC_ASSERT_OK(ResumeRun(under_test.target(), s.run, ResumeOptions(), &resumed));
  RC_LOG() << "  after the failure the same process resumes iteration " << resumed.front().iteration
           << "\n";
  if (saved_c) {
    RC_ASSERT(resumed.front().iteration == c);
  } else {
    RC_ASSERT(resumed.front().iteration == s.a || resumed.front().iteration == s.b);
  }
  AssertSpecState(s.run, resumed, "resume after the failed async save");
  const std::vector<TrainingState> fresh = ResumeCopy(factory, under_test, s.run);
  RC_ASSERT(fresh.front().iteration == resumed.front().iteration);
  AssertSpecState(s.run, fresh, "fresh resume after the failed async save");
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
  IsolationCase s = DrawIsolationCase();
  std::vector<TrainingState> at_a, at_b;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(s.run, &at_a));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&at_a, s.a));
  at_b = at_a;
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&at_b, s.b - s.a));
  // The failing operation is one of the completion's, counted on a separate target.
  if (s.fault == SaveFault::kFailOneOperation) DrawFailingOperation(factory, at_a, at_b, &s);

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  MemEnv* env = under_test->mem_env();
  CKPTSPEC_RC_ASSERT_OK(SaveRun(target, s.run, at_a, s.a, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());

  // The loop's live dicts, shared with the engine, and where each tensor lives.
  auto live = std::make_shared<std::vector<ShardedStateDict>>();
  CKPTSPEC_RC_ASSERT_OK(
      target.framework().ToStateDicts(s.run.layout, at_b, s.run.sharding, &*live));
  const TensorPlacing placed = PlaceTensors(*live, s.placing);
  DescribeIsolationCase(s, placed);
  CKPTSPEC_RC_ASSERT_OK(
      target.engine().Save(s.b, SaveInput(live, placed.placement), AsyncSaveOptions()));

  FaultArm arm(s, *under_test);
  std::vector<TrainingState> later = at_b;
  Completion done =
      TrainWhileSaving(factory, s, *under_test, placed.tensors, live.get(), &arm, &later);
  if (done.status) env->ClearFaults();

  std::vector<TrainingState> loaded;
  const int64_t c = later.front().iteration;
  if (!done.status) arm.Arm();
  const Status next_status = MakeNextCall(s, target, later, c, &loaded);
  env->ClearFaults();
  if (done.status) {
    RC_LOG() << "  Poll after step " << done.completed_at_step
             << " completed the async save: " << done.status->ToString() << "\n";
    // Nothing was pending any more: the next call is an ordinary one.
    CKPTSPEC_RC_ASSERT_OK(next_status);
  } else {
    done.status = next_status;
    done.completed_by = NextCallName(s.next);
  }
  RC_LOG() << "  " << NextCallName(s.next) << " returned: " << next_status.ToString() << "\n";
  RC_TAG(std::string("completed by ") + done.completed_by);
  RC_CLASSIFY(!done.status->ok(), "the failure surfaced");
  if (s.fault == SaveFault::kNone) CKPTSPEC_RC_ASSERT_OK(*done.status);

  if (done.status->ok()) {
    CheckCompletedSave(factory, *under_test, s, c, loaded);
  } else {
    CheckFailedSave(factory, *under_test, s, c, done.completed_by);
  }
}

}  // namespace ckptspec
