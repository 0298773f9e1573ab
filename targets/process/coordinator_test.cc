// The coordinator of launched ranks and the launched pool, against fake ranks: threads of this
// test that dial in over TCP as a launcher's rank would, and answer the protocol's requests.
#include "targets/process/coordinator.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "targets/process/rank_group_pool.h"

namespace ckptspec {
namespace {

using nlohmann::json;

struct FakeRankOptions {
  int launch_rank = 0;
  int world_size = 1;
  std::string host = "node0";
  std::string token;             // empty: the coordinator's
  bool regroup = true;           // declares reset and regroup
  std::string disconnect_on_op;  // closes its connection when sent this op
};

FakeRankOptions Rank(int launch_rank, int world_size, const std::string& host,
                     const std::string& token = "") {
  FakeRankOptions o;
  o.launch_rank = launch_rank;
  o.world_size = world_size;
  o.host = host;
  o.token = token;
  return o;
}

// A rank that dials in to `address`, says connect, and answers every request with ok (its rank:
// the last hello's) until shutdown, end of file, or its disconnect_on_op. `refusal` receives the
// coordinator's answer to connect when it is not {"ok": true}.
class FakeRank {
 public:
  FakeRank(const Coordinator& coordinator, FakeRankOptions options) : options_(std::move(options)) {
    if (options_.token.empty()) options_.token = coordinator.token();
    thread_ = std::thread([this, address = coordinator.address()] { Run(address); });
  }
  ~FakeRank() { thread_.join(); }
  std::string refusal() {
    thread_.join();
    thread_ = std::thread([] {});
    return refusal_;
  }

 private:
  bool ReadLine(int fd, std::string* line) {
    for (;;) {
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        *line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return true;
      }
      char chunk[4096];
      const ssize_t got = read(fd, chunk, sizeof(chunk));
      if (got <= 0) return false;
      buffer_.append(chunk, static_cast<size_t>(got));
    }
  }
  static void Send(int fd, const json& j) {
    const std::string text = j.dump() + "\n";
    (void)!send(fd, text.data(), text.size(), MSG_NOSIGNAL);
  }
  void Run(const std::string& address) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    const size_t colon = address.rfind(':');
    inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
    timeval limit{30, 0};  // a test that goes wrong fails instead of hanging
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      refusal_ = "connect failed";
      close(fd);
      return;
    }
    Send(fd, {{"op", "connect"},
              {"protocol", 1},
              {"token", options_.token},
              {"rank", options_.launch_rank},
              {"world_size", options_.world_size},
              {"host", options_.host},
              {"pid", 1000 + options_.launch_rank}});
    std::string line;
    if (!ReadLine(fd, &line) || json::parse(line) != json{{"ok", true}}) {
      refusal_ = line.empty() ? "closed" : line;
      close(fd);
      return;
    }
    int rank = options_.launch_rank;
    json caps = {{"objects", true}};
    if (options_.regroup) caps.update({{"reset", true}, {"regroup", true}});
    while (ReadLine(fd, &line)) {
      const json request = json::parse(line);
      const std::string op = request["op"];
      if (op == options_.disconnect_on_op) break;
      if (op == "hello") rank = request["rank"];
      Send(fd, {{"id", request["id"]},
                {"rank", rank},
                {"ok", true},
                {"protocol", 1},
                {"capabilities", caps}});
      if (op == "shutdown") break;
    }
    close(fd);
  }

  FakeRankOptions options_;
  std::string refusal_;
  std::string buffer_;
  std::thread thread_;
};

// Fake ranks 0..hosts.size()-1 of one world, rank r on hosts[r].
std::vector<std::unique_ptr<FakeRank>> LaunchFakeRanks(const Coordinator& coordinator,
                                                       const std::vector<std::string>& hosts,
                                                       FakeRankOptions base = {}) {
  std::vector<std::unique_ptr<FakeRank>> ranks;
  for (size_t r = 0; r < hosts.size(); ++r) {
    FakeRankOptions o = base;
    o.launch_rank = static_cast<int>(r);
    o.world_size = static_cast<int>(hosts.size());
    o.host = hosts[r];
    ranks.push_back(std::make_unique<FakeRank>(coordinator, o));
  }
  return ranks;
}

TEST(Coordinator, ListensOnlyOnTheInterfaceAskedFor) {
  Coordinator c;
  ASSERT_TRUE(c.Listen("localhost:0").ok());
  EXPECT_EQ(c.address().rfind("127.0.0.1:", 0), 0u) << c.address();
  EXPECT_EQ(c.token().size(), 64u);
  Coordinator other;
  EXPECT_NE(other.Listen("127.0.0.1:0").ok() ? other.token() : "", c.token())
      << "every run has its own token";
  for (const std::string bad : {"node1:5", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:-1"}) {
    Coordinator refused;
    const Status s = refused.Listen(bad);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s.ToString();
  }
}

TEST(Coordinator, TheFileHoldsTheAddressAndTheTokenForItsOwnerAlone) {
  Coordinator c;
  ASSERT_TRUE(c.Listen("127.0.0.1:0").ok());
  const std::string path = ::testing::TempDir() + "/coordinator-" + std::to_string(getpid());
  ASSERT_TRUE(c.WriteFile(path).ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(path);
  const json written = json::parse(in);
  EXPECT_EQ(written, (json{{"address", c.address()}, {"token", c.token()}}));
  unlink(path.c_str());
}

TEST(Coordinator, TheRanksComeInLaunchOrderWithTheirHosts) {
  Coordinator c;
  ASSERT_TRUE(c.Listen("127.0.0.1:0").ok());
  auto fakes = LaunchFakeRanks(c, {"a", "a", "b"});
  std::vector<std::unique_ptr<SocketRank>> ranks;
  ASSERT_TRUE(c.AcceptRanks(3, 20, &ranks).ok());
  ASSERT_EQ(ranks.size(), 3u);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(ranks[r]->launch_rank(), r);
  EXPECT_EQ(ranks[2]->Where(), "launch rank 2 on host b, pid 1002");
  EXPECT_EQ(c.refusals(), 0u);
  ranks.clear();  // the fakes see end of file and leave
}

TEST(Coordinator, AWrongTokenAnOutOfRangeRankAndATwinAreRefusedAndNamed) {
  Coordinator c;
  ASSERT_TRUE(c.Listen("127.0.0.1:0").ok());
  FakeRank wrong_token(c, Rank(0, 2, "a", std::string(64, '0')));
  FakeRank out_of_range(c, Rank(5, 2, "a"));
  FakeRank other_world(c, Rank(1, 3, "a"));
  FakeRank first(c, Rank(0, 2, "a"));
  std::vector<std::unique_ptr<SocketRank>> ranks;
  const Status s = c.AcceptRanks(2, 2, &ranks);  // launch rank 1 never comes
  EXPECT_NE(wrong_token.refusal().find("wrong token"), std::string::npos);
  EXPECT_NE(out_of_range.refusal().find("rank 5 is not in 0..1"), std::string::npos);
  EXPECT_NE(other_world.refusal().find("world size 3"), std::string::npos);
  EXPECT_EQ(c.refusals(), 3u);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("start failed: launch rank 1 never connected"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("3 connections refused"), std::string::npos) << s.ToString();
  EXPECT_TRUE(ranks.empty());
}

TEST(Coordinator, ASecondRankWithTheSameLaunchRankIsRefused) {
  Coordinator c;
  ASSERT_TRUE(c.Listen("127.0.0.1:0").ok());
  FakeRank zero(c, Rank(0, 2, "a"));
  FakeRank twin(c, Rank(0, 2, "b"));
  std::vector<std::unique_ptr<SocketRank>> ranks;
  const Status s = c.AcceptRanks(2, 3, &ranks);  // launch rank 1 never comes
  EXPECT_NE(s.message().find("launch rank 1 never connected"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("1 connection refused, the last: launch rank 0 is already connected"),
            std::string::npos)
      << s.ToString();
  const std::string refusals = zero.refusal() + twin.refusal();
  EXPECT_NE(refusals.find("already connected"), std::string::npos) << "either twin may be first";
}

// A launched pool over fake ranks on `hosts`.
std::shared_ptr<RankGroupPool> LaunchedPool(Coordinator* c, size_t n) {
  std::vector<std::unique_ptr<SocketRank>> ranks;
  EXPECT_TRUE(c->AcceptRanks(static_cast<int>(n), 20, &ranks).ok());
  return RankGroupPool::Launched(RankGroupOptions{"", 0, 5}, std::move(ranks));
}

std::vector<std::string> Where(const RankGroup& group) {
  std::vector<std::string> out;
  for (int r = 0; r < group.world_size(); ++r) out.push_back(group.rank(r).Where());
  return out;
}

TEST(LaunchedPool, ServesEveryWorldSizeUpToItsRanksWithGroupsThatSpanHosts) {
  Coordinator c;
  ASSERT_TRUE(c.Listen("127.0.0.1:0").ok());
  auto fakes = LaunchFakeRanks(c, {"a", "a", "b", "b"});
  auto pool = LaunchedPool(&c, 4);
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool->Acquire(2, &group).ok());
  EXPECT_EQ(Where(*group), (std::vector<std::string>{"launch rank 0 on host a, pid 1000",
                                                     "launch rank 2 on host b, pid 1002"}));
  EXPECT_TRUE(group->pids().empty()) << "no process of this host";
  ASSERT_TRUE(pool->Release(std::move(group)).ok());
  ASSERT_TRUE(pool->Acquire(3, &group).ok());
  EXPECT_EQ(Where(*group)[2], "launch rank 1 on host a, pid 1001");
  const std::string first_name = group->name();
  ASSERT_TRUE(pool->Release(std::move(group)).ok());
  ASSERT_TRUE(pool->Acquire(4, &group).ok());
  EXPECT_NE(group->name(), first_name) << "each group its own name (its store prefix)";
  std::unique_ptr<RankGroup> more;
  const Status s = pool->Acquire(1, &more);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("needs 1 ranks; the launched pool has 4 (0 of them idle)"),
            std::string::npos)
      << s.ToString();
  ASSERT_TRUE(pool->Release(std::move(group)).ok());
  EXPECT_EQ(pool->ranks_started(), 0u) << "a launched pool never starts a rank";
  pool.reset();  // shuts the ranks down: the fakes leave
}

TEST(LaunchedPool, ARankThatDisconnectsIsNamedWithItsHostAndIsGoneForGood) {
  Coordinator c;
  ASSERT_TRUE(c.Listen("127.0.0.1:0").ok());
  std::vector<std::unique_ptr<FakeRank>> fakes;
  fakes.push_back(std::make_unique<FakeRank>(c, Rank(0, 2, "a")));
  FakeRankOptions lost = Rank(1, 2, "b");
  lost.disconnect_on_op = "save";
  fakes.push_back(std::make_unique<FakeRank>(c, lost));
  auto pool = LaunchedPool(&c, 2);
  std::unique_ptr<RankGroup> group;
  ASSERT_TRUE(pool->Acquire(2, &group).ok());
  std::vector<json> replies;
  const Status s = group->Call("save", {json::object(), json::object()}, &replies);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("adapter rank 1: exited: disconnected from the coordinator during "
                             "save"),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("(launch rank 1 on host b, pid 1001); its stderr is with its "
                             "launcher on host b"),
            std::string::npos)
      << s.ToString();
  EXPECT_FALSE(group->alive());
  ASSERT_TRUE(pool->Release(std::move(group)).ok());
  const Status again = pool->Acquire(1, &group);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find("lost: launch rank 0 on host a, pid 1000; launch rank 1 on host "
                                 "b, pid 1001"),
            std::string::npos)
      << again.ToString();
  EXPECT_NE(again.message().find("(adapter rank 1: exited: disconnected from the coordinator "
                                 "during save"),
            std::string::npos)
      << "the lost ranks' record says why";
}

TEST(LaunchedPool, LaunchedRanksMustDeclareRegroup) {
  Coordinator c;
  ASSERT_TRUE(c.Listen("127.0.0.1:0").ok());
  FakeRankOptions plain;
  plain.regroup = false;
  auto fakes = LaunchFakeRanks(c, {"a", "b"}, plain);
  auto pool = LaunchedPool(&c, 2);
  std::unique_ptr<RankGroup> group;
  const Status s = pool->Acquire(2, &group);
  EXPECT_NE(s.message().find("must declare reset and regroup"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace ckptspec
