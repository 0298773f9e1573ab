// The reference engine's steps (reference_engine.h): the order a save, an async save and a load
// call them in, and what a failing step leaves behind -- the contract a mutant that overrides one
// step relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::CheckContent;
using testing_util::DictsOf;
using testing_util::LoadInto;
using testing_util::MakeSharding;
using testing_util::TemplatesOf;

// "StageAsyncSave 3 async caller": a step and the save_context() it ran with.
std::string WithContext(const std::string& step, const SaveContext& context) {
  return step + " " + std::to_string(context.iteration) + (context.async ? " async" : " sync") +
         (context.side == SaveContext::Side::kCaller ? " caller" : " writer") +
         (context.options.assume_constant_structure ? " cached" : "");
}

// Records every step it runs (and the save_context() of every save step), then runs the
// reference's; `fail_at` makes that step fail instead.
class RecordingEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;
  std::vector<std::string> steps;
  std::vector<std::string> contexts;
  std::string fail_at;
  // The context outside any step.
  const SaveContext& context_now() const { return save_context(); }

 protected:
  Status ValidateSave(const std::vector<ShardedStateDict>& every_rank, bool global) override {
    CKPTSPEC_RETURN_IF_ERROR(Step(global ? "ValidateSave(global)" : "ValidateSave"));
    return ReferenceEngine::ValidateSave(every_rank, global);
  }
  Status PlanSave(const std::vector<ShardedStateDict>& every_rank, const SaveOptions& options,
                  const SavePlan* cached, uint64_t fingerprint, SavePlan* plan) override {
    CKPTSPEC_RETURN_IF_ERROR(Step(cached ? "PlanSave(cached)" : "PlanSave"));
    return ReferenceEngine::PlanSave(every_rank, options, cached, fingerprint, plan);
  }
  Status StageAsyncSave(const SaveInput& input, const SaveOptions& options,
                        std::vector<ShardedStateDict>* staged) override {
    CKPTSPEC_RETURN_IF_ERROR(Step("StageAsyncSave"));
    return ReferenceEngine::StageAsyncSave(input, options, staged);
  }
  Status GuardOverwrite(int64_t iteration) override {
    CKPTSPEC_RETURN_IF_ERROR(Step("GuardOverwrite"));
    return ReferenceEngine::GuardOverwrite(iteration);
  }
  Status BeginCheckpoint(int64_t iteration, std::string* staging) override {
    CKPTSPEC_RETURN_IF_ERROR(Step("BeginCheckpoint"));
    return ReferenceEngine::BeginCheckpoint(iteration, staging);
  }
  Status WriteShardFiles(const std::string& staging,
                         const std::vector<ShardedStateDict>& every_rank, const SavePlan& plan,
                         CheckpointMetadata* m) override {
    CKPTSPEC_RETURN_IF_ERROR(Step("WriteShardFiles"));
    return ReferenceEngine::WriteShardFiles(staging, every_rank, plan, m);
  }
  Status WriteIndex(const std::string& staging, const CheckpointMetadata& m) override {
    CKPTSPEC_RETURN_IF_ERROR(Step("WriteIndex"));
    return ReferenceEngine::WriteIndex(staging, m);
  }
  Status CommitCheckpoint(int64_t iteration, const std::string& staging) override {
    CKPTSPEC_RETURN_IF_ERROR(Step("CommitCheckpoint"));
    return ReferenceEngine::CommitCheckpoint(iteration, staging);
  }
  Status UpdateTracker(int64_t iteration) override {
    CKPTSPEC_RETURN_IF_ERROR(Step("UpdateTracker"));
    return ReferenceEngine::UpdateTracker(iteration);
  }
  Status ApplyRetention() override {
    CKPTSPEC_RETURN_IF_ERROR(Step("ApplyRetention"));
    return ReferenceEngine::ApplyRetention();
  }
  void AsyncSaveScheduled(int64_t iteration, const SaveOptions& options) override {
    Step("AsyncSaveScheduled").IgnoreError();  // a step that cannot fail
    ReferenceEngine::AsyncSaveScheduled(iteration, options);
  }
  Status ReportAsyncSave(int64_t iteration, Status status) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    steps.push_back("ReportAsyncSave");
    contexts.push_back(WithContext("ReportAsyncSave", save_context()));
    return ReferenceEngine::ReportAsyncSave(iteration, std::move(status));
  }
  Status OpenHostDestination(size_t rank, ShardedTensor* tensor,
                             std::unique_ptr<TensorDestination>* out) override {
    if (steps.empty() || steps.back() != "OpenHostDestination") {
      CKPTSPEC_RETURN_IF_ERROR(Step("OpenHostDestination"));
    }
    return ReferenceEngine::OpenHostDestination(rank, tensor, out);
  }

 private:
  std::mutex mutex_;
  Status Step(const std::string& name) {
    // The write of an async save may run on the background thread while the caller records
    // AsyncSaveScheduled.
    const std::lock_guard<std::mutex> lock(mutex_);
    steps.push_back(name);
    if (name != "OpenHostDestination") contexts.push_back(WithContext(name, save_context()));
    if (name.rfind(fail_at, 0) == 0 && !fail_at.empty()) {
      return Status::IOError("injected failure of " + name);
    }
    return Status::OK();
  }
};

struct Harness {
  explicit Harness(int keep_last = 0, AsyncExecution async = AsyncExecution::kDeferred) {
    EXPECT_TRUE(env.CreateDir("/ckpt").ok());
    ReferenceOptions options;
    options.env = &env;
    options.root = "/ckpt";
    options.keep_last = keep_last;
    options.async_execution = async;
    engine = std::make_unique<RecordingEngine>(std::move(options));
  }
  MemEnv env;
  std::unique_ptr<RecordingEngine> engine;
};

const std::vector<std::string> kWriteSteps = {
    "GuardOverwrite",   "BeginCheckpoint", "WriteShardFiles", "WriteIndex",
    "CommitCheckpoint", "UpdateTracker",   "ApplyRetention"};

// kWriteSteps, each with the context `suffix` ("2 sync caller").
std::vector<std::string> WriteStepsWith(const std::string& suffix) {
  std::vector<std::string> out;
  for (const std::string& step : kWriteSteps) out.push_back(step + " " + suffix);
  return out;
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ReferenceEngineSteps, SyncSaveRunsEveryStepInOrder) {
  Harness h;
  const ParameterSharding sharding = MakeSharding(4, 2, 2);
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 3), SaveOptions()).ok());
  EXPECT_EQ(h.engine->steps, Concat({"ValidateSave(global)", "PlanSave"}, kWriteSteps));
}

TEST(ReferenceEngineSteps, ACachedPlanSkipsGlobalValidation) {
  Harness h;
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  SaveOptions options;
  options.assume_constant_structure = true;
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), options).ok());
  h.engine->steps.clear();
  ASSERT_TRUE(h.engine->Save(2, DictsOf(sharding, 2), options).ok());
  EXPECT_EQ(h.engine->steps, Concat({"ValidateSave", "PlanSave(cached)"}, kWriteSteps));
}

TEST(ReferenceEngineSteps, AsyncSaveStagesBeforeReturningAndWritesAtFinalize) {
  Harness h;
  const ParameterSharding sharding = MakeSharding(2, 1, 2);
  SaveOptions options;
  options.async = true;
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 5), options).ok());
  EXPECT_EQ(h.engine->steps,
            (std::vector<std::string>{"ValidateSave(global)", "PlanSave", "GuardOverwrite",
                                      "StageAsyncSave", "AsyncSaveScheduled"}));
  h.engine->steps.clear();
  ASSERT_TRUE(h.engine->Finalize().ok());
  EXPECT_EQ(h.engine->steps, Concat(kWriteSteps, {"ReportAsyncSave"}));
}

TEST(ReferenceEngineSteps, EverySyncSaveStepSeesItsSaveOnTheCallersSide) {
  Harness h;
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  SaveOptions options;
  options.assume_constant_structure = true;
  ASSERT_TRUE(h.engine->Save(2, DictsOf(sharding, 1), options).ok());
  EXPECT_EQ(h.engine->contexts,
            Concat({"ValidateSave(global) 2 sync caller cached", "PlanSave 2 sync caller cached"},
                   WriteStepsWith("2 sync caller cached")));
  EXPECT_EQ(h.engine->context_now().iteration, -1);  // no step is running
}

// The steps of an async save's write see the writer's side, on the background thread or inside
// the call that runs a deferred write; the caller's steps and ReportAsyncSave the caller's.
TEST(ReferenceEngineSteps, AsyncSaveStepsSeeTheirSideOfTheSave) {
  for (AsyncExecution execution : {AsyncExecution::kDeferred, AsyncExecution::kThread}) {
    SCOPED_TRACE(execution == AsyncExecution::kThread ? "thread" : "deferred");
    Harness h(0, execution);
    const ParameterSharding sharding = MakeSharding(2, 1, 2);
    SaveOptions options;
    options.async = true;
    ASSERT_TRUE(h.engine->Save(3, DictsOf(sharding, 5), options).ok());
    ASSERT_TRUE(h.engine->Finalize().ok());
    const std::vector<std::string> caller = {
        "ValidateSave(global) 3 async caller", "PlanSave 3 async caller",
        "GuardOverwrite 3 async caller", "StageAsyncSave 3 async caller"};
    std::vector<std::string> contexts = h.engine->contexts;
    // On a thread the write may run before AsyncSaveScheduled is recorded: compare it apart.
    const auto scheduled =
        std::find(contexts.begin(), contexts.end(), "AsyncSaveScheduled 3 async caller");
    ASSERT_NE(scheduled, contexts.end());
    contexts.erase(scheduled);
    EXPECT_EQ(contexts, Concat(Concat(caller, WriteStepsWith("3 async writer")),
                               {"ReportAsyncSave 3 async caller"}));
    EXPECT_EQ(h.engine->context_now().iteration, -1);
  }
}

// The overwrite guard is a step of its own: saving the tracker's iteration stops there, sync or
// async, before anything is staged or written.
TEST(ReferenceEngineSteps, GuardOverwriteRefusesTheTrackersIterationBeforeAnythingElse) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    Harness h;
    const ParameterSharding sharding = MakeSharding(2, 2, 1);
    ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), SaveOptions()).ok());
    h.engine->steps.clear();
    SaveOptions options;
    options.async = async;
    const Status refused = h.engine->Save(1, DictsOf(sharding, 2), options);
    EXPECT_EQ(refused.code(), Status::Code::kFailedPrecondition) << refused.ToString();
    EXPECT_EQ(h.engine->steps,
              (std::vector<std::string>{"ValidateSave(global)", "PlanSave", "GuardOverwrite"}));
    EXPECT_FALSE(h.engine->has_pending_save());
    LoadResult result;
    ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &result).ok());
    EXPECT_EQ(CheckContent(result.state, 1), "");
  }
}

TEST(ReferenceEngineSteps, LoadOpensAHostDestinationForEveryTensor) {
  Harness h;
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 9), SaveOptions()).ok());
  h.engine->steps.clear();
  LoadResult result;
  ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &result).ok());
  EXPECT_EQ(h.engine->steps, std::vector<std::string>{"OpenHostDestination"});
  EXPECT_EQ(CheckContent(result.state, 9), "");
}

// A step that fails ends the save with its error; the tracker keeps naming the last checkpoint,
// and the next save removes what the failed one left and succeeds.
TEST(ReferenceEngineSteps, AFailingStepLeavesTheTrackerOnTheLastCheckpoint) {
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  const std::string steps[] = {"GuardOverwrite", "WriteShardFiles", "WriteIndex",
                               "CommitCheckpoint", "UpdateTracker"};
  for (const std::string& step : steps) {
    SCOPED_TRACE(step);
    Harness h;
    ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), SaveOptions()).ok());
    h.engine->fail_at = step;
    const Status failed = h.engine->Save(2, DictsOf(sharding, 2), SaveOptions());
    EXPECT_EQ(failed.code(), Status::Code::kIOError);
    EXPECT_NE(failed.message().find("injected failure of " + step), std::string::npos)
        << failed.ToString();
    int64_t latest;
    ASSERT_TRUE(h.engine->LatestIteration(&latest).ok());
    EXPECT_EQ(latest, 1);
    h.engine->fail_at.clear();
    ASSERT_TRUE(h.engine->Save(3, DictsOf(sharding, 3), SaveOptions()).ok());
    LoadResult result;
    ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &result).ok());
    EXPECT_EQ(result.iteration, 3);
    EXPECT_EQ(CheckContent(result.state, 3), "");
  }
}

// What ReportAsyncSave returns is what Finalize returns: the reference names the iteration.
TEST(ReferenceEngineSteps, ReportAsyncSaveDecidesWhatFinalizeReturns) {
  Harness h;
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  SaveOptions options;
  options.async = true;
  ASSERT_TRUE(h.engine->Save(4, DictsOf(sharding, 1), options).ok());
  h.engine->fail_at = "WriteIndex";
  const Status finalized = h.engine->Finalize();
  EXPECT_EQ(finalized.code(), Status::Code::kIOError);
  EXPECT_NE(finalized.message().find("async save of iteration 4"), std::string::npos)
      << finalized.ToString();
  EXPECT_EQ(h.engine->steps.back(), "ReportAsyncSave");
}

}  // namespace
}  // namespace ckptspec
