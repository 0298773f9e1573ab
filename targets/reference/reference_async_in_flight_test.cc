// Several async saves in flight (ReferenceOptions::max_async_in_flight, docs/SEMANTICS.md §3):
// they commit in schedule order, the bound makes a Save complete the oldest first, Poll and
// Finalize complete them oldest first with each error at a call of its own, retention counts only
// committed checkpoints, and the default bound of 1 is the single pending save of before.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::CheckContent;
using testing_util::DictsOf;
using testing_util::LoadInto;
using testing_util::MakeSharding;
using testing_util::OptionsAtCkpt;
using testing_util::TemplatesOf;

SaveOptions Async() {
  SaveOptions o;
  o.async = true;
  return o;
}

// Records the iterations whose tracker update ran, in order.
class TrackerRecordingEngine : public ReferenceEngine {
 public:
  using ReferenceEngine::ReferenceEngine;
  std::vector<int64_t> tracked() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return tracked_;
  }

 protected:
  Status UpdateTracker(int64_t iteration) override {
    CKPTSPEC_RETURN_IF_ERROR(ReferenceEngine::UpdateTracker(iteration));
    const std::lock_guard<std::mutex> lock(mutex_);
    tracked_.push_back(iteration);
    return Status::OK();
  }

 private:
  std::mutex mutex_;  // the background writer records while the test reads
  std::vector<int64_t> tracked_;
};

struct Harness {
  Harness(int bound, AsyncExecution execution, int keep_last = 0) {
    ReferenceOptions options = OptionsAtCkpt(&env, keep_last, execution);
    options.max_async_in_flight = bound;
    engine = std::make_unique<TrackerRecordingEngine>(std::move(options));
  }
  int64_t Latest() {
    int64_t latest = -1;
    EXPECT_TRUE(engine->LatestIteration(&latest).ok());
    return latest;
  }
  std::vector<int64_t> Iterations() {
    std::vector<int64_t> iterations;
    EXPECT_TRUE(engine->ListIterations(&iterations).ok());
    return iterations;
  }
  // "" when iteration `iteration` loads with the content of `seed`.
  std::string LoadsWith(int64_t iteration, uint64_t seed) {
    LoadResult result;
    const Status loaded = LoadInto(*engine, TemplatesOf(sharding), &result,
                                   StrictMode::kAssumeOkUnexpected, iteration);
    if (!loaded.ok()) return loaded.ToString();
    return CheckContent(result.state, seed);
  }
  MemEnv env;
  std::unique_ptr<TrackerRecordingEngine> engine;
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
};

class InFlight : public ::testing::TestWithParam<AsyncExecution> {};

// The caller's own dicts, updated in place after each save is scheduled: every checkpoint holds
// the values of its own scheduling, and they commit in the order they were scheduled.
TEST_P(InFlight, SavesCommitInScheduleOrderEachWithItsOwnValues) {
  Harness h(3, GetParam());
  ASSERT_TRUE(h.engine->Save(1, DictsOf(h.sharding, 1), SaveOptions()).ok());
  auto live = std::make_shared<std::vector<ShardedStateDict>>(DictsOf(h.sharding, 2));
  for (int64_t it = 2; it <= 4; ++it) {
    ASSERT_TRUE(
        h.engine->Save(it, SaveInput(live, EveryTensorOn(*live, Placement::kHost)), Async()).ok());
    const std::vector<ShardedStateDict> next = DictsOf(h.sharding, static_cast<uint64_t>(it + 1));
    for (size_t r = 0; r < live->size(); ++r) {
      for (size_t i = 0; i < (*live)[r].tensors.size(); ++i) {
        std::copy(next[r].tensors[i].data.begin(), next[r].tensors[i].data.end(),
                  (*live)[r].tensors[i].data.begin());
      }
    }
  }
  if (GetParam() == AsyncExecution::kDeferred) {
    EXPECT_EQ(h.engine->saves_in_flight(), 3u);
    EXPECT_EQ(h.Latest(), 1);  // nothing of them committed yet
  }
  ASSERT_TRUE(h.engine->Finalize().ok());
  EXPECT_EQ(h.engine->saves_in_flight(), 0u);
  EXPECT_EQ(h.engine->tracked(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(h.Latest(), 4);
  for (int64_t it = 1; it <= 4; ++it) {
    EXPECT_EQ(h.LoadsWith(it, static_cast<uint64_t>(it)), "") << "iteration " << it;
  }
}

// Each failing save's error surfaces at a call of its own, in schedule order; the saves after a
// failing one still commit, and the tracker moves on to them.
TEST_P(InFlight, EachErrorSurfacesAtItsOwnCallInScheduleOrder) {
  Harness h(3, GetParam());
  ASSERT_TRUE(h.engine->Save(1, DictsOf(h.sharding, 1), SaveOptions()).ok());
  h.env.FailWritesTo("iter_0000002.tmp/");
  h.env.FailWritesTo("iter_0000003.tmp/");
  for (int64_t it = 2; it <= 4; ++it) {
    ASSERT_TRUE(h.engine->Save(it, DictsOf(h.sharding, static_cast<uint64_t>(it)), Async()).ok());
  }
  for (int64_t failing : {2, 3}) {
    const Status s = h.engine->Finalize();
    EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
    EXPECT_NE(s.message().find("async save of iteration " + std::to_string(failing)),
              std::string::npos)
        << s.ToString();
  }
  EXPECT_EQ(h.engine->saves_in_flight(), 1u);
  ASSERT_TRUE(h.engine->Finalize().ok());
  EXPECT_EQ(h.Latest(), 4);
  h.env.ClearFaults();
  EXPECT_EQ(h.LoadsWith(4, 4), "");
  EXPECT_EQ(h.LoadsWith(1, 1), "");
  EXPECT_EQ(h.Iterations(), (std::vector<int64_t>{1, 4}));
}

// A Load (and a sync Save) completes every save in flight first, and stops at an error.
TEST_P(InFlight, LoadAndSyncSaveCompleteEverySaveInFlightFirst) {
  Harness h(3, GetParam());
  ASSERT_TRUE(h.engine->Save(2, DictsOf(h.sharding, 2), Async()).ok());
  ASSERT_TRUE(h.engine->Save(3, DictsOf(h.sharding, 3), Async()).ok());
  LoadResult result;
  ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(h.sharding), &result).ok());
  EXPECT_EQ(result.iteration, 3);
  EXPECT_EQ(CheckContent(result.state, 3), "");
  ASSERT_TRUE(h.engine->Save(4, DictsOf(h.sharding, 4), Async()).ok());
  ASSERT_TRUE(h.engine->Save(5, DictsOf(h.sharding, 5), SaveOptions()).ok());
  EXPECT_EQ(h.engine->tracked(), (std::vector<int64_t>{2, 3, 4, 5}));
}

INSTANTIATE_TEST_SUITE_P(Reference, InFlight,
                         ::testing::Values(AsyncExecution::kDeferred, AsyncExecution::kThread),
                         [](const ::testing::TestParamInfo<AsyncExecution>& info) {
                           return info.param == AsyncExecution::kThread ? "Thread" : "Deferred";
                         });

// With the bound reached, an async Save completes the oldest save first (deferred: its write runs
// inside that Save), and returns its error instead of scheduling.
TEST(InFlightDeferred, TheBoundMakesASaveCompleteTheOldestFirst) {
  Harness h(2, AsyncExecution::kDeferred);
  ASSERT_TRUE(h.engine->Save(2, DictsOf(h.sharding, 2), Async()).ok());
  ASSERT_TRUE(h.engine->Save(3, DictsOf(h.sharding, 3), Async()).ok());
  EXPECT_TRUE(h.engine->tracked().empty());
  ASSERT_TRUE(h.engine->Save(4, DictsOf(h.sharding, 4), Async()).ok());
  EXPECT_EQ(h.engine->tracked(), (std::vector<int64_t>{2}));
  EXPECT_EQ(h.engine->saves_in_flight(), 2u);

  h.env.FailWritesTo("iter_0000003.tmp/");
  const Status refused = h.engine->Save(5, DictsOf(h.sharding, 5), Async());
  EXPECT_NE(refused.message().find("async save of iteration 3"), std::string::npos)
      << refused.ToString();
  EXPECT_EQ(h.engine->saves_in_flight(), 1u);  // 4 only: 5 was not scheduled
  h.env.ClearFaults();
  ASSERT_TRUE(h.engine->Finalize().ok());
  EXPECT_EQ(h.engine->tracked(), (std::vector<int64_t>{2, 4}));
}

// The default bound is 1: every Save completes the pending async save first, as before there was
// a bound.
TEST(InFlightDeferred, TheDefaultBoundHoldsOneSave) {
  Harness h(1, AsyncExecution::kDeferred);
  ASSERT_TRUE(h.engine->Save(2, DictsOf(h.sharding, 2), Async()).ok());
  ASSERT_TRUE(h.engine->Save(3, DictsOf(h.sharding, 3), Async()).ok());
  EXPECT_EQ(h.engine->tracked(), (std::vector<int64_t>{2}));
  EXPECT_EQ(h.engine->saves_in_flight(), 1u);
  EXPECT_EQ(ReferenceOptions().max_async_in_flight, 1);
}

// Under deferred execution a Poll runs and completes the oldest save only.
TEST(InFlightDeferred, EachPollCompletesTheOldestSave) {
  Harness h(3, AsyncExecution::kDeferred);
  for (int64_t it = 2; it <= 4; ++it) {
    ASSERT_TRUE(h.engine->Save(it, DictsOf(h.sharding, static_cast<uint64_t>(it)), Async()).ok());
  }
  for (int64_t it = 2; it <= 4; ++it) {
    bool complete = true;
    ASSERT_TRUE(h.engine->Poll(&complete).ok());
    EXPECT_EQ(complete, it == 4) << it;
    EXPECT_EQ(h.Latest(), it);
  }
}

// Retention counts only committed checkpoints: scheduling saves removes nothing, and each commit
// keeps the newest keep_last of what has committed.
TEST(InFlightDeferred, RetentionCountsOnlyCommittedCheckpoints) {
  Harness h(3, AsyncExecution::kDeferred, /*keep_last=*/1);
  ASSERT_TRUE(h.engine->Save(1, DictsOf(h.sharding, 1), SaveOptions()).ok());
  ASSERT_TRUE(h.engine->Save(2, DictsOf(h.sharding, 2), Async()).ok());
  ASSERT_TRUE(h.engine->Save(3, DictsOf(h.sharding, 3), Async()).ok());
  EXPECT_EQ(h.Iterations(), (std::vector<int64_t>{1}));
  bool complete = false;
  ASSERT_TRUE(h.engine->Poll(&complete).ok());
  EXPECT_EQ(h.Iterations(), (std::vector<int64_t>{2}));
  ASSERT_TRUE(h.engine->Finalize().ok());
  EXPECT_EQ(h.Iterations(), (std::vector<int64_t>{3}));
  EXPECT_EQ(h.LoadsWith(3, 3), "");
}

// An async save of the iteration the newest save in flight will make the tracker name is refused
// when it is called; one of an older save's iteration is not (the newer one is what the tracker
// names when its turn comes).
TEST(InFlightDeferred, TheNewestSaveInFlightIsGuardedLikeTheTrackersCheckpoint) {
  Harness h(3, AsyncExecution::kDeferred);
  ASSERT_TRUE(h.engine->Save(2, DictsOf(h.sharding, 2), Async()).ok());
  const Status refused = h.engine->Save(2, DictsOf(h.sharding, 7), Async());
  EXPECT_EQ(refused.code(), Status::Code::kFailedPrecondition) << refused.ToString();
  EXPECT_EQ(h.engine->saves_in_flight(), 1u);
  ASSERT_TRUE(h.engine->Save(3, DictsOf(h.sharding, 3), Async()).ok());
  ASSERT_TRUE(h.engine->Save(2, DictsOf(h.sharding, 8), Async()).ok());
  ASSERT_TRUE(h.engine->Finalize().ok());
  EXPECT_EQ(h.engine->tracked(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(h.LoadsWith(2, 8), "");
  EXPECT_EQ(h.LoadsWith(3, 3), "");
}

// The destructor completes every save in flight (their statuses are lost there).
TEST(InFlightDeferred, TheDestructorCompletesEverySaveInFlight) {
  Harness h(3, AsyncExecution::kDeferred);
  ASSERT_TRUE(h.engine->Save(2, DictsOf(h.sharding, 2), Async()).ok());
  ASSERT_TRUE(h.engine->Save(3, DictsOf(h.sharding, 3), Async()).ok());
  h.engine.reset();
  auto engine = testing_util::EngineOn(&h.env, IndexLayout::kSingle);
  int64_t latest = -1;
  ASSERT_TRUE(engine->LatestIteration(&latest).ok());
  EXPECT_EQ(latest, 3);
}

}  // namespace
}  // namespace ckptspec
