// Round trips and resharding through the reference engine (P2, P3, P17).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::CheckContent;
using testing_util::DictsOf;
using testing_util::LoadInto;
using testing_util::MakeSharding;
using testing_util::MemHarness;
using testing_util::TemplatesOf;
using testing_util::Tensor;

ShardedObject Object(const std::string& key, Dims shape, Dims offset, ReplicaId replica,
                     std::string data) {
  ShardedObject o;
  o.spec.key = key;
  o.spec.global_shape = std::move(shape);
  o.spec.global_offset = std::move(offset);
  o.spec.replica_id = std::move(replica);
  o.data = std::move(data);
  return o;
}

std::vector<ShardedStateDict> HandBuilt() {
  std::vector<ShardedStateDict> dicts(2);
  for (int64_t r = 0; r < 2; ++r) {
    dicts[r].tensors.push_back(Tensor("w", {4, 6}, {2 * r, 0}, {2, 6}, {0, 0}, 0x10 + r));
    dicts[r].tensors.push_back(Tensor("b", {6}, {0}, {6}, {0, r}, 0x20 + r));
    dicts[r].objects.push_back(
        Object("rng_state", {2}, {r}, {0}, "rng of rank " + std::to_string(r)));
    dicts[r].common = {{"iteration", 7}, {"args", {{"lr", 0.5}}}};
  }
  return dicts;
}

TEST(ReferenceRoundTrip, HandBuiltDictWithObjectsAndCommonState) {
  MemHarness h;
  const auto dicts = HandBuilt();
  ASSERT_TRUE(h.engine->Save(7, dicts, SaveOptions()).ok());
  int64_t latest = -1;
  ASSERT_TRUE(h.engine->LatestIteration(&latest).ok());
  EXPECT_EQ(latest, 7);
  std::vector<ShardedStateDict> templates;
  for (const auto& d : dicts) templates.push_back(TemplateOf(d));
  LoadResult result;
  const Status s = LoadInto(*h.engine, templates, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(result.iteration, 7);
  ASSERT_EQ(result.state.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(result.state[r].tensors[0].data, dicts[r].tensors[0].data);
    // "b" is replicated: both ranks get rank 0's (main) copy.
    EXPECT_EQ(result.state[r].tensors[1].data, dicts[0].tensors[1].data);
    EXPECT_EQ(result.state[r].objects[0].data, dicts[r].objects[0].data);
    EXPECT_EQ(result.state[r].common, dicts[0].common);
  }
  // Only main replicas are written: "b" once.
  CheckpointMetadata m;
  ASSERT_TRUE(h.engine->ReadMetadata(7, &m).ok());
  ASSERT_EQ(m.tensors.size(), 2u);
  EXPECT_EQ(m.tensors[1].key, "b");
  EXPECT_EQ(m.tensors[1].chunks.size(), 1u);
  EXPECT_EQ(m.files.size(), 2u);
}

// Rank-local objects (no sharding declared) under one key: each rank's value is kept, under both
// index layouts, and comes back to the rank of the same global rank; a rank that saved none gets
// NotFound naming the key and the rank.
TEST(ReferenceRoundTrip, RankLocalObjectsKeepEveryRanksValue) {
  for (IndexLayout layout : {IndexLayout::kSingle, IndexLayout::kPerWriter}) {
    SCOPED_TRACE(IndexLayoutName(layout));
    MemEnv env;
    ASSERT_TRUE(env.CreateDir("/ckpt").ok());
    auto engine = testing_util::EngineOn(&env, layout);
    std::vector<ShardedStateDict> dicts = HandBuilt();
    for (int64_t r = 0; r < 2; ++r) {
      ShardedObject o;
      o.spec = RankLocalObjectSpec("local_rng");
      o.data = "rank-local value of rank " + std::to_string(r);
      dicts[r].objects.push_back(std::move(o));
    }
    SaveOptions options;
    options.validate = true;
    Status s = engine->Save(3, dicts, options);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<ShardedStateDict> templates;
    for (const auto& d : dicts) templates.push_back(TemplateOf(d));
    LoadResult result;
    s = LoadInto(*engine, templates, &result);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(result.state[r].objects.back().data, dicts[r].objects.back().data) << "rank " << r;
    }
    CheckpointMetadata m;
    ASSERT_TRUE(engine->ReadMetadata(3, &m).ok());
    int local = 0;
    for (const ObjectEntry& e : m.objects) local += e.key == "local_rng" ? 1 : 0;
    EXPECT_EQ(local, 2);

    // A third rank requests its own: rank 2 saved none.
    templates.push_back(ShardedStateDict());
    templates.back().objects.push_back(ShardedObject{RankLocalObjectSpec("local_rng"), ""});
    s = LoadInto(*engine, templates, &result);
    EXPECT_EQ(s.code(), Status::Code::kNotFound);
    EXPECT_NE(s.message().find("rank 2: object 'local_rng' (rank-local) saved by rank 2"),
              std::string::npos)
        << s.ToString();
  }
}

TEST(ReferenceRoundTrip, ReadsARowRangeAcrossTwoChunks) {
  MemHarness h;
  auto dicts = HandBuilt();
  for (auto& d : dicts) {
    for (size_t i = 0; i < d.tensors[0].data.size(); ++i)
      d.tensors[0].data[i] = static_cast<uint8_t>(i * 7 + d.tensors[0].spec.global_offset[0]);
  }
  ASSERT_TRUE(h.engine->Save(1, dicts, SaveOptions()).ok());
  // One rank asks for rows 1..3 of "w", which straddle both saved chunks.
  ShardedStateDict t;
  t.tensors.push_back(Tensor("w", {4, 6}, {1, 0}, {2, 6}, {0}, 0));
  t.tensors[0].spec.axis_fragmentations.clear();
  LoadResult result;
  const Status s = LoadInto(*h.engine, {t}, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto& got = result.state[0].tensors[0].data;
  EXPECT_EQ(0, std::memcmp(got.data(), dicts[0].tensors[0].data.data() + 24, 24));
  EXPECT_EQ(0, std::memcmp(got.data() + 24, dicts[1].tensors[0].data.data(), 24));
}

TEST(ReferenceRoundTrip, MissingCoverageNamesKeyAndBox) {
  MemHarness h;
  auto dicts = HandBuilt();
  dicts[1].tensors[0].spec.replica_id = {1};  // rows 2..4 of "w" now have no main replica
  SaveOptions options;
  options.validate = false;
  ASSERT_TRUE(h.engine->Save(1, dicts, options).ok());
  std::vector<ShardedStateDict> templates;
  for (const auto& d : dicts) templates.push_back(TemplateOf(d));
  LoadResult result;
  const Status s = LoadInto(*h.engine, templates, &result);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("'w' box [2:4, 0:6]"), std::string::npos) << s.ToString();
}

TEST(ReferenceRoundTrip, ParameterShardingSameLayout) {
  MemHarness h;
  const ParameterSharding sharding = MakeSharding(8, 2, 2);
  ASSERT_TRUE(h.engine->Save(10, DictsOf(sharding, 42), SaveOptions()).ok());
  LoadResult result;
  const Status s = LoadInto(*h.engine, TemplatesOf(sharding), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(CheckContent(result.state, 42), "");
  EXPECT_NE(CheckContent(result.state, 43), "");  // the check can fail
}

TEST(ReferenceRoundTrip, GlobalShapeMismatchIsAnErrorUnlessAllowed) {
  MemHarness h;
  auto dicts = HandBuilt();
  ASSERT_TRUE(h.engine->Save(1, dicts, SaveOptions()).ok());
  ShardedStateDict t;
  t.tensors.push_back(Tensor("w", {6, 6}, {0, 0}, {6, 6}, {0}, 0xFF));
  LoadRequest request;
  request.templates = {t};
  LoadResult result;
  Status s = h.engine->Load(request, &result);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("global shape mismatch for tensor 'w'"), std::string::npos);
  request.allow_shape_mismatch = true;
  s = h.engine->Load(request, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto& got = result.state[0].tensors[0].data;
  EXPECT_EQ(0, std::memcmp(got.data(), dicts[0].tensors[0].data.data(), 48));
  EXPECT_EQ(0, std::memcmp(got.data() + 48, dicts[1].tensors[0].data.data(), 48));
  EXPECT_EQ(got[96], 0);  // rows 4..6 are zero-filled
  EXPECT_EQ(got.back(), 0);
}

TEST(ReferenceRoundTrip, SameInputGivesByteIdenticalFiles) {
  MemHarness a, b;
  const ParameterSharding sharding = MakeSharding(4, 2, 1);
  ASSERT_TRUE(a.engine->Save(3, DictsOf(sharding, 9), SaveOptions()).ok());
  ASSERT_TRUE(b.engine->Save(3, DictsOf(sharding, 9), SaveOptions()).ok());
  std::vector<std::string> names_a, names_b;
  ASSERT_TRUE(a.env.GetChildren("/ckpt/iter_0000003", &names_a).ok());
  ASSERT_TRUE(b.env.GetChildren("/ckpt/iter_0000003", &names_b).ok());
  ASSERT_EQ(names_a, names_b);
  for (const std::string& name : names_a) {
    std::string x, y;
    ASSERT_TRUE(ReadFileToString(&a.env, "/ckpt/iter_0000003/" + name, 1 << 24, &x).ok());
    ASSERT_TRUE(ReadFileToString(&b.env, "/ckpt/iter_0000003/" + name, 1 << 24, &y).ok());
    EXPECT_EQ(x, y) << name;
  }
}

struct LayoutCase {
  int64_t world, tp, pp;
};
const std::vector<LayoutCase> kLayouts = {{1, 1, 1}, {2, 2, 1}, {4, 4, 1}, {4, 2, 2},  {8, 2, 2},
                                          {4, 1, 4}, {8, 4, 1}, {8, 1, 2}, {16, 4, 4}, {6, 2, 1}};

std::string Describe(const LayoutCase& c) {
  return "world " + std::to_string(c.world) + " tp " + std::to_string(c.tp) + " pp " +
         std::to_string(c.pp);
}

TEST(ReferenceResharding, Tp2ToTp4AndBack) {
  for (const auto& [from, to] :
       std::vector<std::pair<LayoutCase, LayoutCase>>{{{2, 2, 1}, {4, 4, 1}},
                                                      {{4, 4, 1}, {2, 2, 1}},
                                                      {{4, 2, 2}, {4, 4, 1}},
                                                      {{8, 2, 2}, {2, 1, 1}},
                                                      {{2, 1, 1}, {8, 2, 2}},
                                                      {{4, 2, 1}, {8, 2, 1}}}) {
    MemHarness h;
    const ParameterSharding save = MakeSharding(from.world, from.tp, from.pp);
    const ParameterSharding load = MakeSharding(to.world, to.tp, to.pp);
    ASSERT_TRUE(h.engine->Save(5, DictsOf(save, 77), SaveOptions()).ok());
    LoadResult result;
    const Status s = LoadInto(*h.engine, TemplatesOf(load), &result);
    ASSERT_TRUE(s.ok()) << Describe(from) << " -> " << Describe(to) << ": " << s.ToString();
    EXPECT_EQ(CheckContent(result.state, 77), "") << Describe(from) << " -> " << Describe(to);
  }
}

RC_GTEST_PROP(ReferenceResharding, AnyLayoutPairLoadsTheSameGlobalState, ()) {
  const LayoutCase from = *rc::gen::elementOf(kLayouts);
  const LayoutCase to = *rc::gen::elementOf(kLayouts);
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  RC_TAG(from.tp == to.tp && from.pp == to.pp ? "same tp/pp" : "resharded");
  MemHarness h;
  const ParameterSharding save = MakeSharding(from.world, from.tp, from.pp);
  const ParameterSharding load = MakeSharding(to.world, to.tp, to.pp);
  RC_ASSERT(h.engine->Save(1, DictsOf(save, seed), SaveOptions()).ok());
  LoadResult result;
  const Status s = LoadInto(*h.engine, TemplatesOf(load), &result);
  RC_ASSERT(s.ok());
  RC_ASSERT(CheckContent(result.state, seed) == "");
}

TEST(ReferencePosix, RoundTripAndReshardOnDisk) {
  char tmpl[] = "/tmp/ckptspec_reference_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = std::string(tmpl) + "/ckpt";
  {
    ReferenceOptions options;
    options.env = Env::Posix();
    options.root = root;
    options.keep_last = 1;
    ReferenceEngine engine(std::move(options));
    const ParameterSharding save = MakeSharding(4, 2, 2);
    ASSERT_TRUE(engine.Save(1, DictsOf(save, 1), SaveOptions()).ok());
    SaveOptions async;
    async.async = true;
    ASSERT_TRUE(engine.Save(2, DictsOf(save, 2), async).ok());
    ASSERT_TRUE(engine.Finalize().ok());
    LoadResult result;
    const Status s = LoadInto(engine, TemplatesOf(MakeSharding(2, 1, 1)), &result);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(result.iteration, 2);
    EXPECT_EQ(CheckContent(result.state, 2), "");
    std::vector<int64_t> iterations;
    ASSERT_TRUE(engine.ListIterations(&iterations).ok());
    EXPECT_EQ(iterations, std::vector<int64_t>{2});
  }
  ASSERT_TRUE(Env::Posix()->RemoveTree(tmpl).ok());
}

}  // namespace
}  // namespace ckptspec

namespace ckptspec {
namespace {

TEST(ReferenceSaveValidation, RefusesAGapAnOverlapAndDivergentCommonState) {
  auto dicts = HandBuilt();
  {
    MemHarness h;
    auto gap = dicts;
    gap[1].tensors[0].spec.replica_id = {1};
    const Status s = h.engine->Save(1, gap, SaveOptions());
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_NE(s.message().find("P4"), std::string::npos) << s.ToString();
    EXPECT_FALSE(h.env.FileExists("/ckpt/iter_0000001").ok());
  }
  {
    MemHarness h;
    auto overlap = dicts;
    overlap[1].tensors[1].spec.replica_id = {0, 0};  // "b" now has two main replicas
    EXPECT_EQ(h.engine->Save(1, overlap, SaveOptions()).code(), Status::Code::kInvalidArgument);
  }
  {
    MemHarness h;
    auto common = dicts;
    (*common[1].common.Mutable())["iteration"] = 8;
    const Status s = h.engine->Save(1, common, SaveOptions());
    EXPECT_NE(s.message().find("P11"), std::string::npos) << s.ToString();
  }
  {
    MemHarness h;
    auto bad_size = dicts;
    bad_size[0].tensors[0].data.pop_back();
    const Status s = h.engine->Save(1, bad_size, SaveOptions());
    EXPECT_NE(s.message().find("tensor 'w' holds 47 bytes"), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace ckptspec
