// The pool of live rank groups against tiny shell adapters: reuse across engines, reset, and what
// ends a group instead of keeping it.
#include "targets/process/rank_group_pool.h"

#include <unistd.h>

#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <optional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "targets/process/cleanup_registry.h"
#include "targets/process/process_test_util.h"

#ifndef CKPTSPEC_SOURCE_DIR
#error "CKPTSPEC_SOURCE_DIR must name the source tree (set by targets/CMakeLists.txt)"
#endif

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

// Bounds in ranks alone: memory unbounded.
IdleBounds Ranks(size_t n) { return IdleBounds{n, UINT64_MAX, 0}; }

// A measure that says each rank holds `bytes`, or nullopt when `bytes` is nullopt.
GroupMemoryMeasure EachRankHolds(std::optional<uint64_t> bytes) {
  return [bytes](const RankGroup& group) -> std::optional<uint64_t> {
    if (!bytes) return std::nullopt;
    return *bytes * static_cast<uint64_t>(group.world_size());
  };
}

TEST(RankGroupPool, AGroupThatResetsServesTheNextEngine) {
  std::vector<pid_t> first;
  {
    RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, Ranks(5));
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
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kNoReset), 0, 5}, Ranks(3));
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
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, Ranks(3));
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(4, &group).ok());
  const std::vector<pid_t> pids = Pids(*group);
  ASSERT_TRUE(pool.Release(std::move(group)).ok());
  EXPECT_EQ(pool.idle(), 0u);
  ExpectNoProcessLeft(pids);
}

TEST(RankGroupPool, NoRanksToKeepKeepsNothing) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, Ranks(0));
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(1, &group).ok());
  const std::vector<pid_t> pids = Pids(*group);
  ASSERT_TRUE(pool.Release(std::move(group)).ok());
  EXPECT_EQ(pool.idle(), 0u);
  ExpectNoProcessLeft(pids);
}

// Acquires groups of 1, 2 and 3 ranks (each size asked for once), then releases them in that
// order; the pids of the 1-rank group, released first.
std::vector<pid_t> ReleaseOneTwoThree(RankGroupPool* pool) {
  std::unique_ptr<RankGroup> a, b, c;
  EXPECT_TRUE(pool->Acquire(1, &a).ok());
  EXPECT_TRUE(pool->Acquire(2, &b).ok());
  EXPECT_TRUE(pool->Acquire(3, &c).ok());
  const std::vector<pid_t> oldest = Pids(*a);
  EXPECT_TRUE(pool->Release(std::move(a)).ok());
  EXPECT_TRUE(pool->Release(std::move(b)).ok());
  EXPECT_TRUE(pool->Release(std::move(c)).ok());
  return oldest;
}

TEST(RankGroupPool, TheGroupIdleLongestGivesWayBeyondTheBoundInRanks) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, Ranks(5));
  const std::vector<pid_t> oldest = ReleaseOneTwoThree(&pool);
  EXPECT_EQ(pool.idle(), 2u);
  EXPECT_EQ(pool.idle_ranks(), 5u) << "2 + 3 ranks: the 1-rank group had to go";
  ExpectNoProcessLeft(oldest);
  std::unique_ptr<RankGroup> again;
  ASSERT_TRUE(pool.Acquire(1, &again).ok());
  EXPECT_EQ(pool.started(), 4u) << "the 1-rank group was shut down, not kept";
}

TEST(RankGroupPool, TheGroupIdleLongestGivesWayBeyondTheBoundInMemory) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, IdleBounds{64, 500, 0},
                     EachRankHolds(100));
  const std::vector<pid_t> oldest = ReleaseOneTwoThree(&pool);
  EXPECT_EQ(pool.idle(), 2u);
  EXPECT_EQ(pool.idle_bytes(), 500u) << "200 + 300 bytes: the 1-rank group had to go";
  ExpectNoProcessLeft(oldest);
}

TEST(RankGroupPool, AWorldSizeAskedForOftenOutlivesARarerOne) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, IdleBounds{64, 700, 0},
                     EachRankHolds(100));
  std::unique_ptr<RankGroup> common, rare;
  for (int i = 0; i < 2; ++i) {  // the 3-rank size, asked for twice
    ASSERT_TRUE(pool.Acquire(3, &common).ok());
    ASSERT_TRUE(pool.Release(std::move(common)).ok());
  }
  ASSERT_TRUE(pool.Acquire(3, &common).ok());
  const std::vector<pid_t> kept = Pids(*common);
  ASSERT_TRUE(pool.Release(std::move(common)).ok());
  ASSERT_TRUE(pool.Acquire(5, &rare).ok());
  const std::vector<pid_t> rare_pids = Pids(*rare);
  ASSERT_TRUE(pool.Release(std::move(rare)).ok());
  EXPECT_EQ(pool.idle(), 1u) << "300 + 500 bytes exceed 700: the 5-rank group, just released, goes";
  ExpectNoProcessLeft(rare_pids);
  ASSERT_TRUE(pool.Acquire(3, &common).ok());
  EXPECT_EQ(Pids(*common), kept) << "the 3-rank group stayed";
  EXPECT_EQ(pool.started(), 2u);
}

TEST(RankGroupPool, AGroupOverTheMemoryBoundAloneIsNotKept) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, IdleBounds{64, 250, 0},
                     EachRankHolds(100));
  std::unique_ptr<RankGroup> small, big;
  ASSERT_TRUE(pool.Acquire(2, &small).ok());
  ASSERT_TRUE(pool.Acquire(3, &big).ok());
  const std::vector<pid_t> big_pids = Pids(*big);
  ASSERT_TRUE(pool.Release(std::move(small)).ok());
  ASSERT_TRUE(pool.Release(std::move(big)).ok());
  EXPECT_EQ(pool.idle(), 1u) << "the 3-rank group (300 bytes) is shut down, the other kept";
  EXPECT_EQ(pool.idle_ranks(), 2u);
  ExpectNoProcessLeft(big_pids);
}

TEST(RankGroupPool, AGroupWhoseMemoryCannotBeMeasuredCountsTheAssumedBytesPerRank) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, IdleBounds{64, 1000, 400},
                     EachRankHolds(std::nullopt));
  std::unique_ptr<RankGroup> two, three;
  ASSERT_TRUE(pool.Acquire(2, &two).ok());
  ASSERT_TRUE(pool.Acquire(3, &three).ok());
  ASSERT_TRUE(pool.Release(std::move(two)).ok());
  EXPECT_EQ(pool.idle_bytes(), 800u);
  ASSERT_TRUE(pool.Release(std::move(three)).ok());
  EXPECT_EQ(pool.idle(), 1u) << "3 ranks at 400 bytes each exceed 1000 bytes on their own";
  EXPECT_EQ(pool.idle_bytes(), 800u);
}

TEST(RankGroupPool, TheDefaultMeasureReadsTheRanksMemory) {
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, IdleBounds{64, UINT64_MAX, 0});
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(2, &group).ok());
  const std::optional<uint64_t> measured = ResidentGroupBytes(*group);
  ASSERT_TRUE(measured.has_value());
  EXPECT_GT(*measured, 2u * 4096u) << "two shells hold more than a page each";
  ASSERT_TRUE(pool.Release(std::move(group)).ok());
  EXPECT_GT(pool.idle_bytes(), 2u * 4096u);
}

TEST(RankGroupPool, ARefusedResetEndsTheGroupWithTheAdaptersError) {
  RankGroupPool pool(
      RankGroupOptions{
          ShellAdapter(
              kResets, "",
              "printf '{\"id\":%s,\"rank\":%s,\"ok\":false,\"error\":{\"code\":\"IOError\","
              "\"message\":\"cannot forget\"}}\\n' \"$id\" \"$RANK\""),
          0, 5},
      Ranks(3));
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
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets, "sleep 30; "), 0, 0.3}, Ranks(3));
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
      Ranks(3));
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
  RankGroupPool pool(RankGroupOptions{ShellAdapter(kResets), 0, 5}, Ranks(3));
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool.Acquire(2, &group).ok());
  (void)group->Fault(1, AdapterFault::kWrongSize, "a test says so");
  EXPECT_TRUE(pool.Release(std::move(group)).ok()) << "its fault was the case's already";
  EXPECT_EQ(pool.idle(), 0u);
}

// A shell adapter that declares reset and regroup: it answers as the rank its last hello named,
// and appends every hello line to `log_dir`/<its pid>.
std::string RegroupingAdapter(const std::string& log_dir) {
  return "me=$RANK; while read -r line; do "
         "id=$(printf '%s' \"$line\" | sed 's/.*\"id\":\\([0-9]*\\).*/\\1/'); "
         "case \"$line\" in *'\"op\":\"hello\"'*) "
         "me=$(printf '%s' \"$line\" | sed 's/.*\"rank\":\\([0-9]*\\).*/\\1/'); "
         "printf '%s\\n' \"$line\" >> " +
         log_dir +
         "/$$;; esac; "
         "printf '{\"id\":%s,\"rank\":%s,\"ok\":true,\"protocol\":1,\"capabilities\":"
         "{\"reset\":true,\"regroup\":true}}\\n' \"$id\" \"$me\"; done";
}

// A fresh empty directory for a test's logs.
std::string TestScratchDir(const std::string& name) {
  std::string dir = FastTempRoot() + "/ckptspec-" + name + "-XXXXXX";
  return mkdtemp(dir.data()) != nullptr ? dir : std::string("/nonexistent");
}

bool Contains(const std::vector<pid_t>& all, const std::vector<pid_t>& some) {
  for (pid_t pid : some) {
    if (std::find(all.begin(), all.end(), pid) == all.end()) return false;
  }
  return true;
}

TEST(RankGroupPool, RanksThatRegroupServeEveryWorldSizeStartingOnlyTheRanksMissing) {
  const std::string logs = TestScratchDir("regroup-logs");
  std::vector<pid_t> every;
  {
    RankGroupPool pool(RankGroupOptions{RegroupingAdapter(logs), 0, 5}, Ranks(8));
    std::unique_ptr<RankGroup> group;
    ASSERT_TRUE(pool.Acquire(2, &group).ok());
    EXPECT_TRUE(group->hello().regroup);
    every = Pids(*group);
    ASSERT_TRUE(pool.Release(std::move(group)).ok());

    ASSERT_TRUE(pool.Acquire(3, &group).ok()) << "two ranks of the idle group, one started";
    EXPECT_EQ(pool.started(), 1u);
    EXPECT_EQ(pool.ranks_started(), 1u);
    EXPECT_EQ(pool.regrouped(), 1u);
    EXPECT_TRUE(Contains(Pids(*group), every));
    every = Pids(*group);
    ASSERT_TRUE(pool.Release(std::move(group)).ok());

    ASSERT_TRUE(pool.Acquire(1, &group).ok());
    EXPECT_EQ(pool.free_ranks(), 2u) << "the group of three was broken up";
    std::unique_ptr<RankGroup> two;
    ASSERT_TRUE(pool.Acquire(2, &two).ok()) << "the free ranks";
    EXPECT_TRUE(Contains(every, Pids(*group)));
    EXPECT_TRUE(Contains(every, Pids(*two)));
    ASSERT_TRUE(pool.Release(std::move(group)).ok());
    ASSERT_TRUE(pool.Release(std::move(two)).ok());
    ASSERT_TRUE(pool.Acquire(3, &group).ok());
    EXPECT_TRUE(Contains(every, Pids(*group))) << "no process started for a size seen before";
    EXPECT_EQ(pool.ranks_started(), 1u);
    ASSERT_TRUE(pool.Release(std::move(group)).ok());
  }  // the pool shuts every rank down
  ExpectNoProcessLeft(every);
  // Every hello named a group of its own, with a store, and the rank the process answered as.
  std::set<std::string> names;
  size_t hellos = 0;
  for (pid_t pid : every) {
    std::ifstream in(logs + "/" + std::to_string(pid));
    std::string line;
    while (std::getline(in, line)) {
      const nlohmann::json hello = nlohmann::json::parse(line);
      ++hellos;
      EXPECT_EQ(hello["revision"], kProtocolRevision);
      EXPECT_EQ(hello["group"]["store"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << line;
      names.insert(hello["group"]["name"].get<std::string>() + "/" + hello["rank"].dump());
    }
  }
  EXPECT_EQ(hellos, 2u + 3 + 1 + 2 + 3);
  EXPECT_EQ(names.size(), hellos) << "no rank of one group twice";
  std::filesystem::remove_all(logs);
}

TEST(RankGroupPool, FreeRanksGiveWayFirstBeyondTheBound) {
  const std::string logs = TestScratchDir("regroup-bound");
  RankGroupPool pool(RankGroupOptions{RegroupingAdapter(logs), 0, 5}, Ranks(3));
  std::unique_ptr<RankGroup> a, b, c;
  ASSERT_TRUE(pool.Acquire(3, &a).ok());
  ASSERT_TRUE(pool.Release(std::move(a)).ok());
  ASSERT_TRUE(pool.Acquire(1, &a).ok());  // breaks the group of three up: two ranks free
  ASSERT_TRUE(pool.Acquire(2, &b).ok());  // the two free ranks
  ASSERT_TRUE(pool.Acquire(1, &c).ok());  // none free: one started
  EXPECT_EQ(pool.ranks_started(), 1u);
  const std::vector<pid_t> freed = Pids(*a), kept_b = Pids(*b), kept_c = Pids(*c);
  ASSERT_TRUE(pool.Release(std::move(a)).ok());
  ASSERT_TRUE(pool.Release(std::move(b)).ok());
  // c takes the place of the idle group of its size, whose rank is freed: four idle ranks, one
  // over the bound, and the free rank gives way, not a group.
  ASSERT_TRUE(pool.Release(std::move(c)).ok());
  EXPECT_EQ(pool.free_ranks(), 0u);
  EXPECT_EQ(pool.idle(), 2u);
  EXPECT_EQ(pool.idle_ranks(), 3u);
  ExpectNoProcessLeft(freed);
  for (pid_t pid : {kept_b[0], kept_b[1], kept_c[0]}) EXPECT_EQ(kill(pid, 0), 0) << pid;
  std::filesystem::remove_all(logs);
}

// "4 GiB" for a whole number of GiB, else "N MiB".
std::string Binary(uint64_t bytes) {
  return bytes % (uint64_t{1} << 30) == 0 ? std::to_string(bytes >> 30) + " GiB"
                                          : std::to_string(bytes >> 20) + " MiB";
}

TEST(RankGroupPool, TheProtocolDocumentStatesTheAdapterTargetsBounds) {
  std::ifstream in(std::string(CKPTSPEC_SOURCE_DIR) + "/docs/PROTOCOL.md");
  std::stringstream text;
  text << in.rdbuf();
  std::string flat;  // line breaks and indentation as single spaces
  for (char c : text.str()) {
    if (c == '\n' || c == ' ') {
      if (!flat.empty() && flat.back() != ' ') flat += ' ';
    } else {
      flat += c;
    }
  }
  const std::string stated =
      "idle groups of at most " + Binary(kAdapterTargetIdleBounds.max_bytes) +
      " of resident memory and " + std::to_string(kAdapterTargetIdleBounds.max_ranks) + " ranks";
  EXPECT_NE(flat.find(stated), std::string::npos) << "docs/PROTOCOL.md should say: " << stated;
}

}  // namespace
}  // namespace ckptspec
