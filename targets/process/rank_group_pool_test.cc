// The pool of live rank groups against tiny shell adapters: reuse across engines, reset, and what
// ends a group instead of keeping it.
#include "targets/process/rank_group_pool.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "targets/process/harness_registry.h"
#include "targets/process/process_test_util.h"

namespace ckptspec {
namespace {

// A shell adapter that answers every request with ok, declaring `capabilities` in each reply (only
// hello's is read). `on_reset` runs before the reply to a reset request; `reset_reply`, when given,
// is the command that prints that reply instead.
std::string ShellAdapter(const std::string& capabilities, const std::string& on_reset = "",
                         const std::string& reset_reply = "") {
  const std::string reply =
      "printf '{\"id\":%s,\"rank\":%s,\"ok\":true,\"protocol\":1,\"capabilities\":" + capabilities +
      "}\\n' \"$id\" \"$RANK\"";
  return "while read -r line; do "
         "id=$(printf '%s' \"$line\" | sed 's/.*\"id\":\\([0-9]*\\).*/\\1/'); "
         "case \"$line\" in *'\"op\":\"reset\"'*) " +
         on_reset + (reset_reply.empty() ? reply : reset_reply) + ";; *) " + reply +
         ";; esac; done";
}

const std::string kResets = "{\"objects\":true,\"reset\":true}";
const std::string kNoReset = "{\"objects\":true}";

std::vector<pid_t> Pids(const RankGroup& group) { return group.pids(); }

TEST(RankGroupPool, AGroupThatResetsServesTheNextEngine) {
  std::vector<pid_t> first;
  {
    RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, 5);
    std::unique_ptr<RankGroup> group;
    ASSERT_TRUE(pool.Acquire(2, &group).ok());
    EXPECT_TRUE(group->hello().reset);
    first = Pids(*group);
    ASSERT_TRUE(pool.Release(std::move(group)).ok());
    EXPECT_EQ(pool.idle(), 1u);

    ASSERT_TRUE(pool.Acquire(2, &group).ok());
    EXPECT_EQ(Pids(*group), first) << "the idle group of that size is handed out again";
    EXPECT_EQ(pool.started(), 1u);
    EXPECT_EQ(pool.idle(), 0u);

    std::unique_ptr<RankGroup> other;
    ASSERT_TRUE(pool.Acquire(3, &other).ok()) << "another size starts another group";
    EXPECT_EQ(pool.started(), 2u);
    const std::vector<pid_t> second = Pids(*other);
    ASSERT_TRUE(pool.Release(std::move(group)).ok());
    ASSERT_TRUE(pool.Release(std::move(other)).ok());
    EXPECT_EQ(pool.idle(), 2u);
    first.insert(first.end(), second.begin(), second.end());
  }  // the pool shuts its idle groups down
  ExpectNoProcessLeft(first);
}

TEST(RankGroupPool, AGroupWithoutResetIsShutDown) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kNoReset), 0, 5}, 3);
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(2, &group).ok());
  EXPECT_FALSE(group->hello().reset);
  const std::vector<pid_t> pids = Pids(*group);
  ASSERT_TRUE(pool.Release(std::move(group)).ok());
  EXPECT_EQ(pool.idle(), 0u);
  ExpectNoProcessLeft(pids);
  ASSERT_TRUE(pool.Acquire(2, &group).ok());
  EXPECT_NE(Pids(*group), pids);
  EXPECT_EQ(pool.started(), 2u);
}

TEST(RankGroupPool, AGroupOfMoreRanksThanTheBoundIsNotKept) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, 3);
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(4, &group).ok());
  const std::vector<pid_t> pids = Pids(*group);
  ASSERT_TRUE(pool.Release(std::move(group)).ok());
  EXPECT_EQ(pool.idle(), 0u);
  ExpectNoProcessLeft(pids);
}

TEST(RankGroupPool, NoRanksToKeepKeepsNothing) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, 0);
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(1, &group).ok());
  const std::vector<pid_t> pids = Pids(*group);
  ASSERT_TRUE(pool.Release(std::move(group)).ok());
  EXPECT_EQ(pool.idle(), 0u);
  ExpectNoProcessLeft(pids);
}

TEST(RankGroupPool, TheGroupIdleLongestGivesWayBeyondTheBoundInRanks) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, 5);
  std::unique_ptr<RankGroup> a, b, c;
  ASSERT_TRUE(pool.Acquire(1, &a).ok());
  ASSERT_TRUE(pool.Acquire(2, &b).ok());
  ASSERT_TRUE(pool.Acquire(3, &c).ok());
  const std::vector<pid_t> oldest = Pids(*a);
  ASSERT_TRUE(pool.Release(std::move(a)).ok());
  ASSERT_TRUE(pool.Release(std::move(b)).ok());
  ASSERT_TRUE(pool.Release(std::move(c)).ok());
  EXPECT_EQ(pool.idle(), 2u);
  EXPECT_EQ(pool.idle_ranks(), 5u) << "2 + 3 ranks: the 1-rank group had to go";
  ExpectNoProcessLeft(oldest);
  std::unique_ptr<RankGroup> again;
  ASSERT_TRUE(pool.Acquire(1, &again).ok());
  EXPECT_EQ(pool.started(), 4u) << "the 1-rank group was shut down, not kept";
}

TEST(RankGroupPool, ARefusedResetEndsTheGroupWithTheAdaptersError) {
  RankGroupPool pool(
      RankGroupOptions{
          ShellAdapter(
              kResets, "",
              "printf '{\"id\":%s,\"rank\":%s,\"ok\":false,\"error\":{\"code\":\"IOError\","
              "\"message\":\"cannot forget\"}}\\n' \"$id\" \"$RANK\""),
          0, 5},
      3);
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(2, &group).ok());
  const std::vector<pid_t> pids = Pids(*group);
  const Status s = pool.Release(std::move(group));
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
  EXPECT_EQ(s.message(), "adapter rank 0 refused reset: cannot forget");
  EXPECT_EQ(pool.idle(), 0u);
  ExpectNoProcessLeft(pids);
}

TEST(RankGroupPool, AResetThatHangsIsTimedOutAndDropped) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets, "sleep 30; "), 0, 0.3}, 3);
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(1, &group).ok());
  const std::vector<pid_t> pids = Pids(*group);
  std::optional<AdapterFault> fault;
  const Status s = pool.Release(std::move(group), &fault);
  EXPECT_EQ(fault, AdapterFault::kTimedOut) << s.ToString();
  EXPECT_NE(s.message().find("timed out"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("reset"), std::string::npos) << s.ToString();
  EXPECT_EQ(pool.idle(), 0u);
  ExpectNoProcessLeft(pids);
}

TEST(RankGroupPool, AProcessLeftRunningAtResetIsAVerdictAndKilled) {
  // At reset, rank 0 starts a process outside its process group and returns at once (double
  // fork: it is reparented to this test process, a child subreaper).
  RankGroupPool pool(
      RankGroupOptions{
          ShellAdapter(kResets, "if [ \"$RANK\" = 0 ]; then (setsid sleep 30 &); fi; "), 0, 5},
      3);
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(2, &group).ok());
  const std::vector<pid_t> pids = Pids(*group);
  const Status s = pool.Release(std::move(group));
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
  EXPECT_EQ(s.message().rfind("adapter: left processes behind: ", 0), 0u) << s.ToString();
  // Its name is "setsid" or "sleep", depending on how far it got when it was found.
  EXPECT_NE(s.message().find("1 process: "), std::string::npos) << s.ToString();
  EXPECT_EQ(pool.idle(), 0u);
  ExpectNoProcessLeft(pids);
  EXPECT_TRUE(FindLeftoverChildren().empty());
}

TEST(RankGroupPool, ADeadGroupIsNotKept) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, 3);
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(2, &group).ok());
  (void)group->Fault(1, AdapterFault::kWrongSize, "a test says so");
  EXPECT_TRUE(pool.Release(std::move(group)).ok()) << "its fault was the case's already";
  EXPECT_EQ(pool.idle(), 0u);
}

}  // namespace
}  // namespace ckptspec
