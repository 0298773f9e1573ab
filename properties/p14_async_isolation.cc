// P14, async isolation: an async save (completed under the test's control: deferred_async)
// holds the state at scheduling time: the caller's dicts are overwritten and training goes on
// before the save completes, and the checkpoint still resumes to the spec's state at the
// scheduled iteration. Before completion the tracker still names the previous checkpoint (a
// fresh process on a copy of the storage resumes it). A write failure injected into the
// completion (one failing storage operation, or every write failing) surfaces at the next
// Finalize / Save / Load call, which then must not report success — and a call that reports
// success means the checkpoint is there (an async save completed by a later Save is loaded by its
// iteration too, not only the tracker's); after a failure the previous checkpoint still loads.
// Catches: B19 (async error swallowed), B09/B15-like aliasing of the caller's buffers, a tracker
// written at scheduling time.
#include <optional>

#include "generators/run_gen.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/storage_util.h"

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

// Overwrites every byte the caller handed to the save.
void Scribble(std::vector<ShardedStateDict>* dicts) {
  for (ShardedStateDict& d : *dicts) {
    for (ShardedTensor& t : d.tensors) {
      for (uint8_t& byte : t.data) byte ^= 0xA5;
    }
    for (ShardedObject& o : d.objects) o.data = "scribbled after scheduling:" + o.data;
    d.common["p14_scribbled"] = true;
  }
}

// Resumes on a fresh target holding a copy of `from`'s storage, from the tracker's iteration or
// from `iteration`; the resumed states.
std::vector<TrainingState> ResumeCopy(const TargetFactory& factory, TargetUnderTest& from,
                                      const RunSpec& run,
                                      std::optional<int64_t> iteration = std::nullopt) {
  StorageTree tree;
  CKPTSPEC_RC_ASSERT_OK(ReadTree(from.mem_env(), from.root(), &tree));
  auto copy = factory.make(TargetOptions());
  CKPTSPEC_RC_ASSERT_OK(WriteTree(copy->mem_env(), copy->root(), tree));
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
  const RunSpec run = *gen::RunUpTo(8);
  const int64_t a = *rc::gen::inRange<int64_t>(0, 3);
  const int64_t b = a + *rc::gen::inRange<int64_t>(1, 3);
  const int64_t m = *rc::gen::inRange<int64_t>(1, 3);  // training after scheduling
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
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << a << ", save (sync), train to "
           << b << ", save (async), scribble over the dicts handed to it, train " << m << " more; "
           << SaveFaultName(fault)
           << (k >= 0 ? " (operation " + std::to_string(k) + " of the completion's " +
                            std::to_string(completion_ops) + ")"
                      : std::string())
           << "; next call: " << NextCallName(next) << "\n";
  RC_TAG(SaveFaultName(fault));
  RC_TAG(std::string("completed by ") + NextCallName(next));

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  MemEnv* env = under_test->mem_env();
  CKPTSPEC_RC_ASSERT_OK(SaveRun(target, run, at_a, a, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());

  std::vector<ShardedStateDict> dicts;
  CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(run.layout, at_b, run.sharding, &dicts));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Save(b, dicts, async));
  Scribble(&dicts);
  dicts.clear();
  std::vector<TrainingState> later = at_b;
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&later, m));

  // Not complete yet: a fresh process sees the previous checkpoint only.
  {
    const std::vector<TrainingState> before = ResumeCopy(factory, *under_test, run);
    RC_LOG() << "  before completion a fresh process resumes iteration " << before.front().iteration
             << "\n";
    RC_ASSERT(before.front().iteration == a);
    AssertSpecState(run, before, "resume before the async save completed");
  }

  env->ResetOpCount();
  if (fault == SaveFault::kFailOneOperation) env->FailOp(k);
  if (fault == SaveFault::kFailEveryWrite) env->FailWritesTo(under_test->root());
  Status status;
  std::vector<TrainingState> loaded;
  const int64_t c = later.front().iteration;
  switch (next) {
    case NextCall::kFinalize:
      status = target.engine().Finalize();
      break;
    case NextCall::kSave:
      status = SaveRun(target, run, later, c, SaveOptions());
      break;
    case NextCall::kLoad:
      status = ResumeRun(target, run, ResumeOptions(), &loaded);
      break;
  }
  const std::vector<std::string> log = env->op_log();
  env->ClearFaults();
  RC_LOG() << "  " << NextCallName(next) << " returned: " << status.ToString() << " after "
           << log.size() << " operations\n";
  RC_CLASSIFY(!status.ok(), "the failure surfaced");
  if (fault == SaveFault::kNone) CKPTSPEC_RC_ASSERT_OK(status);

  if (status.ok()) {
    // Success means the async save is complete (and a Save's own checkpoint too).
    if (next == NextCall::kLoad) {
      RC_ASSERT(loaded.front().iteration == b);
      AssertSpecState(run, loaded, "the Load that completed the async save");
    }
    const std::vector<TrainingState> resumed = ResumeCopy(factory, *under_test, run);
    RC_LOG() << "  a fresh process resumes iteration " << resumed.front().iteration << "\n";
    RC_ASSERT(resumed.front().iteration == (next == NextCall::kSave ? c : b));
    AssertSpecState(run, resumed, "resume after the completed async save");
    if (next == NextCall::kSave) {
      // The async save that the later Save completed holds iteration b's state too: loaded by
      // its iteration, not through the tracker (which names c).
      const std::vector<TrainingState> explicit_b = ResumeCopy(factory, *under_test, run, b);
      RC_ASSERT(explicit_b.front().iteration == b);
      AssertSpecState(run, explicit_b, "explicit load of the async save a later Save completed");
    }
  } else {
    // Reported; the previous checkpoint (or b's, if it committed before the failing operation)
    // still loads, in this process and in a fresh one; a failed Save never saved its own data.
    std::vector<TrainingState> resumed;
    CKPTSPEC_RC_ASSERT_OK(ResumeRun(target, run, ResumeOptions(), &resumed));
    RC_LOG() << "  after the failure the same process resumes iteration "
             << resumed.front().iteration << "\n";
    RC_ASSERT(resumed.front().iteration == a || resumed.front().iteration == b);
    AssertSpecState(run, resumed, "resume after the failed async save");
    const std::vector<TrainingState> fresh = ResumeCopy(factory, *under_test, run);
    RC_ASSERT(fresh.front().iteration == resumed.front().iteration);
    AssertSpecState(run, fresh, "fresh resume after the failed async save");
  }
}

}  // namespace ckptspec
