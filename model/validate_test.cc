#include "model/validate.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "model/signature_json.h"  // kMaxCommonDepth

namespace ckptspec {
namespace {

using nlohmann::json;

TensorSpec Tensor(std::string key, Dims global_shape, Dims offset, Dims local, Dims frags,
                  ReplicaId replica, DType dtype = DType::kBFloat16) {
  TensorSpec t;
  t.key = std::move(key);
  t.dtype = dtype;
  t.global_shape = std::move(global_shape);
  t.global_offset = std::move(offset);
  t.local_shape = std::move(local);
  t.axis_fragmentations = std::move(frags);
  t.replica_id = std::move(replica);
  return t;
}

ObjectSpec Object(std::string key, Dims global_shape, Dims offset, ReplicaId replica) {
  ObjectSpec o;
  o.key = std::move(key);
  o.global_shape = std::move(global_shape);
  o.global_offset = std::move(offset);
  o.replica_id = std::move(replica);
  return o;
}

// TP2 x DP2, rank = tp + 2 * dp: a TP-split weight, a replicated bias, per-rank RNG objects, a
// DP-sharded flat optimizer buffer per TP rank (irregular grid) and identical common state.
GlobalSignature CleanTp2Dp2() {
  GlobalSignature s;
  for (int64_t r = 0; r < 4; ++r) {
    const int64_t tp = r % 2, dp = r / 2;
    RankSignature rank;
    rank.rank = r;
    rank.tensors.push_back(Tensor("w", {8, 4}, {4 * tp, 0}, {4, 4}, {2, 1}, {0, 0, dp}));
    rank.tensors.push_back(Tensor("b", {4}, {0}, {4}, {1}, {0, tp, dp}));
    rank.tensors.push_back(Tensor("optimizer.dp_group_idx_" + std::to_string(tp) + ".exp_avg", {16},
                                  {8 * dp}, {8}, {}, {0, 0, 0}, DType::kFloat32));
    rank.objects.push_back(Object("rng_state", {4}, {r}, {0}));
    rank.common = json{{"iteration", 10},
                       {"optimizer", {{"param_groups", json::array({json{{"lr", 0.001}}})}}}};
    s.ranks.push_back(std::move(rank));
  }
  return s;
}

TensorSpec* Find(GlobalSignature& s, int64_t rank, const std::string& key) {
  for (TensorSpec& t : s.ranks[rank].tensors) {
    if (t.key == key) return &t;
  }
  return nullptr;
}

std::vector<int64_t> R(std::initializer_list<int64_t> ranks) { return ranks; }

// Expects exactly one violation and returns it.
Violation Only(const std::vector<Violation>& violations) {
  EXPECT_EQ(violations.size(), 1u) << FormatViolations(violations);
  return violations.empty() ? Violation{} : violations[0];
}

TEST(Validate, CleanTp2Dp2PassesEverything) {
  const GlobalSignature s = CleanTp2Dp2();
  EXPECT_EQ(FormatViolations(CheckShardingIntegrity(s)), "no violations\n");
  EXPECT_EQ(FormatViolations(CheckKeyInjectivity(s)), "no violations\n");
  EXPECT_EQ(FormatViolations(CheckCommonState(s)), "no violations\n");
  EXPECT_TRUE(DiffStructure(s, s).empty());
}

TEST(Validate, TwoMainsOnOneCellIsAnOverlap) {
  GlobalSignature s = CleanTp2Dp2();
  Find(s, 2, "w")->replica_id = {0, 0, 0};  // dp=1 claims main for tp=0's cell
  const Violation v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.property, "P4");
  EXPECT_EQ(v.kind, ViolationKind::kOverlap);
  EXPECT_EQ(v.key, "w");
  ASSERT_TRUE(v.box.has_value());
  EXPECT_EQ(*v.box, (Box{{0, 0}, {4, 4}}));
  EXPECT_EQ(v.ranks, R({0, 2}));
  EXPECT_EQ(v.message,
            "tensor 'w': 2 main replicas cover cell [0:4, 0:4] of grid (2, 1) (ranks 0, 2); "
            "exactly one must");
}

TEST(Validate, CellWithoutMainIsAGap) {
  GlobalSignature s = CleanTp2Dp2();
  Find(s, 1, "w")->replica_id = {0, 0, 1};  // tp=1 has no main left
  const Violation v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.kind, ViolationKind::kGap);
  EXPECT_EQ(v.key, "w");
  ASSERT_TRUE(v.box.has_value());
  EXPECT_EQ(*v.box, (Box{{4, 0}, {4, 4}}));
  EXPECT_EQ(v.ranks, R({1, 3}));
  EXPECT_EQ(v.message,
            "tensor 'w': no main replica covers cell [4:8, 0:4] of grid (2, 1); it is held only "
            "by non-main replicas on ranks 1, 3");
}

TEST(Validate, ManyGapsAreCappedWithASummary) {
  GlobalSignature s;
  s.ranks.resize(1);
  s.ranks[0].tensors.push_back(Tensor("big", {1000}, {0}, {1}, {1000}, {0}));
  const std::vector<Violation> v = CheckShardingIntegrity(s);
  ASSERT_EQ(v.size(), static_cast<size_t>(kMaxReportsPerKey) + 1) << FormatViolations(v);
  EXPECT_EQ(*v[0].box, (Box{{1}, {1}}));
  EXPECT_FALSE(v.back().box.has_value());
  EXPECT_EQ(
      v.back().message,
      "tensor 'big': 983 more cells of grid (1000,) have no main replica (999 of 1000 in all)");
}

TEST(Validate, DuplicateMainObjectAndTheShardItLeavesMissing) {
  GlobalSignature s = CleanTp2Dp2();
  s.ranks[1].objects[0].global_offset = {0};
  const std::vector<Violation> v = CheckShardingIntegrity(s);
  ASSERT_EQ(v.size(), 2u) << FormatViolations(v);
  EXPECT_EQ(v[0].kind, ViolationKind::kDuplicateMain);
  EXPECT_EQ(v[0].key, "rng_state");
  EXPECT_EQ(*v[0].box, (Box{{0}, {1}}));
  EXPECT_EQ(v[0].ranks, R({0, 1}));
  EXPECT_EQ(v[0].message,
            "Duplicate ShardedObject key 'rng_state/shard_0_4': 2 main replicas on ranks 0, 1; "
            "exactly one must be main");
  EXPECT_EQ(v[1].kind, ViolationKind::kMissingObject);
  EXPECT_EQ(*v[1].box, (Box{{1}, {1}}));
  EXPECT_TRUE(v[1].ranks.empty());
}

TEST(Validate, ObjectCountBelowGlobalShapeIsMissing) {
  GlobalSignature s = CleanTp2Dp2();
  s.ranks[3].objects.clear();
  const Violation v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.kind, ViolationKind::kMissingObject);
  EXPECT_EQ(v.key, "rng_state");
  EXPECT_EQ(*v.box, (Box{{3}, {1}}));
  EXPECT_EQ(v.message,
            "ShardedObject 'rng_state/shard_3_4' (offset (3,) of global shape (4,)) has no main "
            "replica; no rank holds it");
}

TEST(Validate, ObjectOutsideItsShapeIsExtra) {
  GlobalSignature s = CleanTp2Dp2();
  s.ranks[3].objects.push_back(Object("rng_state", {4}, {7}, {0}));
  const Violation v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.kind, ViolationKind::kExtraObject);
  EXPECT_EQ(v.ranks, R({3}));
  EXPECT_EQ(*v.box, (Box{{7}, {1}}));
}

// docs/BUGS.md B02: two modules' optimizer param groups under one key, and every TP rank main.
TEST(Validate, TwoModulesUnderOneKeyCollide) {
  GlobalSignature s = CleanTp2Dp2();
  for (int64_t r = 0; r < 4; ++r) {
    ObjectSpec o = Object("optimizer.param_groups", {1}, {0}, {0, 0, 0});
    o.origin = r < 2 ? "vision/optimizer.param_groups" : "language/optimizer.param_groups";
    s.ranks[r].objects.push_back(o);
  }
  const Violation p5 = Only(CheckKeyInjectivity(s));
  EXPECT_EQ(p5.property, "P5");
  EXPECT_EQ(p5.kind, ViolationKind::kKeyCollision);
  EXPECT_EQ(p5.key, "optimizer.param_groups");
  EXPECT_EQ(p5.ranks, R({0, 1, 2, 3}));
  EXPECT_EQ(p5.message,
            "ShardedObject key 'optimizer.param_groups' is shared by 2 distinct states: origin "
            "\"vision/optimizer.param_groups\" on ranks 0, 1; origin "
            "\"language/optimizer.param_groups\" on ranks 2, 3");
  const Violation p4 = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(p4.kind, ViolationKind::kDuplicateMain);
  EXPECT_EQ(p4.ranks, R({0, 1, 2, 3}));
}

TEST(Validate, ReplicasWithDifferentDigestsMismatch) {
  GlobalSignature s = CleanTp2Dp2();
  for (int64_t r = 0; r < 4; ++r) Find(s, r, "b")->digest = r == 3 ? 0xbb : 0xaa;
  const Violation v = Only(CheckKeyInjectivity(s));
  EXPECT_EQ(v.kind, ViolationKind::kReplicaContentMismatch);
  EXPECT_EQ(v.key, "b");
  EXPECT_EQ(*v.box, (Box{{0}, {4}}));
  EXPECT_EQ(v.ranks, R({0, 1, 2, 3}));
  EXPECT_EQ(v.message,
            "replicas of tensor 'b' chunk [0:4] disagree: digest 00000000000000aa on ranks 0-2; "
            "digest 00000000000000bb on rank 3; the main replica's is 00000000000000aa");
}

TEST(Validate, KeyUsedForTensorAndObjectCollides) {
  GlobalSignature s = CleanTp2Dp2();
  s.ranks[2].objects.push_back(Object("b", {1}, {0}, {0}));
  const Violation v = Only(CheckKeyInjectivity(s));
  EXPECT_EQ(v.kind, ViolationKind::kKeyCollision);
  EXPECT_EQ(v.message, "key 'b' names a ShardedTensor on ranks 0-3 and a ShardedObject on rank 2");
}

TEST(Validate, RanksDisagreeOnDtypeOrGlobalShape) {
  GlobalSignature s = CleanTp2Dp2();
  Find(s, 3, "w")->dtype = DType::kFloat32;
  Violation v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.kind, ViolationKind::kDtypeMismatch);
  EXPECT_EQ(v.key, "w");
  EXPECT_EQ(v.ranks, R({3}));
  EXPECT_EQ(v.message, "tensor 'w': ranks disagree on dtype: bf16 on ranks 0-2; fp32 on rank 3");

  s = CleanTp2Dp2();
  *Find(s, 1, "b") = Tensor("b", {6}, {0}, {6}, {1}, {0, 1, 0});
  v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.kind, ViolationKind::kGlobalShapeMismatch);
  EXPECT_EQ(v.ranks, R({1}));
  EXPECT_EQ(v.message,
            "tensor 'b': ranks disagree on global shape: (4,) on ranks 0, 2, 3; (6,) on rank 1");

  s = CleanTp2Dp2();
  Find(s, 2, "b")->axis_fragmentations.clear();
  v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.kind, ViolationKind::kGridMismatch);
  EXPECT_EQ(v.ranks, R({2}));

  s = CleanTp2Dp2();
  s.ranks[3].objects[0].global_shape = {5};
  v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.kind, ViolationKind::kGlobalShapeMismatch);
  EXPECT_EQ(v.key, "rng_state");
}

// Rank-local objects: one per rank, each rank's own value (no coverage, no digest comparison);
// held twice by a rank, or sharded on another rank, is reported.
TEST(Validate, RankLocalObjectsAreEachRanksOwn) {
  GlobalSignature s = CleanTp2Dp2();
  for (RankSignature& r : s.ranks) {
    ObjectSpec o = RankLocalObjectSpec("local_rng");
    o.digest = 100 + r.rank;  // every rank's value differs
    o.origin = "model:rng";
    r.objects.push_back(o);
  }
  EXPECT_TRUE(CheckShardingIntegrity(s).empty()) << FormatViolations(CheckShardingIntegrity(s));
  EXPECT_TRUE(CheckKeyInjectivity(s).empty()) << FormatViolations(CheckKeyInjectivity(s));

  GlobalSignature twice = s;
  twice.ranks[2].objects.push_back(twice.ranks[2].objects.back());
  Violation v = Only(CheckShardingIntegrity(twice));
  EXPECT_EQ(v.kind, ViolationKind::kDuplicateMain);
  EXPECT_EQ(v.ranks, R({2}));
  EXPECT_EQ(v.message, "rank 2 holds the rank-local object 'local_rng' more than once");

  GlobalSignature mixed = s;
  mixed.ranks[3].objects.back() = Object("local_rng", {4}, {3}, {0});
  v = Only(CheckShardingIntegrity(mixed));
  EXPECT_EQ(v.kind, ViolationKind::kGlobalShapeMismatch);
  EXPECT_EQ(v.ranks, R({0, 1, 2, 3}));
  EXPECT_NE(v.message.find("rank-local (no global shape) on ranks 0-2 and sharded on rank 3"),
            std::string::npos)
      << v.message;
}

TEST(Validate, InvalidEntriesAreReportedAndSkipped) {
  GlobalSignature s = CleanTp2Dp2();
  Find(s, 0, "w")->local_shape = {4};  // rank mismatch
  s.ranks[1].objects[0].replica_id.clear();
  const std::vector<Violation> v = CheckShardingIntegrity(s);
  ASSERT_EQ(v.size(), 4u) << FormatViolations(v);
  EXPECT_EQ(v[0].kind, ViolationKind::kInvalidEntry);
  EXPECT_EQ(v[0].ranks, R({0}));
  EXPECT_EQ(v[1].kind, ViolationKind::kGap);  // rank 0 held the only main of cell 0
  EXPECT_EQ(*v[1].box, (Box{{0, 0}, {4, 4}}));
  EXPECT_EQ(v[2].kind, ViolationKind::kInvalidEntry);
  EXPECT_EQ(
      v[2].message,
      "rank 1: object 'rng_state': replica_id is an empty tuple (only a rank-local object, of "
      "empty global_shape, declares none)");
  EXPECT_EQ(v[3].kind, ViolationKind::kMissingObject);  // rank 1's shard took no part
  EXPECT_EQ(*v[3].box, (Box{{1}, {1}}));
  // The other validators take malformed entries without crashing.
  EXPECT_TRUE(CheckKeyInjectivity(s).empty());
  EXPECT_FALSE(DiffStructure(CleanTp2Dp2(), s).empty());
}

TEST(Validate, CommonStateDivergenceNamesPathAndRanks) {
  GlobalSignature s = CleanTp2Dp2();
  for (int64_t r : {2, 3})
    (*s.ranks[r].common.Mutable())["optimizer"]["param_groups"][0]["lr"] = 0.002;
  Violation v = Only(CheckCommonState(s));
  EXPECT_EQ(v.property, "P11");
  EXPECT_EQ(v.kind, ViolationKind::kCommonStateDivergence);
  EXPECT_EQ(v.key, "/optimizer/param_groups/0/lr");
  EXPECT_EQ(v.ranks, R({2, 3}));
  EXPECT_EQ(v.message,
            "common state on ranks 2, 3 differs from rank 0 at /optimizer/param_groups/0/lr: "
            "0.001 on rank 0, 0.002 on ranks 2, 3");

  s = CleanTp2Dp2();
  // B02: the wrapper lost its content.
  (*s.ranks[1].common.Mutable())["optimizer"].erase("param_groups");
  (*s.ranks[3].common.Mutable())["iteration"] = "10";
  s.ranks[2].common = nullptr;  // a rank without common state is not compared
  const std::vector<Violation> all = CheckCommonState(s);
  ASSERT_EQ(all.size(), 2u) << FormatViolations(all);
  EXPECT_EQ(all[0].key, "/optimizer/param_groups");
  EXPECT_EQ(all[0].ranks, R({1}));
  EXPECT_EQ(all[0].message,
            "common state on rank 1 differs from rank 0 at /optimizer/param_groups: member present "
            "on rank 0 ([{\"lr\": 0.001}]), missing on rank 1");
  EXPECT_EQ(all[1].key, "/iteration");
  EXPECT_EQ(all[1].message,
            "common state on rank 3 differs from rank 0 at /iteration: type integer (10) on rank "
            "0, string (\"10\") on rank 3");
}

TEST(Validate, CommonStateArrayLengthAndNumberTypes) {
  GlobalSignature s = CleanTp2Dp2();
  (*s.ranks[1].common.Mutable())["optimizer"]["param_groups"].push_back(json{{"lr", 0.1}});  // B07
  (*s.ranks[2].common.Mutable())["iteration"] = 10.0;
  const std::vector<Violation> v = CheckCommonState(s);
  ASSERT_EQ(v.size(), 2u) << FormatViolations(v);
  EXPECT_EQ(v[0].message,
            "common state on rank 1 differs from rank 0 at /optimizer/param_groups: array of 1 on "
            "rank 0, array of 2 elements on rank 1");
  EXPECT_EQ(v[1].key, "/iteration");
}

TEST(Validate, CommonStateWithInvalidUtf8IsComparedWithoutThrowing) {
  GlobalSignature s = CleanTp2Dp2();
  (*s.ranks[1].common.Mutable())["name\xfe"] = "\xff";
  const Violation v = Only(CheckCommonState(s));
  EXPECT_EQ(v.ranks, R({1}));
}

// Ranks that share one tree (as a save's dicts do) are grouped, and reported, as if each held its
// own copy.
TEST(Validate, CommonStateSharedByRanksIsJudgedPerRank) {
  GlobalSignature s = CleanTp2Dp2();
  SharedJson changed = s.ranks[0].common;
  (*changed.Mutable())["iteration"] = 11;
  s.ranks[1].common = changed;
  s.ranks[3].common = changed;  // rank 2 keeps its own tree, equal to rank 0's
  Violation v = Only(CheckCommonState(s));
  EXPECT_EQ(v.ranks, R({1, 3}));
  EXPECT_EQ(v.message,
            "common state on ranks 1, 3 differs from rank 0 at /iteration: 10 on rank 0, 11 on "
            "ranks 1, 3");

  json deep = 1;
  for (int level = 0; level <= kMaxCommonDepth; ++level) deep = json::array({deep});
  const SharedJson too_deep = deep;
  s = CleanTp2Dp2();
  for (int64_t r : {0, 2}) s.ranks[r].common = too_deep;
  const std::vector<Violation> all = CheckCommonState(s);
  ASSERT_EQ(all.size(), 2u) << FormatViolations(all);  // one per rank, none compared
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].kind, ViolationKind::kInvalidEntry);
    EXPECT_EQ(all[i].ranks, R({static_cast<int64_t>(2 * i)}));
  }
}

TEST(Validate, IrregularOneDimensionalOverlapAndGap) {
  GlobalSignature s = CleanTp2Dp2();
  const std::string key = "optimizer.dp_group_idx_0.exp_avg";
  Find(s, 0, key)->local_shape = {10};  // [0:10] overlaps rank 2's [8:16]
  Violation v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.kind, ViolationKind::kOverlap);
  EXPECT_EQ(v.key, key);
  EXPECT_EQ(*v.box, (Box{{8}, {2}}));
  EXPECT_EQ(v.ranks, R({0, 2}));
  EXPECT_EQ(v.message, "tensor '" + key +
                           "': main chunks [0:10] and [8:16] overlap in [8:10] (ranks 0, 2); "
                           "exactly one main replica may cover an element");

  s = CleanTp2Dp2();
  Find(s, 0, key)->local_shape = {5};
  Find(s, 1, "optimizer.dp_group_idx_1.exp_avg")->replica_id = {0, 0, 1};
  const std::vector<Violation> all = CheckShardingIntegrity(s);
  ASSERT_EQ(all.size(), 2u) << FormatViolations(all);
  EXPECT_EQ(all[0].kind, ViolationKind::kGap);
  EXPECT_EQ(*all[0].box, (Box{{5}, {3}}));
  EXPECT_TRUE(all[0].ranks.empty());
  EXPECT_EQ(all[1].kind, ViolationKind::kGap);
  EXPECT_EQ(all[1].key, "optimizer.dp_group_idx_1.exp_avg");
  EXPECT_EQ(*all[1].box, (Box{{0}, {8}}));
  EXPECT_EQ(all[1].ranks, R({1}));
}

TEST(Validate, IrregularTwoDimensionalGapIsLocated) {
  GlobalSignature s;
  s.ranks.resize(3);
  for (int64_t r = 0; r < 3; ++r) s.ranks[r].rank = r;
  // A 4x6 tensor in three column blocks; the middle block is missing on its rank.
  s.ranks[0].tensors.push_back(Tensor("m", {4, 6}, {0, 0}, {4, 2}, {}, {0}));
  s.ranks[1].tensors.push_back(Tensor("m", {4, 6}, {0, 2}, {2, 2}, {}, {0}));
  s.ranks[2].tensors.push_back(Tensor("m", {4, 6}, {0, 4}, {4, 2}, {}, {0}));
  const Violation v = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(v.kind, ViolationKind::kGap);
  EXPECT_EQ(*v.box, (Box{{2, 2}, {2, 2}}));
  EXPECT_EQ(v.message,
            "tensor 'm': no main replica covers [2:4, 2:4] (irregular grid); no rank holds it");
  // And an overlap in 2-D is the intersection.
  s.ranks[1].tensors[0] = Tensor("m", {4, 6}, {0, 1}, {4, 2}, {}, {0});
  const Violation o = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(o.kind, ViolationKind::kOverlap);
  EXPECT_EQ(*o.box, (Box{{0, 1}, {4, 1}}));
  EXPECT_EQ(o.ranks, R({0, 1}));
}

TEST(Validate, HugeTensorsCostNothingPerElement) {
  GlobalSignature s;
  s.ranks.resize(2);
  s.ranks[1].rank = 1;
  const int64_t big = int64_t{1} << 31;
  s.ranks[0].tensors.push_back(Tensor("huge", {big, big}, {0, 0}, {big / 2, big}, {2, 1}, {0}));
  s.ranks[1].tensors.push_back(Tensor("flat", {big}, {0}, {big - 1}, {}, {0}));
  s.ranks[1].tensors.push_back(Tensor("flat2d", {big, 2}, {0, 0}, {big / 2, 2}, {}, {0}));
  const std::vector<Violation> v = CheckShardingIntegrity(s);
  ASSERT_EQ(v.size(), 3u) << FormatViolations(v);
  EXPECT_EQ(*v[0].box, (Box{{big / 2, 0}, {big / 2, big}}));
  EXPECT_EQ(*v[1].box, (Box{{big - 1}, {1}}));
  EXPECT_EQ(*v[2].box, (Box{{big / 2, 0}, {big / 2, 2}}));
}

// docs/BUGS.md B08: a per-expert scalar registered without the expert axis.
TEST(Validate, ExpertScalarWithoutExpertAxisIsCaught) {
  GlobalSignature s;
  for (int64_t ep = 0; ep < 4; ++ep) {
    RankSignature rank;
    rank.rank = ep;
    TensorSpec amax = Tensor("decoder.layers.mlp.experts.weight_quantizer._amax", {1}, {0}, {1},
                             {1}, {0, 0, 0}, DType::kFloat32);
    amax.origin = "expert " + std::to_string(ep) + " weight_quantizer._amax";
    amax.digest = 0x100 + ep;
    rank.tensors.push_back(amax);
    s.ranks.push_back(rank);
  }
  const Violation p4 = Only(CheckShardingIntegrity(s));
  EXPECT_EQ(p4.kind, ViolationKind::kOverlap);
  EXPECT_EQ(*p4.box, (Box{{0}, {1}}));
  EXPECT_EQ(p4.ranks, R({0, 1, 2, 3}));
  const std::vector<Violation> p5 = CheckKeyInjectivity(s);
  ASSERT_EQ(p5.size(), 2u) << FormatViolations(p5);
  EXPECT_EQ(p5[0].kind, ViolationKind::kKeyCollision);  // four origins
  EXPECT_EQ(p5[1].kind, ViolationKind::kKeyCollision);  // four main contents at one box
  EXPECT_EQ(*p5[1].box, (Box{{0}, {1}}));
  EXPECT_EQ(p5[1].ranks, R({0, 1, 2, 3}));
  // With the expert axis prepended the same state is clean.
  for (int64_t ep = 0; ep < 4; ++ep) {
    TensorSpec& t = s.ranks[ep].tensors[0];
    t.global_shape = {4, 1};
    t.global_offset = {ep, 0};
    t.axis_fragmentations = {4, 1};
    t.prepend_axis_num = 1;
    t.origin = "decoder.layers.mlp.experts.weight_quantizer._amax";
  }
  EXPECT_EQ(FormatViolations(CheckShardingIntegrity(s)), "no violations\n");
  EXPECT_EQ(FormatViolations(CheckKeyInjectivity(s)), "no violations\n");
}

// docs/BUGS.md B04: a fault save adds the rerun state machine's object; a sentinel save has none.
TEST(Validate, StructureDiffAddedRemovedReshapedReReplicated) {
  const GlobalSignature sentinel = CleanTp2Dp2();
  GlobalSignature fault = CleanTp2Dp2();
  for (int64_t r = 0; r < 4; ++r) {
    fault.ranks[r].objects.push_back(Object("rerun_state_machine_state", {4}, {r}, {0}));
  }
  StructureDiff diff = DiffStructure(sentinel, fault);
  ASSERT_EQ(diff.changes.size(), 1u);
  EXPECT_EQ(diff.changes[0].kind, ViolationKind::kAdded);
  EXPECT_TRUE(diff.changes[0].is_object);
  EXPECT_EQ(diff.changes[0].key, "rerun_state_machine_state");
  EXPECT_EQ(diff.changes[0].ranks, R({0, 1, 2, 3}));
  const Violation v = Only(diff.ToViolations());
  EXPECT_EQ(v.property, "P6");
  EXPECT_EQ(v.message,
            "ShardedObject 'rerun_state_machine_state' is only in the second signature (on ranks "
            "0-3): the structure depends on state");

  diff = DiffStructure(fault, sentinel);
  ASSERT_EQ(diff.changes.size(), 1u);
  EXPECT_EQ(diff.changes[0].kind, ViolationKind::kRemoved);

  GlobalSignature reshaped = CleanTp2Dp2();
  for (int64_t r = 0; r < 4; ++r) {
    *Find(reshaped, r, "w") = Tensor("w", {8, 4}, {0, 2 * (r % 2)}, {8, 2}, {1, 2}, {0, 0, r / 2});
  }
  diff = DiffStructure(sentinel, reshaped);
  ASSERT_EQ(diff.changes.size(), 1u);
  EXPECT_EQ(diff.changes[0].kind, ViolationKind::kReshaped);
  EXPECT_EQ(diff.changes[0].ranks, R({0, 1, 2, 3}));
  EXPECT_EQ(diff.changes[0].detail,
            "rank 0: chunks [0:4, 0:4] bf16 of (8, 4) -> [0:8, 0:2] bf16 of (8, 4)");

  GlobalSignature dtype = CleanTp2Dp2();
  for (int64_t r = 0; r < 4; ++r) Find(dtype, r, "b")->dtype = DType::kFloat32;
  diff = DiffStructure(sentinel, dtype);
  ASSERT_EQ(diff.changes.size(), 1u);
  EXPECT_EQ(diff.changes[0].kind, ViolationKind::kReshaped);

  GlobalSignature rereplicated = CleanTp2Dp2();
  Find(rereplicated, 0, "b")->replica_id = {0, 0, 1};
  Find(rereplicated, 2, "b")->replica_id = {0, 0, 0};
  diff = DiffStructure(sentinel, rereplicated);
  ASSERT_EQ(diff.changes.size(), 1u);
  EXPECT_EQ(diff.changes[0].kind, ViolationKind::kReReplicated);
  EXPECT_EQ(diff.changes[0].ranks, R({0, 2}));
  EXPECT_EQ(diff.changes[0].detail,
            "rank 0: chunk [0:4] bf16 of (4,) replica id (0, 0, 0) -> (0, 0, 1)");

  // Digests, origins and common state are not structure.
  GlobalSignature content = CleanTp2Dp2();
  Find(content, 1, "w")->digest = 42;
  Find(content, 1, "w")->origin = "lm/w";
  content.ranks[3].common = json{{"iteration", 11}};
  EXPECT_TRUE(DiffStructure(sentinel, content).empty());
}

// --- Properties ---------------------------------------------------------------------------------

struct Partition {
  GlobalSignature signature;
  std::vector<Box> chunks;     // one per main chunk
  std::vector<int64_t> owner;  // rank of each chunk's main replica
};

// A random regular grid over a random global shape; every cell has one main replica and up to
// two non-main replicas, on random ranks.
rc::Gen<Partition> GenRegularPartition() {
  return rc::gen::exec([] {
    const int axes = *rc::gen::inRange(1, 4);
    const int prepend = *rc::gen::inRange(0, axes);
    Dims frags, cell;
    for (int a = 0; a < axes; ++a) {
      frags.push_back(*rc::gen::inRange<int64_t>(1, 5));
      cell.push_back(a < prepend ? 1 : *rc::gen::inRange<int64_t>(1, 4));
    }
    Dims global(axes);
    for (int a = 0; a < axes; ++a) global[a] = frags[a] * cell[a];
    RegularGrid grid;
    RC_ASSERT(RegularGrid::Make(global, frags, &grid));
    const int64_t num_ranks = *rc::gen::inRange<int64_t>(1, 9);
    Partition p;
    p.signature.ranks.resize(num_ranks);
    for (int64_t r = 0; r < num_ranks; ++r) p.signature.ranks[r].rank = r;
    for (int64_t c = 0; c < grid.num_cells(); ++c) {
      const Box box = grid.CellBox(c);
      // Cell 0 always has a non-main replica, so that removing a main never removes the key.
      const int replicas = *rc::gen::inRange(c == 0 ? 2 : 1, 4);
      const int main_index = *rc::gen::inRange(0, replicas);
      for (int k = 0; k < replicas; ++k) {
        TensorSpec t;
        t.key = "w";
        t.global_shape = global;
        t.global_offset = box.offset;
        t.local_shape.assign(box.shape.begin() + prepend, box.shape.end());
        t.prepend_axis_num = prepend;
        t.axis_fragmentations = frags;
        t.replica_id = {0, k == main_index ? 0 : k + 1};
        const int64_t r = *rc::gen::inRange<int64_t>(0, num_ranks);
        if (k == main_index) {
          p.chunks.push_back(box);
          p.owner.push_back(r);
        }
        p.signature.ranks[r].tensors.push_back(t);
      }
    }
    return p;
  });
}

// A random partition of [0, n) into chunks (the distributed optimizer's flat buffers), each with
// one main replica and up to two non-main replicas.
rc::Gen<Partition> GenFlatPartition() {
  return rc::gen::exec([] {
    const int64_t n = *rc::gen::inRange<int64_t>(1, 200);
    std::vector<int64_t> cuts =
        *rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(1, n + 1));
    cuts.push_back(0);
    cuts.push_back(n);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    const int64_t num_ranks = *rc::gen::inRange<int64_t>(1, 9);
    Partition p;
    p.signature.ranks.resize(num_ranks);
    for (int64_t r = 0; r < num_ranks; ++r) p.signature.ranks[r].rank = r;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const Box box{{cuts[i]}, {cuts[i + 1] - cuts[i]}};
      const int replicas = *rc::gen::inRange(i == 0 ? 2 : 1, 4);
      for (int k = 0; k < replicas; ++k) {
        const TensorSpec t = Tensor("flat", {n}, box.offset, box.shape, {}, {k}, DType::kFloat32);
        const int64_t r = *rc::gen::inRange<int64_t>(0, num_ranks);
        if (k == 0) {
          p.chunks.push_back(box);
          p.owner.push_back(r);
        }
        p.signature.ranks[r].tensors.push_back(t);
      }
    }
    return p;
  });
}

// Removes the main replica of chunk i (a gap) or adds a second main on a random rank (an overlap),
// and checks that exactly that is reported, at the chunk's box.
void CheckMutation(Partition p) {
  GlobalSignature& s = p.signature;
  const std::vector<Violation> clean = CheckShardingIntegrity(s);
  if (!clean.empty()) RC_FAIL("clean partition: " + FormatViolations(clean));
  const size_t i = *rc::gen::inRange<size_t>(0, p.chunks.size());
  std::vector<TensorSpec>& owned = s.ranks[p.owner[i]].tensors;
  auto main_of_chunk = std::find_if(owned.begin(), owned.end(), [&](const TensorSpec& t) {
    return IsMainReplica(t.replica_id) && t.box() == p.chunks[i];
  });
  RC_ASSERT(main_of_chunk != owned.end());
  const bool remove = *rc::gen::arbitrary<bool>();
  std::vector<int64_t> ranks;
  if (remove) {
    if (*rc::gen::arbitrary<bool>()) {
      owned.erase(main_of_chunk);
    } else {
      main_of_chunk->replica_id.back() = 7;  // demoted to a non-main replica
    }
  } else {
    const TensorSpec copy = *main_of_chunk;
    const int64_t r = *rc::gen::inRange<int64_t>(0, static_cast<int64_t>(s.ranks.size()));
    s.ranks[r].tensors.push_back(copy);
    ranks = {p.owner[i], r};
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  }
  RC_CLASSIFY(remove, "gap");
  RC_CLASSIFY(!remove, "overlap");
  const std::vector<Violation> v = CheckShardingIntegrity(s);
  if (v.size() != 1) RC_FAIL("expected exactly one violation, got " + FormatViolations(v));
  RC_ASSERT(v[0].kind == (remove ? ViolationKind::kGap : ViolationKind::kOverlap));
  RC_ASSERT(v[0].box.has_value());
  RC_ASSERT(*v[0].box == p.chunks[i]);
  if (!remove) RC_ASSERT(v[0].ranks == ranks);
  RC_ASSERT(v[0].message.find(BoxToString(p.chunks[i])) != std::string::npos);
}

RC_GTEST_PROP(ValidateProperties, RegularGridMutationsAreReportedExactly, ()) {
  CheckMutation(*GenRegularPartition());
}

RC_GTEST_PROP(ValidateProperties, FlatPartitionMutationsAreReportedExactly, ()) {
  CheckMutation(*GenFlatPartition());
}

RC_GTEST_PROP(ValidateProperties, FlatChunkGrowingIntoItsNeighbourOverlapsThere, ()) {
  Partition p = *GenFlatPartition();
  RC_PRE(p.chunks.size() >= 2);
  const size_t i = *rc::gen::inRange<size_t>(0, p.chunks.size() - 1);
  const int64_t grow = *rc::gen::inRange<int64_t>(1, p.chunks[i + 1].shape[0] + 1);
  for (TensorSpec& t : p.signature.ranks[p.owner[i]].tensors) {
    if (IsMainReplica(t.replica_id) && t.box() == p.chunks[i]) t.local_shape[0] += grow;
  }
  const std::vector<Violation> v = CheckShardingIntegrity(p.signature);
  if (v.size() != 1) RC_FAIL("expected one overlap, got " + FormatViolations(v));
  RC_ASSERT(v[0].kind == ViolationKind::kOverlap);
  const int64_t end = p.chunks[i].offset[0] + p.chunks[i].shape[0];
  RC_ASSERT(*v[0].box == (Box{{end}, {grow}}));
}

// The irregular sweep against brute force: random main chunks of a small 1-3-D tensor on an
// irregular grid, identical ones excluded. Every intersecting pair is reported once, with its
// intersection as the box and both chunks in the message, as long as the report is not capped.
RC_GTEST_PROP(ValidateProperties, IrregularOverlapsAreExactlyTheIntersectingPairs, ()) {
  const size_t rank = *rc::gen::inRange<size_t>(1, 4);
  const Dims shape(rank, 8);
  std::vector<Box> chunks;
  GlobalSignature s;
  const int64_t ranks = *rc::gen::inRange<int64_t>(1, 4);
  for (int64_t r = 0; r < ranks; ++r) s.ranks.push_back(RankSignature{r, {}, {}, json()});
  const size_t n = *rc::gen::inRange<size_t>(1, 12);
  for (size_t i = 0; i < n; ++i) {
    Box box;
    for (size_t a = 0; a < rank; ++a) {
      box.offset.push_back(*rc::gen::inRange<int64_t>(0, 8));
      box.shape.push_back(*rc::gen::inRange<int64_t>(1, 8 - box.offset.back() + 1));
    }
    if (std::find(chunks.begin(), chunks.end(), box) != chunks.end()) continue;
    chunks.push_back(box);
    const int64_t r = *rc::gen::inRange<int64_t>(0, ranks);
    s.ranks[r].tensors.push_back(Tensor("flat", shape, box.offset, box.shape, {}, {0, 0, 0}));
  }
  std::vector<std::string> expected;
  for (size_t i = 0; i < chunks.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      Box both;
      if (Intersect(chunks[i], chunks[k], &both)) expected.push_back(BoxToString(both));
    }
  }
  RC_PRE(expected.size() <= static_cast<size_t>(kMaxReportsPerKey));
  RC_CLASSIFY(expected.empty(), "disjoint");
  std::vector<std::string> reported;
  for (const Violation& v : CheckShardingIntegrity(s)) {
    if (v.kind != ViolationKind::kOverlap) continue;
    RC_ASSERT(v.box.has_value());
    reported.push_back(BoxToString(*v.box));
    size_t named = 0;
    for (const Box& c : chunks) named += v.message.find(BoxToString(c) + " ") != std::string::npos;
    RC_ASSERT(named >= 2u);
  }
  std::sort(expected.begin(), expected.end());
  std::sort(reported.begin(), reported.end());
  RC_ASSERT(reported == expected);
}

// Anything at all, valid or not: extents and offsets near the int64 limits, ranks that disagree,
// empty replica ids, repeated keys. The validators must return, never crash (run under ASan).
rc::Gen<GlobalSignature> GenArbitrarySignature() {
  return rc::gen::exec([] {
    const auto value = rc::gen::element<int64_t>(-1, 0, 1, 2, 3, 4, int64_t{1} << 40,
                                                 std::numeric_limits<int64_t>::max());
    const auto dims = rc::gen::container<Dims>(*rc::gen::inRange<size_t>(0, 3), value);
    GlobalSignature s;
    const int64_t n = *rc::gen::inRange<int64_t>(0, 4);
    for (int64_t r = 0; r < n; ++r) {
      RankSignature rank;
      rank.rank = *rc::gen::inRange(0, 4) == 0 ? 7 : r;
      const size_t tensors = *rc::gen::inRange<size_t>(0, 5);
      for (size_t i = 0; i < tensors; ++i) {
        TensorSpec t;
        t.key = *rc::gen::element<std::string>("a", "b", "");
        t.global_shape = *dims;
        t.global_offset = *dims;
        t.local_shape = *dims;
        if (*rc::gen::arbitrary<bool>()) t.axis_fragmentations = *dims;
        t.prepend_axis_num = *rc::gen::inRange(-1, 3);
        t.replica_id = *rc::gen::container<ReplicaId>(*rc::gen::inRange<size_t>(0, 3),
                                                      rc::gen::inRange<int64_t>(0, 2));
        if (*rc::gen::arbitrary<bool>()) t.digest = *rc::gen::inRange<uint64_t>(0, 3);
        t.origin = *rc::gen::element<std::string>("", "x", "y");
        rank.tensors.push_back(t);
      }
      const size_t objects = *rc::gen::inRange<size_t>(0, 3);
      for (size_t i = 0; i < objects; ++i) {
        ObjectSpec o;
        o.key = *rc::gen::element<std::string>("a", "o", "");
        o.global_shape = *dims;
        o.global_offset = *dims;
        o.replica_id = *rc::gen::container<ReplicaId>(*rc::gen::inRange<size_t>(0, 3),
                                                      rc::gen::inRange<int64_t>(0, 2));
        if (*rc::gen::arbitrary<bool>()) o.digest = *rc::gen::inRange<uint64_t>(0, 3);
        rank.objects.push_back(o);
      }
      rank.common =
          *rc::gen::element<json>(nullptr, json{{"a", 1}}, json{{"a", 1.0}}, json::array({1, "x"}));
      s.ranks.push_back(std::move(rank));
    }
    return s;
  });
}

RC_GTEST_PROP(ValidateProperties, ArbitrarySignaturesNeverCrashTheValidators, ()) {
  const GlobalSignature a = *GenArbitrarySignature();
  const GlobalSignature b = *GenArbitrarySignature();
  std::vector<Violation> all = CheckShardingIntegrity(a);
  for (auto* more : {&CheckKeyInjectivity, &CheckCommonState}) {
    const std::vector<Violation> v = (*more)(a);
    all.insert(all.end(), v.begin(), v.end());
  }
  const std::vector<Violation> p6 = DiffStructure(a, b).ToViolations();
  all.insert(all.end(), p6.begin(), p6.end());
  for (const Violation& v : all) {
    RC_ASSERT(!v.property.empty());
    RC_ASSERT(!v.message.empty());
    RC_ASSERT(std::is_sorted(v.ranks.begin(), v.ranks.end()));
    RC_ASSERT(std::adjacent_find(v.ranks.begin(), v.ranks.end()) == v.ranks.end());
  }
  RC_TAG(all.empty() ? "clean" : "violations");
}

}  // namespace
}  // namespace ckptspec
