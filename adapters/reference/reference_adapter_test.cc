// The protocol path end to end: ProcessEngine and the adapter target factory against the built-in
// adapter, its injected faults (each a named verdict, with nothing left running), and properties
// run through it as they run in process.
#include <signal.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "targets/process/process_test_util.h"

#include "properties/adapter_target.h"
#include "properties/property.h"
#include "properties/runner.h"
#include "targets/env/env.h"
#include "targets/process/process_engine.h"

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
    dicts[r].common = {{"iteration", base}};
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
  void TearDown() override { (void)RemoveRecursively(Env::Posix(), dir_); }

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
    EXPECT_EQ(none.message().rfind("adapter rank 0: ", 0), 0u) << none.ToString();
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

struct InjectedCase {
  const char* flags;
  AdapterFault verdict;
  int rank;
  const char* detail;
};

class AdapterFaultTest : public AdapterEngineTest, public ::testing::WithParamInterface<InjectedCase> {};

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
        InjectedCase{"--fault crash-save --fault-rank 1", AdapterFault::kCrashed, 1, "killed by signal 9 (SIGKILL)"},
        InjectedCase{"--fault crash-save --fault-rank 0", AdapterFault::kCrashed, 0, "killed by signal 9 (SIGKILL)"},
        InjectedCase{"--fault exit-save --fault-rank 1", AdapterFault::kExited, 1, "exited with status 3 during save"},
        InjectedCase{"--fault hang-save --fault-rank 1", AdapterFault::kTimedOut, 1, "no reply within 1"},
        InjectedCase{"--fault garbage --fault-rank 1", AdapterFault::kGarbage, 1, "'this is not JSON'"},
        InjectedCase{"--fault wrong-rank --fault-rank 1", AdapterFault::kWrongRank, 1, "as rank 0"},
        InjectedCase{"--fault wrong-request --fault-rank 0", AdapterFault::kWrongRequest, 0, "while save (request"},
        InjectedCase{"--fault malformed --fault-rank 1", AdapterFault::kMalformedReply, 1, "no boolean \"ok\""},
        InjectedCase{"--fault wrong-size --fault-rank 1", AdapterFault::kWrongSize, 1,
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
    EXPECT_NE(s.message().find("fault crash-save: killing myself before creating"), std::string::npos)
        << s.ToString();  // the stderr tail
  }
  LoadResult result;
  ASSERT_TRUE(Engine()->Load(RequestFor(Dicts(2, 1)), &result).ok());
  EXPECT_EQ(result.iteration, 1);
  EXPECT_EQ(result.state[1].tensors[0].data, Dicts(2, 1)[1].tensors[0].data);
}

// The catalog through the adapter: what the reference passes passes, the in-memory-Env properties
// are n/a. A few cases each keeps this fast; `ckptspec run --adapter` runs the full budget.
TEST(AdapterProperties, PassLikeTheReferenceOrAreNotApplicable) {
  UseFastTempDir();
  AdapterOptions options;
  options.command = kAdapter;
  TargetFactory factory;
  ASSERT_TRUE(AdapterTargetFactory(options, &factory).ok());
  EXPECT_EQ(factory.name, "adapter:ckptspec_reference_adapter");
  EXPECT_FALSE(factory.fault_injection);
  RunParams params;
  params.max_success = 3;
  params.max_size = 20;
  for (const char* id : {"P1", "P2", "P3", "P15"}) {
    const PropertyOutcome o = RunProperty(*FindProperty(id), factory, params);
    EXPECT_EQ(o.verdict, Verdict::kPass) << DescribeOutcome(o);
  }
  for (const char* id : {"P13", "P14", "P16", "P17", "P18"}) {
    const PropertyOutcome o = RunProperty(*FindProperty(id), factory, params);
    EXPECT_EQ(o.verdict, Verdict::kNotApplicable) << id;
  }
}

TEST(AdapterProperties, AnAdapterThatCannotStartIsAnError) {
  AdapterOptions options;
  options.command = kAdapter + " --fault nonesuch";
  TargetFactory factory;
  const Status s = AdapterTargetFactory(options, &factory);
  EXPECT_NE(s.message().find("exited with status 2 during hello"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("--fault: unknown fault 'nonesuch'"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace ckptspec
