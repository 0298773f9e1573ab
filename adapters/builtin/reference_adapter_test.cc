// The protocol path end to end: ProcessEngine and the adapter target factory against the built-in
// adapter, its injected faults (each a named verdict, with nothing left running), and properties
// run through it as they run in process.
#include <signal.h>
#include <sys/wait.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "targets/process/process_test_util.h"

#include "runner/adapter_target.h"
#include "properties/property.h"
#include "runner/runner.h"
#include "base/env.h"
#include "targets/process/cleanup_registry.h"
#include "targets/process/process_engine.h"
#include "targets/process/rank_group_pool.h"

namespace ckptspec {
namespace {

const std::string kAdapter = CKPTSPEC_REFERENCE_ADAPTER;

// Rank r of `world` holds rows [2r, 2r+2) of a [2*world, 2] fp32 tensor "w" and object "rng" shard r.
std::vector<ShardedStateDict> Dicts(int world, float base) {
  std::vector<ShardedStateDict> dicts(world);
  for (int r = 0; r < world; ++r) {
    ShardedTensor t;
    t.spec.key = "w";
    t.spec.dtype = DType::kFloat32;
    t.spec.global_shape = {2 * world, 2};
    t.spec.global_offset = {2 * r, 0};
    t.spec.local_shape = {2, 2};
    t.spec.axis_fragmentations = {world, 1};
    t.spec.replica_id = {0};
    const float values[4] = {base + 4 * r, base + 4 * r + 1, base + 4 * r + 2, base + 4 * r + 3};
    t.data.resize(sizeof(values));
    std::memcpy(t.data.data(), values, sizeof(values));
    ShardedObject o;
    o.spec.key = "rng";
    o.spec.global_shape = {world};
    o.spec.global_offset = {r};
    o.data = "state of rank " + std::to_string(r);
    dicts[r].tensors.push_back(t);
    dicts[r].objects.push_back(o);
    dicts[r].common = nlohmann::json{{"iteration", base}};
  }
  return dicts;
}

class AdapterEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = FastTempRoot() + "/ckptspec-adapter-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)Env::Posix()->RemoveTree(dir_); }

  std::unique_ptr<ProcessEngine> Engine(const std::string& flags = "", double timeout_s = 20) {
    ProcessEngineOptions o;
    o.command = kAdapter + " " + flags;
    o.directory = JoinPath(dir_, "ckpt");
    o.work_dir = JoinPath(dir_, "work");
    o.timeout_s = timeout_s;
    return std::make_unique<ProcessEngine>(o);
  }

  static LoadRequest RequestFor(const std::vector<ShardedStateDict>& dicts) {
    LoadRequest request;
    for (const ShardedStateDict& d : dicts) request.templates.push_back(TemplateOf(d));
    return request;
  }

  std::string dir_;
};

TEST_F(AdapterEngineTest, SavesLoadsReshardsAndReportsAdapterErrors) {
  std::vector<pid_t> pids;
  {
    auto engine = Engine();
    LoadResult result;
    const Status none = engine->Load(RequestFor(Dicts(2, 1)), &result);
    EXPECT_EQ(none.code(), Status::Code::kNotFound) << none.ToString();
    EXPECT_EQ(none.message().rfind("adapter ranks 0, 1: ", 0), 0u)
        << none.ToString();  // both said it
    EXPECT_TRUE(engine->capabilities().resharding);

    const std::vector<ShardedStateDict> saved = Dicts(2, 10);
    ASSERT_TRUE(engine->Save(10, saved, SaveOptions()).ok());
    SaveOptions async;
    async.async = true;
    ASSERT_TRUE(engine->Save(20, Dicts(2, 20), async).ok());
    ASSERT_TRUE(engine->Finalize().ok());
    const Status again = engine->Save(20, Dicts(2, 20), SaveOptions());
    EXPECT_EQ(again.code(), Status::Code::kFailedPrecondition) << again.ToString();

    LoadRequest request = RequestFor(saved);
    request.iteration = 10;
    ASSERT_TRUE(engine->Load(std::move(request), &result).ok());
    EXPECT_EQ(result.iteration, 10);
    ASSERT_EQ(result.state.size(), 2u);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(result.state[r].tensors[0].data, saved[r].tensors[0].data);
      EXPECT_EQ(result.state[r].objects[0].data, saved[r].objects[0].data);
      EXPECT_EQ(result.state[r].common, saved[r].common);
    }
    const std::vector<pid_t> two_ranks = engine->started_pids();

    // One rank reads the whole tensor: a new group of one, the old one gone.
    LoadRequest whole;
    whole.templates.resize(1);
    ShardedTensor t = saved[0].tensors[0];
    t.spec.global_offset = {0, 0};
    t.spec.local_shape = {4, 2};
    t.spec.axis_fragmentations = {1, 1};
    t.data.assign(32, 0);
    whole.templates[0].tensors.push_back(t);
    whole.templates[0].tensors.push_back(t);
    whole.templates[0].tensors[1].spec.key = "absent";
    whole.strict = StrictMode::kReturnUnexpected;
    ASSERT_TRUE(engine->Load(std::move(whole), &result).ok());
    EXPECT_EQ(result.iteration, 20);
    ASSERT_EQ(result.state[0].tensors.size(), 1u);  // "absent" dropped
    ASSERT_EQ(result.unexpected.size(), 1u);
    EXPECT_EQ(result.unexpected[0], std::vector<std::string>{"absent"});
    float first = 0, last = 0;
    std::memcpy(&first, result.state[0].tensors[0].data.data(), 4);
    std::memcpy(&last, result.state[0].tensors[0].data.data() + 28, 4);
    EXPECT_EQ(first, 20);
    EXPECT_EQ(last, 27);
    ExpectNoProcessLeft(two_ranks);

    std::vector<ShardedStateDict> bad = Dicts(2, 30);
    bad[1].tensors[0].spec.global_offset = {0, 0};  // both ranks claim the first rows
    const Status refused = engine->Save(30, bad, SaveOptions());
    EXPECT_EQ(refused.code(), Status::Code::kInvalidArgument) << refused.ToString();
    pids = engine->started_pids();
  }
  ExpectNoProcessLeft(pids);
}

// Revision 3: an async save of the caller's own dicts, every tensor on the host; the caller then
// writes other values into them in place, step after step, polling after each. The polls hand the
// changed bytes to the adapter, which writes them into its save input: the reference's staging
// copied, so the checkpoint holds the values at Save; served with B28's engine and writing at the
// completing poll (--deferred-async), the checkpoint holds the last values the polls delivered.
// Without the poll capability nothing is asked (the save reads incomplete until Finalize) and
// nothing is delivered. Returns rank r's loaded tensor bytes.
std::vector<std::vector<uint8_t>> AsyncSaveWithInPlaceUpdates(std::unique_ptr<ProcessEngine> engine,
                                                              bool polls_declared,
                                                              std::vector<ShardedStateDict>* last) {
  const std::vector<ShardedStateDict> saved = Dicts(2, 10);
  auto live = std::make_shared<std::vector<ShardedStateDict>>(saved);
  SaveOptions async;
  async.async = true;
  EXPECT_TRUE(
      engine->Save(10, SaveInput(live, EveryTensorOn(*live, Placement::kHost)), async).ok());
  for (int step = 0; step < 3; ++step) {
    for (ShardedStateDict& d : *live) {
      for (uint8_t& byte : d.tensors[0].data) byte ^= 0x5A;  // a training step, in place
    }
    bool complete = true;
    EXPECT_TRUE(engine->Poll(&complete).ok());
    if (!polls_declared) {
      EXPECT_FALSE(complete);
    }
    if (complete) break;
  }
  *last = *live;
  EXPECT_TRUE(engine->Finalize().ok());
  bool complete = false;
  EXPECT_TRUE(engine->Poll(&complete).ok());
  EXPECT_TRUE(complete);  // nothing pending
  LoadRequest request;
  for (const ShardedStateDict& d : saved) request.templates.push_back(TemplateOf(d));
  LoadResult result;
  const Status loaded = engine->Load(std::move(request), &result);
  EXPECT_TRUE(loaded.ok()) << loaded.ToString();
  EXPECT_EQ(result.iteration, 10);
  std::vector<std::vector<uint8_t>> bytes;
  for (const ShardedStateDict& d : result.state) bytes.push_back(d.tensors.at(0).data);
  const std::vector<pid_t> pids = engine->started_pids();
  engine.reset();
  ExpectNoProcessLeft(pids);
  return bytes;
}

TEST_F(AdapterEngineTest, PollsCarryInPlaceUpdatesThatNeverReachTheStagedSave) {
  const std::vector<ShardedStateDict> saved = Dicts(2, 10);
  std::vector<ShardedStateDict> last;
  for (const std::string flags :
       {"", "--no-packed", "--deferred-async", "--no-poll", "--mutant B28 --no-poll"}) {
    SCOPED_TRACE(flags);
    (void)Env::Posix()->RemoveTree(JoinPath(dir_, "ckpt"));
    const auto loaded = AsyncSaveWithInPlaceUpdates(
        Engine(flags), flags.find("no-poll") == std::string::npos, &last);
    ASSERT_EQ(loaded.size(), 2u);
    for (int r = 0; r < 2; ++r) EXPECT_EQ(loaded[r], saved[r].tensors[0].data);
  }
  (void)Env::Posix()->RemoveTree(JoinPath(dir_, "ckpt"));
  const auto aliased =
      AsyncSaveWithInPlaceUpdates(Engine("--mutant B28 --deferred-async"), true, &last);
  ASSERT_EQ(aliased.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(aliased[r], saved[r].tensors[0].data);
    EXPECT_EQ(aliased[r], last[r].tensors[0].data);  // the first poll's delivery, written by it
  }
}

// Live groups (docs/PROTOCOL.md, revision 2): engine after engine, each over its own directory,
// served by the same processes, reset in between.
TEST_F(AdapterEngineTest, EnginesSharingAPoolReuseResetProcessesAcrossDirectories) {
  auto pool = std::make_shared<RankGroupPool>(RankGroupOptions{kAdapter, 0, 20},
                                              IdleBounds{4, UINT64_MAX, 0});
  const auto engine_over = [&](const std::string& name) {
    ProcessEngineOptions o;
    o.command = kAdapter;
    o.directory = JoinPath(dir_, name);
    o.work_dir = JoinPath(dir_, "work");
    o.timeout_s = 20;
    o.pool = pool;
    return std::make_unique<ProcessEngine>(o);
  };
  std::vector<pid_t> first;
  {
    auto engine = engine_over("case1");
    ASSERT_TRUE(engine->Save(10, Dicts(2, 10), SaveOptions()).ok());
    first = engine->started_pids();
    ASSERT_EQ(first.size(), 2u);
  }
  EXPECT_EQ(pool->idle(), 1u);
  {
    auto engine = engine_over("case2");
    LoadResult result;
    const Status none = engine->Load(RequestFor(Dicts(2, 1)), &result);
    EXPECT_EQ(none.code(), Status::Code::kNotFound)
        << "a new directory is empty: " << none.ToString();
    EXPECT_TRUE(engine->started_pids().empty()) << "no process was started for the second engine";
    EXPECT_EQ(engine->group()->pids(), first);
    ASSERT_TRUE(engine->Save(5, Dicts(2, 5), SaveOptions()).ok());
    LoadRequest request = RequestFor(Dicts(2, 5));
    ASSERT_TRUE(engine->Load(std::move(request), &result).ok());
    EXPECT_EQ(result.iteration, 5);
  }
  {
    // The first directory again: its save is there.
    auto engine = engine_over("case1");
    LoadResult result;
    ASSERT_TRUE(engine->Load(RequestFor(Dicts(2, 10)), &result).ok());
    EXPECT_EQ(result.iteration, 10);
    EXPECT_EQ(engine->group()->pids(), first);
  }
  EXPECT_EQ(pool->started(), 1u);
  pool.reset();
  ExpectNoProcessLeft(first);
}

TEST_F(AdapterEngineTest, WithoutResetEachEngineStartsItsOwnProcesses) {
  auto pool = std::make_shared<RankGroupPool>(RankGroupOptions{kAdapter + " --no-reset", 0, 20},
                                              IdleBounds{4, UINT64_MAX, 0});
  std::vector<pid_t> pids;
  for (int i = 0; i < 2; ++i) {
    ProcessEngineOptions o;
    o.command = kAdapter + " --no-reset";
    o.directory = JoinPath(dir_, "ckpt");
    o.work_dir = JoinPath(dir_, "work");
    o.pool = pool;
    ProcessEngine engine(o);
    ASSERT_TRUE(engine.Save(10 + i, Dicts(1, 1), SaveOptions()).ok());
    EXPECT_FALSE(engine.group()->hello().reset);
    pids.insert(pids.end(), engine.started_pids().begin(), engine.started_pids().end());
  }
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_EQ(pool->started(), 2u);
  EXPECT_EQ(pool->idle(), 0u);
  ExpectNoProcessLeft(pids);
}

// Ranks that fail differently are all named; ranks that agree are named together.
TEST_F(AdapterEngineTest, TheErrorOfEveryFailingRankIsReported) {
  const std::string replies =
      "while read -r line; do id=$(printf '%s' \"$line\" | sed 's/.*\"id\":\\([0-9]*\\).*/\\1/'); "
      "case \"$line\" in *hello*) printf '{\"id\":%s,\"rank\":%s,\"ok\":true,\"protocol\":1,"
      "\"capabilities\":{}}\\n' \"$id\" \"$RANK\";; "
      "*) if [ \"$RANK\" = 0 ]; then msg='duplicate main replica of w'; code=InvalidArgument; "
      "else msg='collective failed on the coordinator'; code=IOError; fi; "
      "printf "
      "'{\"id\":%s,\"rank\":%s,\"ok\":false,\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\\n' "
      "\"$id\" \"$RANK\" \"$code\" \"$msg\";; esac; done";
  ProcessEngineOptions o;
  o.command = replies;
  o.directory = JoinPath(dir_, "ckpt");
  o.work_dir = JoinPath(dir_, "work");
  ProcessEngine engine(o);
  const Status s = engine.Save(1, Dicts(3, 1), SaveOptions());
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.message(),
            "adapter rank 0: duplicate main replica of w; ranks 1, 2: collective failed on the "
            "coordinator");
}

struct InjectedCase {
  const char* flags;
  AdapterFault verdict;
  int rank;
  const char* detail;
};

class AdapterFaultTest : public AdapterEngineTest,
                         public ::testing::WithParamInterface<InjectedCase> {};

TEST_P(AdapterFaultTest, EachInjectedFaultGetsItsVerdict) {
  const InjectedCase& c = GetParam();
  std::vector<pid_t> pids;
  {
    auto engine = Engine(c.flags, /*timeout_s=*/1.0);
    Status s = engine->Save(5, Dicts(2, 5), SaveOptions());
    if (s.ok()) {
      LoadResult result;
      s = engine->Load(RequestFor(Dicts(2, 5)), &result);
    }
    ASSERT_FALSE(s.ok());
    ASSERT_NE(engine->group(), nullptr);
    ASSERT_TRUE(engine->group()->last_fault().has_value()) << s.ToString();
    EXPECT_EQ(*engine->group()->last_fault(), c.verdict) << s.ToString();
    EXPECT_EQ(engine->group()->last_fault_rank(), c.rank) << s.ToString();
    EXPECT_NE(s.message().find(c.detail), std::string::npos) << s.ToString();
    pids = engine->started_pids();
    ExpectNoProcessLeft(pids);  // killed at the verdict, before the engine goes
  }
}

INSTANTIATE_TEST_SUITE_P(
    Verdicts, AdapterFaultTest,
    ::testing::Values(
        InjectedCase{"--fault crash-save --fault-rank 1", AdapterFault::kCrashed, 1,
                     "killed by signal 9 (SIGKILL)"},
        InjectedCase{"--fault crash-save --fault-rank 0", AdapterFault::kCrashed, 0,
                     "killed by signal 9 (SIGKILL)"},
        InjectedCase{"--fault exit-save --fault-rank 1", AdapterFault::kExited, 1,
                     "exited with status 3 during save"},
        InjectedCase{"--fault hang-save --fault-rank 1", AdapterFault::kTimedOut, 1,
                     "no reply within 1"},
        InjectedCase{"--fault garbage --fault-rank 1", AdapterFault::kGarbage, 1,
                     "'this is not JSON'"},
        InjectedCase{"--fault wrong-rank --fault-rank 1", AdapterFault::kWrongRank, 1, "as rank 0"},
        InjectedCase{"--fault wrong-request --fault-rank 0", AdapterFault::kWrongRequest, 0,
                     "while save (request"},
        InjectedCase{"--fault malformed --fault-rank 1", AdapterFault::kMalformedReply, 1,
                     "no boolean \"ok\""},
        InjectedCase{"--fault wrong-size --fault-rank 1", AdapterFault::kWrongSize, 1,
                     "/r1.load, where tensor 'w' (template entry 0) lies at [0, 16)"},
        InjectedCase{"--fault wrong-size --fault-rank 1 --no-packed", AdapterFault::kWrongSize, 1,
                     "wrote 15 bytes for tensor 'w' (template entry 0), expected 16"}),
    [](const ::testing::TestParamInfo<InjectedCase>& info) {  // "crash_save_rank_1"
      std::string name = std::string(info.param.flags).substr(std::string("--fault ").size());
      for (char& ch : name) ch = isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      const size_t at = name.find("___fault_rank_");
      return name.substr(0, at) + "_rank_" + name.substr(at + std::string("___fault_rank_").size());
    });

TEST_F(AdapterEngineTest, ACrashMidSaveLeavesThePreviousCheckpointLoadable) {
  ASSERT_TRUE(Engine()->Save(1, Dicts(2, 1), SaveOptions()).ok());
  {
    auto crashing = Engine("--fault crash-save --fault-rank 0");
    const Status s = crashing->Save(2, Dicts(2, 2), SaveOptions());
    ASSERT_TRUE(crashing->group()->last_fault().has_value()) << s.ToString();
    EXPECT_EQ(*crashing->group()->last_fault(), AdapterFault::kCrashed);
    EXPECT_NE(s.message().find("fault crash-save: killing myself before creating"),
              std::string::npos)
        << s.ToString();  // the stderr tail
  }
  LoadResult result;
  ASSERT_TRUE(Engine()->Load(RequestFor(Dicts(2, 1)), &result).ok());
  EXPECT_EQ(result.iteration, 1);
  EXPECT_EQ(result.state[1].tensors[0].data, Dicts(2, 1)[1].tensors[0].data);
}

// A directory outside everything the harness owns, with one file the hostile adapters aim at.
class HostileAdapterTest : public AdapterEngineTest {
 protected:
  void SetUp() override {
    AdapterEngineTest::SetUp();
    std::string tmpl = FastTempRoot() + "/ckptspec-outside-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    outside_ = tmpl;
    ASSERT_TRUE(WriteFileSynced(Env::Posix(), Victim(), "precious").ok());
  }
  void TearDown() override {
    (void)Env::Posix()->RemoveTree(outside_);
    AdapterEngineTest::TearDown();
  }
  std::string Victim() const { return JoinPath(outside_, "victim.txt"); }
  std::vector<std::string> OutsideNames() const {
    std::vector<std::string> names;
    EXPECT_TRUE(Env::Posix()->GetChildren(outside_, &names).ok());
    return names;
  }

  std::string outside_;
};

// A symbolic link the adapter leaves in its checkpoint directory is removed itself by the
// harness's cleanup: the directory it points to keeps every file.
TEST_F(HostileAdapterTest, CleanupNeverFollowsALinkTheAdapterLeft) {
  UseFastTempDir();
  AdapterOptions options;
  options.command = kAdapter + " --fault link-out --fault-rank 1 --fault-path " + outside_;
  TargetFactory factory;
  ASSERT_TRUE(AdapterTargetFactory(options, &factory).ok());
  std::string root;
  {
    auto under_test = factory.make(TargetOptions());
    root = under_test->root();
    ASSERT_TRUE(under_test->target().engine().Save(1, Dicts(2, 1), SaveOptions()).ok());
    bool is_dir = false;
    ASSERT_TRUE(Env::Posix()->IsDirectory(JoinPath(root, "escape-link"), &is_dir).ok());
    EXPECT_TRUE(is_dir);  // the link is there, to the outside directory
  }
  EXPECT_EQ(Env::Posix()->FileExists(root).code(), Status::Code::kNotFound);  // cleaned up
  EXPECT_EQ(OutsideNames(), std::vector<std::string>{"victim.txt"});
  std::string content;
  ASSERT_TRUE(ReadFileToString(Env::Posix(), Victim(), 100, &content).ok());
  EXPECT_EQ(content, "precious");
}

// The adapter moves the harness's work directory aside and links the old path to a directory of
// its choice: the harness keeps creating its files in its own directory, never through the link.
TEST_F(HostileAdapterTest, TheHarnessNeverWritesThroughALinkPlantedInItsWorkDirectory) {
  auto engine = Engine("--fault move-scratch --fault-rank 0 --fault-path " + outside_);
  ASSERT_TRUE(engine->Save(1, Dicts(2, 1), SaveOptions()).ok());
  const Status second = engine->Save(2, Dicts(2, 2), SaveOptions());
  EXPECT_FALSE(second.ok());  // the adapter follows its own link and finds no input there
  EXPECT_EQ(OutsideNames(), std::vector<std::string>{"victim.txt"});
}

struct HostileLoadCase {
  const char* fault;
  const char* detail;
};

class HostileLoadTest : public HostileAdapterTest,
                        public ::testing::WithParamInterface<HostileLoadCase> {};

// A loaded tensor file replaced by a FIFO or by a link to an outside file is the verdict "unsafe
// file": never opened for reading through the link, never waited on.
TEST_P(HostileLoadTest, ALoadedFileThatIsNotARegularFileIsAnUnsafeFile) {
  auto engine = Engine(
      std::string("--fault ") + GetParam().fault + " --fault-rank 1 --fault-path " + Victim(),
      /*timeout_s=*/5);
  ASSERT_TRUE(engine->Save(1, Dicts(2, 1), SaveOptions()).ok());
  LoadResult result;
  const Status s = engine->Load(RequestFor(Dicts(2, 1)), &result);
  ASSERT_TRUE(engine->group()->last_fault().has_value()) << s.ToString();
  EXPECT_EQ(*engine->group()->last_fault(), AdapterFault::kUnsafeFile) << s.ToString();
  EXPECT_EQ(engine->group()->last_fault_rank(), 1);
  EXPECT_NE(s.message().find(GetParam().detail), std::string::npos) << s.ToString();
  EXPECT_EQ(s.message().find("precious"), std::string::npos) << s.ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Hostile, HostileLoadTest,
    ::testing::Values(HostileLoadCase{"fifo-load", "left a FIFO at "},
                      HostileLoadCase{"link-load", "left a symbolic link at "},
                      HostileLoadCase{"fifo-load --no-packed", "left a FIFO at "},
                      HostileLoadCase{"link-load --no-packed", "left a symbolic link at "}),
    [](const ::testing::TestParamInfo<HostileLoadCase>& info) {
      std::string name = info.param.fault;
      for (char& ch : name) ch = isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

// A load reply whose common state nests 200,000 objects deep is a verdict, not a crash of the
// harness.
TEST_F(AdapterEngineTest, ADeeplyNestedReplyIsAVerdict) {
  auto engine = Engine("--fault deep-reply --fault-rank 1");
  ASSERT_TRUE(engine->Save(1, Dicts(2, 1), SaveOptions()).ok());
  LoadResult result;
  const Status s = engine->Load(RequestFor(Dicts(2, 1)), &result);
  ASSERT_TRUE(engine->group()->last_fault().has_value()) << s.ToString();
  EXPECT_EQ(*engine->group()->last_fault(), AdapterFault::kGarbage) << s.ToString();
  EXPECT_EQ(engine->group()->last_fault_rank(), 1) << s.ToString();
  EXPECT_NE(s.message().find("deep"), std::string::npos) << s.ToString();
}

// 64 MiB written to stderr at a save cost the harness its capped head and tail, and the save
// goes on.
TEST_F(AdapterEngineTest, AFloodOnStderrIsKeptCapped) {
  auto engine = Engine("--fault flood-stderr --fault-rank 1");
  ASSERT_TRUE(engine->Save(1, Dicts(2, 1), SaveOptions()).ok());
  const CappedLog& log = engine->group()->log(1);
  EXPECT_GE(log.total_bytes(), uint64_t{64} << 20);
  EXPECT_LE(log.kept_bytes(), size_t{128} << 10);
}

// A rank that starts a daemon of its own session gets the verdict "left processes behind" when
// its group is shut down; the daemon is killed.
TEST(AdapterProperties, AProcessLeftBehindFailsTheCaseAndIsKilled) {
  UseFastTempDir();
  AdapterOptions options;
  options.command = kAdapter + " --fault daemon-save --fault-rank 1";
  TargetFactory factory;
  ASSERT_TRUE(AdapterTargetFactory(options, &factory).ok());
  RunParams params;
  params.max_success = 3;
  params.max_size = 10;
  const PropertyOutcome o = RunProperty(*FindProperty("P2"), factory, params);
  EXPECT_EQ(o.verdict, Verdict::kFail) << DescribeOutcome(o);
  EXPECT_NE(o.message.find("left processes behind: 1 process: "), std::string::npos)
      << DescribeOutcome(o);
  EXPECT_NE(o.message.find("still ran after shutdown; killed"), std::string::npos)
      << DescribeOutcome(o);
  EXPECT_TRUE(FindLeftoverChildren().empty());
}

// A case whose adapter hangs costs one timeout: the shrinker runs no case after it.
TEST(AdapterProperties, AHangingCaseIsNotRunAgainWhileShrinking) {
  UseFastTempDir();
  std::string counter = FastTempRoot() + "/ckptspec-hang-count-XXXXXX";
  const int fd = mkstemp(counter.data());
  ASSERT_GE(fd, 0);
  close(fd);
  AdapterOptions options;
  // Every request any rank receives is appended to the counter file on its way in.
  options.command = "tee -a " + counter + " | " + kAdapter + " --fault hang-save --fault-rank 0";
  options.timeout_s = 1;
  TargetFactory factory;
  ASSERT_TRUE(AdapterTargetFactory(options, &factory).ok());
  RunParams params;
  params.max_success = 20;
  params.max_size = 20;
  const PropertyOutcome o = RunProperty(*FindProperty("P2"), factory, params);
  EXPECT_EQ(o.verdict, Verdict::kFail) << DescribeOutcome(o);
  EXPECT_NE(o.message.find("timed out: no reply within 1 s"), std::string::npos)
      << DescribeOutcome(o);
  std::string requests;
  ASSERT_TRUE(ReadFileToString(Env::Posix(), counter, 64 << 20, &requests).ok());
  unlink(counter.c_str());
  // Rank 0 hangs at the first save it gets: one save call was made (each call has a scratch
  // directory of its own), in the one case that ran. (The ranks' tee processes share the file, so
  // their lines may interleave: only whole names count.)
  std::set<std::string> save_calls;
  for (size_t at = requests.find("/call-"); at != std::string::npos;
       at = requests.find("/call-", at + 1)) {
    const std::string name = requests.substr(at, 23);
    if (name.size() == 23 && name.back() == '/' &&
        name.find_first_not_of("0123456789abcdef", 6) == 22) {
      save_calls.insert(name);
    }
  }
  EXPECT_EQ(save_calls.size(), 1u) << requests.substr(0, 2000);
  EXPECT_EQ(o.cases, 1);
}

// True when `pid` no longer runs (gone, or a zombie waiting for its parent).
bool NotRunning(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::string stat;
  if (!ReadFileToString(Env::Posix(), "/proc/" + std::to_string(pid) + "/stat", 4096, &stat).ok())
    return true;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

// SIGTERM to a ckptspec process in the middle of an adapter's save: every rank process ends, the
// temporary directories are removed, and ckptspec ends by that signal.
TEST(AdapterProperties, ATerminationSignalEndsTheRanksAndRemovesTheTemporaryDirectories) {
  std::string base = FastTempRoot() + "/ckptspec-signal-test-XXXXXX";
  ASSERT_NE(mkdtemp(base.data()), nullptr);
  const std::string pids_file = JoinPath(base, "pids");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    InstallTerminationCleanup();
    setenv("TMPDIR", base.c_str(), 1);
    setenv("CKPTSPEC_SCRATCH_DIR", base.c_str(), 1);
    AdapterOptions options;
    options.command =
        "echo $$ >> " + pids_file + "; exec " + kAdapter + " --fault hang-save --fault-rank 0";
    options.timeout_s = 60;
    TargetFactory factory;
    if (!AdapterTargetFactory(options, &factory).ok()) _exit(90);
    RunParams params;
    params.max_success = 5;
    (void)RunProperty(*FindProperty("P2"), factory, params);
    _exit(91);  // the hang outlasts the test: never reached
  }
  // Wait for a case's ranks (after the probe's one process), then for them to be in the save.
  std::string pids;
  for (int i = 0; i < 1000 && std::count(pids.begin(), pids.end(), '\n') < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    (void)ReadFileToString(Env::Posix(), pids_file, 1 << 20, &pids);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(ReadFileToString(Env::Posix(), pids_file, 1 << 20, &pids).ok());
  ASSERT_EQ(kill(child, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "wait status " << status;
  std::vector<std::string> left;
  ASSERT_TRUE(Env::Posix()->GetChildren(base, &left).ok());
  EXPECT_EQ(left, std::vector<std::string>{"pids"});  // both temporary directories are gone
  size_t ranks = 0;
  for (size_t at = 0, end; (end = pids.find('\n', at)) != std::string::npos; at = end + 1) {
    const pid_t pid = static_cast<pid_t>(std::stol(pids.substr(at, end - at)));
    bool gone = false;
    for (int i = 0; i < 500 && !gone; ++i) {
      gone = NotRunning(pid);
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_TRUE(gone) << "rank process " << pid << " survived";
    ++ranks;
  }
  EXPECT_GE(ranks, 2u);
  (void)FindLeftoverChildren();  // reaps the zombies reparented to this process
  (void)Env::Posix()->RemoveTree(base);
}

// The catalog through the adapter: what the reference passes passes (P13, P14 and P16 in their
// disk forms), the in-memory-Env properties are n/a. A few cases each keeps this fast; `ckptspec
// run --adapter` runs the full budget.
TEST(AdapterProperties, PassLikeTheReferenceOrAreNotApplicable) {
  UseFastTempDir();
  AdapterOptions options;
  options.command = kAdapter;
  TargetFactory factory;
  ASSERT_TRUE(AdapterTargetFactory(options, &factory).ok());
  EXPECT_EQ(factory.name, "adapter:ckptspec-reference");
  EXPECT_FALSE(factory.fault_injection);
  EXPECT_TRUE(factory.disk_faults) << factory.disk_faults_missing;
  RunParams params;
  params.max_success = 3;
  params.max_size = 20;
  for (const char* id : {"P1", "P2", "P3", "P13", "P14", "P15", "P16"}) {
    const PropertyOutcome o = RunProperty(*FindProperty(id), factory, params);
    EXPECT_EQ(o.verdict, Verdict::kPass) << DescribeOutcome(o);
  }
  for (const char* id : {"P17", "P18"}) {
    const PropertyOutcome o = RunProperty(*FindProperty(id), factory, params);
    EXPECT_EQ(o.verdict, Verdict::kNotApplicable) << id;
  }
}

TEST(AdapterProperties, AnAdapterThatCannotStartIsAnError) {
  AdapterOptions options;
  options.command = kAdapter + " --fault nonesuch";
  TargetFactory factory;
  const Status s = AdapterTargetFactory(options, &factory);
  EXPECT_NE(s.message().find("exited with status 2 during hello"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("--fault: unknown fault 'nonesuch'"), std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace ckptspec
