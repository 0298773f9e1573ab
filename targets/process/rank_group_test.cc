// The launcher and the protocol layer against tiny shell adapters: every verdict a misbehaving
// process can earn, and no process left behind after any of them.
#include "targets/process/rank_group.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "targets/process/process_test_util.h"

#include "base/env.h"

namespace ckptspec {
namespace {

// A shell adapter that answers every request correctly (ids taken from the request line) and
// names its environment in hello's "adapter"; `before_reply` runs before each reply.
std::string ShellAdapter(const std::string& before_reply = "") {
  return "while read -r line; do "
         "id=$(printf '%s' \"$line\" | sed 's/.*\"id\":\\([0-9]*\\).*/\\1/'); " +
         before_reply +
         "printf '{\"id\":%s,\"rank\":%s,\"ok\":true,\"protocol\":1,"
         "\"adapter\":\"%s %s %s %s %s\",\"capabilities\":{\"objects\":true}}\\n' "
         "\"$id\" \"$RANK\" \"$WORLD_SIZE\" \"$LOCAL_RANK\" \"$MASTER_ADDR\" \"$MASTER_PORT\" "
         "\"$CKPTSPEC_PROTOCOL\"; done";
}

class RankGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ckptspec-rank-group-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)Env::Posix()->RemoveTree(dir_); }

  std::unique_ptr<RankGroup> Group(const std::string& command, int world, double timeout_s = 5) {
    return std::make_unique<RankGroup>(RankGroupOptions{command, world, timeout_s}, &ids_);
  }

  std::string dir_;
  RequestIds ids_;
};

TEST_F(RankGroupTest, StartsRanksWithTheirEnvironmentAndExchangesLines) {
  std::vector<pid_t> pids;
  {
    auto group = Group(ShellAdapter(), 3);
    HelloReply hello;
    ASSERT_TRUE(group->Start(&hello).ok());
    EXPECT_TRUE(hello.capabilities.objects);
    EXPECT_FALSE(hello.capabilities.resharding);
    EXPECT_EQ(hello.adapter, "3 0 127.0.0.1 " + std::to_string(group->master_port()) + " 1");
    std::vector<nlohmann::json> replies;
    ASSERT_TRUE(
        group->Call("finalize", std::vector<nlohmann::json>(3, nlohmann::json::object()), &replies)
            .ok());
    for (int r = 0; r < 3; ++r) EXPECT_EQ(replies[r]["rank"], r);
    pids = group->pids();
    EXPECT_TRUE(group->Shutdown().ok());  // the shell loop ends at end of input
    EXPECT_FALSE(group->last_fault().has_value());
  }
  ExpectNoProcessLeft(pids);
}

struct FaultCase {
  const char* name;
  std::string command;
  AdapterFault fault;
  int rank;
  const char* detail;  // a part of the message
};

class RankGroupFaultTest : public RankGroupTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(RankGroupFaultTest, GivesTheNamedVerdictAndLeavesNothing) {
  const FaultCase& c = GetParam();
  auto group = Group(c.command, 2, /*timeout_s=*/0.5);
  HelloReply hello;
  const Status s = group->Start(&hello);
  ASSERT_FALSE(s.ok());
  ASSERT_TRUE(group->last_fault().has_value()) << s.ToString();
  EXPECT_EQ(*group->last_fault(), c.fault) << s.ToString();
  EXPECT_EQ(group->last_fault_rank(), c.rank) << s.ToString();
  const std::string prefix =
      "adapter rank " + std::to_string(c.rank) + ": " + AdapterFaultName(c.fault) + ": ";
  EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << s.ToString();
  EXPECT_NE(s.message().find(c.detail), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("hello"), std::string::npos) << s.ToString();
  EXPECT_FALSE(group->alive());
  ExpectNoProcessLeft(group->pids());
}

// Rank 1 misbehaves in each case (rank 0 answers properly).
std::string OnRank1(const std::string& misbehaviour) {
  return "if [ \"$RANK\" = 1 ]; then " + misbehaviour + "; else " + ShellAdapter() + "; fi";
}

INSTANTIATE_TEST_SUITE_P(
    Verdicts, RankGroupFaultTest,
    ::testing::Values(
        FaultCase{"exits", OnRank1("read -r l; echo dying >&2; exit 3"), AdapterFault::kExited, 1,
                  "exited with status 3 during hello (request 1); stderr: dying"},
        FaultCase{"crashes", OnRank1("read -r l; kill -9 $$"), AdapterFault::kCrashed, 1,
                  "killed by signal 9 (SIGKILL)"},
        FaultCase{"hangs", OnRank1("read -r l; sleep 30"), AdapterFault::kTimedOut, 1,
                  "no reply within 0.5"},
        FaultCase{"speaks garbage", OnRank1("read -r l; echo hello world; sleep 30"),
                  AdapterFault::kGarbage, 1, "is not a JSON object: 'hello world'"},
        FaultCase{"answers twice",
                  OnRank1("read -r l; printf '{\"id\":1,\"rank\":1,\"ok\":true,\"protocol\":1,"
                          "\"capabilities\":{}}\\n{}\\n'; sleep 30"),
                  AdapterFault::kGarbage, 1, "more than one line"},
        FaultCase{"answers for rank 0", "export RANK=0; " + ShellAdapter(),
                  AdapterFault::kWrongRank, 1, "as rank 0"},
        FaultCase{"answers another request",
                  OnRank1("read -r l; echo '{\"id\":99,\"rank\":1,\"ok\":true}'; sleep 30"),
                  AdapterFault::kWrongRequest, 1,
                  "answered request 99 while hello (request 1) was pending"},
        FaultCase{"forgets ok", OnRank1("read -r l; echo '{\"id\":1,\"rank\":1}'; sleep 30"),
                  AdapterFault::kMalformedReply, 1, "no boolean \"ok\""},
        FaultCase{"declares an unknown capability",
                  OnRank1("read -r l; echo '{\"id\":1,\"rank\":1,\"ok\":true,\"protocol\":1,"
                          "\"capabilities\":{\"telepathy\":true}}'; sleep 30"),
                  AdapterFault::kMalformedReply, 1,
                  "hello.capabilities: unknown member \"telepathy\""},
        FaultCase{"speaks another version",
                  OnRank1("read -r l; echo '{\"id\":1,\"rank\":1,\"ok\":true,\"protocol\":2,"
                          "\"capabilities\":{}}'; sleep 30"),
                  AdapterFault::kMalformedReply, 1, "speaks version 2"},
        FaultCase{"is no command",
                  "if [ \"$RANK\" = 0 ]; then ckptspec-no-such-adapter-command; else " +
                      ShellAdapter() + "; fi",
                  AdapterFault::kExited, 0, "exited with status 127"}),
    [](const ::testing::TestParamInfo<FaultCase>& info) {
      std::string name = info.param.name;
      for (char& ch : name) ch = isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

TEST_F(RankGroupTest, AnErrorReplyIsNoFault) {
  auto group = Group(
      "read -r l; "
      "printf '{\"id\":1,\"rank\":%s,\"ok\":true,\"protocol\":1,\"capabilities\":{}}\\n' $RANK; "
      "read -r l; printf '{\"id\":2,\"rank\":%s,\"ok\":false,\"error\":{\"code\":\"NotFound\","
      "\"message\":\"nothing\"}}\\n' $RANK; read -r l",
      1);
  HelloReply hello;
  ASSERT_TRUE(group->Start(&hello).ok());
  std::vector<nlohmann::json> replies;
  ASSERT_TRUE(group->Call("load", {nlohmann::json::object()}, &replies).ok());
  EXPECT_FALSE(replies[0]["ok"].get<bool>());
  EXPECT_TRUE(group->alive());
  EXPECT_FALSE(group->last_fault().has_value());
}

TEST_F(RankGroupTest, ARefusedHelloEndsTheGroupWithTheAdaptersError) {
  auto group = Group(
      "read -r l; printf '{\"id\":1,\"rank\":%s,\"ok\":false,\"error\":{\"code\":\"NotSupported\","
      "\"message\":\"protocol 1 unknown\"}}\\n' $RANK; read -r l",
      2);
  HelloReply hello;
  const Status s = group->Start(&hello);
  EXPECT_EQ(s.code(), Status::Code::kNotSupported) << s.ToString();
  EXPECT_EQ(s.message(), "adapter rank 0 refused hello: protocol 1 unknown");
  EXPECT_FALSE(group->alive());
  EXPECT_FALSE(group->last_fault().has_value());
  ExpectNoProcessLeft(group->pids());
}

// A reply of 16 MiB arrives in hundreds of reads: it is read whole, as one line.
TEST_F(RankGroupTest, AReplyOfManyReadsIsReadWhole) {
  auto group = Group(
      "read -r l; printf '{\"id\":1,\"rank\":0,\"ok\":true,\"protocol\":1,"
      "\"capabilities\":{},\"adapter\":\"'; head -c 16777216 /dev/zero | tr '\\0' a; "
      "printf '\"}\\n'; read -r l",
      1, /*timeout_s=*/20);
  HelloReply hello;
  const Status s = group->Start(&hello);
  ASSERT_TRUE(s.ok()) << s.ToString().substr(0, 400);
  EXPECT_EQ(hello.adapter, std::string(size_t{16} << 20, 'a'));
}

// A reply line is at most 256 MiB: one byte more, without a newline, is garbage, found as soon as
// it has arrived (well within the deadline: reading it costs time linear in its size).
TEST_F(RankGroupTest, AReplyLineOverTheLimitIsGarbageNamingTheLimit) {
  auto group =
      Group("read -r l; head -c 268435457 /dev/zero | tr '\\0' x; sleep 60", 1, /*timeout_s=*/20);
  HelloReply hello;
  const Status s = group->Start(&hello);
  ASSERT_TRUE(group->last_fault().has_value()) << s.ToString().substr(0, 400);
  EXPECT_EQ(*group->last_fault(), AdapterFault::kGarbage) << s.ToString().substr(0, 400);
  EXPECT_NE(s.message().find("a reply line longer than 268435456 bytes during hello (request 1): "
                             "'xxxxxxxx"),
            std::string::npos)
      << s.ToString().substr(0, 400);
  ExpectNoProcessLeft(group->pids());
}

TEST_F(RankGroupTest, DestroyingAGroupMidRequestKillsEverything) {
  std::vector<pid_t> pids;
  {
    auto group = Group(ShellAdapter("sleep 30; "), 2, 0.2);
    HelloReply hello;
    EXPECT_FALSE(group->Start(&hello).ok());  // timed out: the group is already dead
    pids = group->pids();
  }
  ExpectNoProcessLeft(pids);
  {
    auto group = Group(ShellAdapter(), 2);
    HelloReply hello;
    ASSERT_TRUE(group->Start(&hello).ok());
    pids = group->pids();
  }  // destroyed alive, without Shutdown
  ExpectNoProcessLeft(pids);
}

}  // namespace
}  // namespace ckptspec
