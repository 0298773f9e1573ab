// Crash consistency (P13): a crash at every storage operation of a save, followed by a power
// loss that drops unsynced data, leaves the tracker on a complete checkpoint that loads exactly;
// a save that returned OK survives the power loss; cleanup never removes the last complete one.
#include <gtest/gtest.h>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::CheckContent;
using testing_util::DictsOf;
using testing_util::LoadInto;
using testing_util::MakeSharding;
using testing_util::MemHarness;
using testing_util::TemplatesOf;

// Seed of iteration i's content.
uint64_t SeedOf(int64_t iteration) { return 1000 + iteration; }

std::unique_ptr<ReferenceEngine> Restart(MemEnv* env, int keep_last) {
  ReferenceOptions options;
  options.env = env;
  options.root = "/ckpt";
  options.keep_last = keep_last;
  return std::make_unique<ReferenceEngine>(std::move(options));
}

// Saves iterations 1..saved_before, then crashes save `saved_before + 1` at operation k (k < 0:
// no crash), loses power, restarts and checks the invariant. Returns the number of operations
// the crashed save ran (its full length when k < 0).
int64_t CrashOneSave(int keep_last, int64_t saved_before, int64_t k, bool async) {
  const ParameterSharding sharding = MakeSharding(4, 2, 2);
  MemHarness h(keep_last);
  for (int64_t it = 1; it <= saved_before; ++it) {
    const Status s = h.engine->Save(it, DictsOf(sharding, SeedOf(it)), SaveOptions());
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  const int64_t target = saved_before + 1;
  const auto dicts = DictsOf(sharding, SeedOf(target));
  h.env.ResetOpCount();
  if (k >= 0) h.env.CrashAtOp(k);
  SaveOptions options;
  options.async = async;
  Status saved = h.engine->Save(target, dicts, options);
  if (saved.ok()) saved = h.engine->Finalize();
  const int64_t ops = h.env.op_count();
  const std::string where = "keep_last " + std::to_string(keep_last) + ", crash at op " +
                            std::to_string(k) + " of save " + std::to_string(target) + ": ";
  if (k >= 0 && k < ops) {
    EXPECT_FALSE(saved.ok()) << where << "a save that crashed reported success";
  } else {
    EXPECT_TRUE(saved.ok()) << where << saved.ToString();
  }
  const std::vector<std::string> log = h.env.op_log();
  h.env.SimulatePowerLoss();

  auto engine = Restart(&h.env, keep_last);
  LoadResult result;
  const Status loaded = LoadInto(*engine, TemplatesOf(sharding), &result);
  if (saved_before == 0 && !saved.ok() && loaded.code() == Status::Code::kNotFound) {
    // No checkpoint ever completed: the tracker may name nothing, which is fine.
  } else {
    EXPECT_TRUE(loaded.ok()) << where << loaded.ToString()
                             << "\nlast op: " << (log.empty() ? "" : log.back());
    if (loaded.ok()) {
      EXPECT_TRUE(result.iteration == target || result.iteration == saved_before)
          << where << "tracker names " << result.iteration;
      if (saved.ok()) {
        EXPECT_EQ(result.iteration, target) << where << "a completed save did not survive";
      }
      EXPECT_EQ(CheckContent(result.state, SeedOf(result.iteration)), "") << where;
    }
  }
  // The run goes on: the next save cleans up and succeeds.
  const Status next =
      engine->Save(target + 1, DictsOf(sharding, SeedOf(target + 1)), SaveOptions());
  EXPECT_TRUE(next.ok()) << where << "the save after the crash: " << next.ToString();
  const Status again = LoadInto(*engine, TemplatesOf(sharding), &result);
  EXPECT_TRUE(again.ok() && result.iteration == target + 1 &&
              CheckContent(result.state, SeedOf(target + 1)).empty())
      << where << again.ToString();
  if (keep_last > 0) {
    std::vector<int64_t> iterations;
    EXPECT_TRUE(engine->ListIterations(&iterations).ok());
    EXPECT_LE(iterations.size(), static_cast<size_t>(keep_last)) << where;
  }
  return ops;
}

void CrashAtEveryOperation(int keep_last, int64_t saved_before, bool async) {
  const int64_t total = CrashOneSave(keep_last, saved_before, -1, async);
  ASSERT_GT(total, 10);
  for (int64_t k = 0; k <= total; ++k) {
    CrashOneSave(keep_last, saved_before, k, async);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "first failure at crash point " << k << " of " << total;
      return;
    }
  }
}

TEST(ReferenceCrash, EveryOperationOfASecondSave) { CrashAtEveryOperation(0, 1, false); }
TEST(ReferenceCrash, EveryOperationWithRetentionOfOne) { CrashAtEveryOperation(1, 2, false); }
TEST(ReferenceCrash, EveryOperationOfTheFirstSave) { CrashAtEveryOperation(0, 0, false); }
TEST(ReferenceCrash, EveryOperationOfAnAsyncSave) { CrashAtEveryOperation(2, 2, true); }

TEST(ReferenceCrash, LeftoverStagingDirectoryIsNeverLoadedAndIsCleanedUp) {
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  MemHarness h;
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), SaveOptions()).ok());
  ASSERT_TRUE(h.env.CreateDir("/ckpt/iter_0000002.tmp").ok());
  ASSERT_TRUE(WriteFileSynced(&h.env, "/ckpt/iter_0000002.tmp/shard_00000.bin", "partial").ok());
  LoadResult result;
  ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &result).ok());
  EXPECT_EQ(result.iteration, 1);
  ASSERT_TRUE(h.engine->Save(3, DictsOf(sharding, 3), SaveOptions()).ok());
  EXPECT_FALSE(h.env.FileExists("/ckpt/iter_0000002.tmp").ok());
}

TEST(ReferenceCrash, RefusesToOverwriteTheLatestCheckpoint) {
  const ParameterSharding sharding = MakeSharding(2, 2, 1);
  MemHarness h;
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 1), SaveOptions()).ok());
  EXPECT_EQ(h.engine->Save(1, DictsOf(sharding, 2), SaveOptions()).code(),
            Status::Code::kFailedPrecondition);
}

}  // namespace
}  // namespace ckptspec
