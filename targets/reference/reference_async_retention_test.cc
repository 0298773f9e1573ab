// Async saves (P14, docs/BUGS.md B19) and retention (P13's cleanup clause).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::CheckContent;
using testing_util::DictsOf;
using testing_util::LoadInto;
using testing_util::MakeSharding;
using testing_util::MemHarness;
using testing_util::TemplatesOf;

SaveOptions Async() {
  SaveOptions o;
  o.async = true;
  return o;
}

class ReferenceAsync : public ::testing::TestWithParam<AsyncExecution> {};

TEST_P(ReferenceAsync, MutationAfterSchedulingDoesNotReachTheCheckpoint) {
  MemHarness h(0, GetParam());
  const ParameterSharding sharding = MakeSharding(4, 2, 2);
  auto dicts = DictsOf(sharding, 11);
  ASSERT_TRUE(h.engine->Save(1, dicts, Async()).ok());
  // The training loop goes on and overwrites its buffers (next step's values).
  for (auto& d : dicts) {
    for (auto& t : d.tensors) std::fill(t.data.begin(), t.data.end(), 0xAB);
    (*d.common.Mutable())["iteration"] = 2;
  }
  dicts.clear();
  ASSERT_TRUE(h.engine->Finalize().ok());
  LoadResult result;
  ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &result).ok());
  EXPECT_EQ(result.iteration, 1);
  EXPECT_EQ(CheckContent(result.state, 11), "");
  EXPECT_FALSE(result.state[0].common->contains("iteration"));
}

TEST_P(ReferenceAsync, TrackerNamesTheIterationOnlyAfterTheWriteCompletes) {
  MemHarness h(0, GetParam());
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), SaveOptions()).ok());
  ASSERT_TRUE(h.engine->Save(2, DictsOf(sharding, 2), Async()).ok());
  if (GetParam() == AsyncExecution::kDeferred) {
    int64_t latest;
    ASSERT_TRUE(h.engine->LatestIteration(&latest).ok());
    EXPECT_EQ(latest, 1);
    EXPECT_TRUE(h.engine->has_pending_save());
  }
  ASSERT_TRUE(h.engine->Finalize().ok());
  EXPECT_FALSE(h.engine->has_pending_save());
  int64_t latest;
  ASSERT_TRUE(h.engine->LatestIteration(&latest).ok());
  EXPECT_EQ(latest, 2);
}

TEST_P(ReferenceAsync, AWriteErrorSurfacesAtTheNextCall) {
  for (int next_call = 0; next_call < 3; ++next_call) {
    MemHarness h(0, GetParam());
    const ParameterSharding sharding = MakeSharding(2, 2, 1);
    ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), SaveOptions()).ok());
    h.env.FailWritesTo("iter_0000002.tmp/shard_00001.bin");
    ASSERT_TRUE(h.engine->Save(2, DictsOf(sharding, 2), Async()).ok());
    Status s;
    LoadResult result;
    if (next_call == 0) s = h.engine->Finalize();
    if (next_call == 1) s = h.engine->Save(3, DictsOf(sharding, 3), SaveOptions());
    if (next_call == 2) s = LoadInto(*h.engine, TemplatesOf(sharding), &result);
    EXPECT_EQ(s.code(), Status::Code::kIOError) << next_call << ": " << s.ToString();
    EXPECT_NE(s.message().find("async save of iteration 2"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("shard_00001.bin"), std::string::npos) << s.ToString();
    // Reported once; the tracker still names the last complete checkpoint.
    EXPECT_TRUE(h.engine->Finalize().ok());
    int64_t latest;
    ASSERT_TRUE(h.engine->LatestIteration(&latest).ok());
    EXPECT_EQ(latest, 1);
    h.env.ClearFaults();
    ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &result).ok());
    EXPECT_EQ(CheckContent(result.state, 1), "");
  }
}

// Polls until the pending save is complete (deferred: the first poll writes it; a thread: it
// finishes on its own) and returns the completing poll's status.
Status PollUntilComplete(Engine* engine) {
  for (int i = 0; i < 10000; ++i) {
    bool complete = false;
    const Status s = engine->Poll(&complete);
    if (complete || !s.ok()) {
      EXPECT_TRUE(complete) << "a poll that fails completes the save";
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::IOError("the async save did not complete within 10 s of polling");
}

TEST_P(ReferenceAsync, PollCompletesTheSaveOnceWrittenAndReportsItsErrorOnce) {
  MemHarness h(0, GetParam());
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  bool complete = false;
  ASSERT_TRUE(h.engine->Poll(&complete).ok());
  EXPECT_TRUE(complete);  // nothing pending
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), SaveOptions()).ok());
  // The caller's own dicts, kept and written in place after scheduling, tensors on the host.
  auto live = std::make_shared<std::vector<ShardedStateDict>>(DictsOf(sharding, 2));
  ASSERT_TRUE(
      h.engine->Save(2, SaveInput(live, EveryTensorOn(*live, Placement::kHost)), Async()).ok());
  for (auto& d : *live) {
    for (auto& t : d.tensors) std::fill(t.data.begin(), t.data.end(), 0xAB);
  }
  ASSERT_TRUE(PollUntilComplete(h.engine.get()).ok());
  EXPECT_FALSE(h.engine->has_pending_save());
  int64_t latest;
  ASSERT_TRUE(h.engine->LatestIteration(&latest).ok());
  EXPECT_EQ(latest, 2);
  LoadResult result;
  ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &result).ok());
  EXPECT_EQ(CheckContent(result.state, 2), "");

  h.env.FailWritesTo("iter_0000003.tmp/shard_00001.bin");
  ASSERT_TRUE(h.engine->Save(3, DictsOf(sharding, 3), Async()).ok());
  const Status failed = PollUntilComplete(h.engine.get());
  EXPECT_EQ(failed.code(), Status::Code::kIOError) << failed.ToString();
  EXPECT_NE(failed.message().find("async save of iteration 3"), std::string::npos)
      << failed.ToString();
  h.env.ClearFaults();
  EXPECT_TRUE(h.engine->Finalize().ok());  // reported once
  ASSERT_TRUE(h.engine->LatestIteration(&latest).ok());
  EXPECT_EQ(latest, 2);
}

INSTANTIATE_TEST_SUITE_P(Modes, ReferenceAsync,
                         ::testing::Values(AsyncExecution::kDeferred, AsyncExecution::kThread));

TEST(ReferenceRetention, KeepsTheLastKAndNeverTheTrackersOne) {
  MemHarness h(2);
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  for (int64_t it = 1; it <= 5; ++it) {
    ASSERT_TRUE(h.engine->Save(it * 10, DictsOf(sharding, it), SaveOptions()).ok());
  }
  std::vector<int64_t> iterations;
  ASSERT_TRUE(h.engine->ListIterations(&iterations).ok());
  EXPECT_EQ(iterations, (std::vector<int64_t>{40, 50}));
  std::vector<std::string> names;
  ASSERT_TRUE(h.env.GetChildren("/ckpt", &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"iter_0000040", "iter_0000050",
                                             "latest_checkpointed_iteration.txt"}));
}

TEST(ReferenceRetention, NewerDirectoriesNeverEvictTheTrackersCheckpoint) {
  // A run resumed from iteration 20 while directories 30 and 40 of an abandoned run remain.
  MemHarness h(1);
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  for (int64_t it : {10, 20, 30, 40})
    ASSERT_TRUE(h.engine->Save(it, DictsOf(sharding, it), SaveOptions()).ok());
  ASSERT_TRUE(ReplaceFileAtomically(&h.env, "/ckpt/latest_checkpointed_iteration.txt", "20").ok());
  ASSERT_TRUE(h.env.CreateDir("/ckpt/iter_0000050").ok());  // a stray newer directory
  ASSERT_TRUE(h.engine->Save(25, DictsOf(sharding, 25), SaveOptions()).ok());
  std::vector<int64_t> iterations;
  ASSERT_TRUE(h.engine->ListIterations(&iterations).ok());
  // The newest (50) is kept by count and 25 because the tracker names it.
  EXPECT_EQ(iterations, (std::vector<int64_t>{25, 50}));
  LoadResult result;
  ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &result).ok());
  EXPECT_EQ(result.iteration, 25);
  EXPECT_EQ(CheckContent(result.state, 25), "");
}

}  // namespace
}  // namespace ckptspec
