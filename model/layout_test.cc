#include "model/layout.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>

namespace ckptspec {
namespace {

Layout MakeLayout(int64_t world, ParallelSizes sizes, const std::string& order = "tp-cp-ep-dp-pp") {
  RankOrder parsed;
  EXPECT_TRUE(RankOrder::Parse(order, &parsed).ok());
  Layout layout;
  const Status s = Layout::Make(world, sizes, parsed, &layout);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return layout;
}

std::string MakeError(int64_t world, ParallelSizes sizes,
                      const std::string& order = "tp-cp-ep-dp-pp") {
  RankOrder parsed;
  Status s = RankOrder::Parse(order, &parsed);
  if (!s.ok()) return s.message();
  Layout layout;
  s = Layout::Make(world, sizes, parsed, &layout);
  return s.ok() ? "OK" : s.message();
}

// Megatron's documented example: 16 GPUs, tp 2, pp 4 (so dp 2).
TEST(Layout, MatchesMegatronDocstringExample) {
  const Layout layout = MakeLayout(16, {2, 4, 0, 1, 1, 0});
  EXPECT_EQ(layout.dp(), 2);
  EXPECT_EQ(layout.Group(GroupKind::kData, 0), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(layout.Group(GroupKind::kData, 13), (std::vector<int64_t>{13, 15}));
  EXPECT_EQ(layout.Group(GroupKind::kTensor, 6), (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(layout.Group(GroupKind::kPipeline, 1), (std::vector<int64_t>{1, 5, 9, 13}));
  const RankCoords c = layout.Coords(13);
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.dp, 0);
  EXPECT_EQ(c.pp, 3);
}

TEST(Layout, DataContextRankFollowsOrder) {
  // tp1 cp2 dp2: rank = cp + 2 dp; the dp-cp group varies cp fastest.
  const Layout layout = MakeLayout(4, {1, 1, 0, 2, 1, 0});
  EXPECT_EQ(layout.Group(GroupKind::kDataContext, 3), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(layout.Coords(2).dp_cp, 2);
  EXPECT_EQ(layout.Coords(2).dp, 1);
  EXPECT_EQ(layout.Coords(2).cp, 0);
  EXPECT_EQ(layout.Group(GroupKind::kContext, 2), (std::vector<int64_t>{2, 3}));
}

TEST(Layout, ExpertDecomposition) {
  // world 8, tp 2, ep 2, etp 1: expert sizes etp1 ep2 edp4.
  const Layout layout = MakeLayout(8, {2, 1, 0, 1, 2, 1});
  EXPECT_EQ(layout.edp(), 4);
  EXPECT_EQ(layout.Group(GroupKind::kExpert, 0), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(layout.Group(GroupKind::kExpertData, 0), (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(layout.Coords(5).ep, 1);
  EXPECT_EQ(layout.Coords(5).edp, 2);
  EXPECT_EQ(layout.Coords(5).tp, 1);
  EXPECT_EQ(layout.Coords(5).dp, 2);
}

TEST(Layout, NamedErrors) {
  EXPECT_EQ(MakeError(8, {3, 1, 0, 1, 1, 0}),
            "world_size = 8 is not divisible by tp × cp × pp = 3 × 1 × 1 = 3");
  EXPECT_EQ(MakeError(8, {2, 2, 4, 1, 1, 0}),
            "tp × cp × dp × pp = 2 × 1 × 4 × 2 = 16 does not equal world_size = 8");
  EXPECT_EQ(MakeError(8, {2, 1, 0, 1, 3, 0}), "ep = 3 does not divide dp × cp = 4 × 1 = 4");
  EXPECT_EQ(MakeError(8, {2, 1, 0, 1, 3, 1}),
            "etp × ep × pp = 1 × 3 × 1 = 3 does not divide world_size = 8");
  EXPECT_EQ(MakeError(8, {0, 1, 0, 1, 1, 0}), "tp = 0 must be in [1, world_size = 8]");
  EXPECT_EQ(MakeError(0, {1, 1, 0, 1, 1, 0}), "world_size = 0 must be in [1, 2^31]");
  EXPECT_EQ(MakeError(8, {1, 1, 0, 1, 1, 0}, "tp-xp"),
            "rank order 'tp-xp': unknown token 'xp' (expected tp, cp, ep, dp, pp joined by '-')");
  EXPECT_EQ(MakeError(8, {1, 1, 0, 1, 1, 0}, "tp-dp-tp"),
            "rank order 'tp-dp-tp' repeats token 'tp'");
  // pp not last, and ep changes the expert data-parallel size: stages disagree.
  const std::string stage_error = MakeError(8, {1, 2, 0, 1, 2, 0}, "tp-dp-pp-ep-cp");
  EXPECT_NE(stage_error.find("pipeline stage"), std::string::npos) << stage_error;
}

TEST(Layout, ModelChecksNameFieldAndSize) {
  const Layout layout = MakeLayout(8, {2, 2, 0, 1, 1, 0});
  ModelConfig model;
  model.num_attention_heads = 3;
  model.hidden_size = 48;
  Status s = ValidateModelForLayout(model, layout);
  EXPECT_EQ(s.message(), "num_attention_heads = 3 is not divisible by tp = 2");
  model = ModelConfig();
  model.num_layers = 3;
  s = ValidateModelForLayout(model, layout);
  EXPECT_NE(s.message().find("num_layers = 3 is not divisible by pp = 2"), std::string::npos);
  model = ModelConfig();
  model.vocab_size = 255;
  EXPECT_EQ(ValidateModelForLayout(model, layout).message(),
            "vocab_size = 255 is not divisible by tp = 2");
  const Layout moe_layout = MakeLayout(8, {1, 1, 0, 1, 4, 0});
  model = ModelConfig();
  EXPECT_EQ(ValidateModelForLayout(model, moe_layout).message(),
            "ep = 4 but the model has no experts (num_experts = 0)");
  model.num_experts = 6;
  EXPECT_EQ(ValidateModelForLayout(model, moe_layout).message(),
            "num_experts = 6 is not divisible by ep = 4");
  model.num_experts = 8;
  EXPECT_TRUE(ValidateModelForLayout(model, moe_layout).ok());
}

TEST(PipelineStages, EvenAndUnevenSplits) {
  ModelConfig model;
  model.num_layers = 126;
  PipelineStages stages;
  EXPECT_FALSE(PipelineStages::Make(model, 16, &stages).ok());
  model.pipeline_split = {7, 7};  // Llama-3-405B style: embedding and loss stages hold fewer layers
  ASSERT_TRUE(PipelineStages::Make(model, 16, &stages).ok());
  EXPECT_EQ(stages.num_layers(0), 7);
  EXPECT_EQ(stages.num_layers(1), 8);
  EXPECT_EQ(stages.num_layers(15), 7);
  EXPECT_EQ(stages.first_layer(15), 119);
  EXPECT_EQ(stages.StageOfLayer(0), 0);
  EXPECT_EQ(stages.StageOfLayer(7), 1);
  EXPECT_EQ(stages.StageOfLayer(125), 15);
  model.pipeline_split = {7, 6};
  const Status s = PipelineStages::Make(model, 16, &stages);
  EXPECT_NE(s.message().find("113 layers left for the other 14 stages"), std::string::npos)
      << s.ToString();
  model.num_layers = 4;
  model.pipeline_split = {0, -1};  // an empty first stage: everything on the second
  ASSERT_TRUE(PipelineStages::Make(model, 2, &stages).ok());
  EXPECT_EQ(stages.StageOfLayer(0), 1);
}

TEST(HeterogeneousLayout, NamedErrors) {
  const Layout vision = MakeLayout(4, {2, 1, 0, 1, 1, 0});
  const Layout language = MakeLayout(8, {2, 2, 0, 1, 1, 0});
  HeterogeneousLayout h;
  ASSERT_TRUE(
      HeterogeneousLayout::Make({{"language", 4, language}, {"vision", 0, vision}}, &h).ok());
  EXPECT_EQ(h.world_size(), 12);
  EXPECT_EQ(h.modules()[h.ModuleOf(3)].name, "vision");
  EXPECT_EQ(h.modules()[h.ModuleOf(4)].name, "language");
  EXPECT_EQ(h.LocalRank(11), 7);
  EXPECT_EQ(
      HeterogeneousLayout::Make({{"vision", 0, vision}, {"language", 2, language}}, &h).message(),
      "module 'language' ranks [2, 10) overlap module 'vision' ranks [0, 4)");
  EXPECT_EQ(
      HeterogeneousLayout::Make({{"vision", 0, vision}, {"language", 6, language}}, &h).message(),
      "ranks [4, 6) belong to no module");
  EXPECT_EQ(HeterogeneousLayout::Make({{"a", 0, vision}, {"a", 4, language}}, &h).message(),
            "module name 'a' is used twice");
  EXPECT_EQ(HeterogeneousLayout::Make({}, &h).message(), "heterogeneous layout has no modules");
}

// An independent oracle: Megatron's generate_masked_orthogonal_rank_groups, written from its
// docstring (groups enumerated by group index, members by in-group index).
std::vector<std::vector<int64_t>> OracleGroups(int64_t world, const std::vector<int64_t>& sizes,
                                               const std::vector<bool>& mask) {
  std::vector<int64_t> stride(sizes.size());
  int64_t s = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    stride[i] = s;
    s *= sizes[i];
  }
  std::vector<int64_t> masked_shape, unmasked_shape, masked_stride, unmasked_stride;
  for (size_t i = 0; i < sizes.size(); ++i) {
    (mask[i] ? masked_shape : unmasked_shape).push_back(sizes[i]);
    (mask[i] ? masked_stride : unmasked_stride).push_back(stride[i]);
  }
  auto decompose = [](int64_t index, const std::vector<int64_t>& shape) {
    std::vector<int64_t> idx;
    for (int64_t extent : shape) {
      idx.push_back(index % extent);
      index /= extent;
    }
    return idx;
  };
  int64_t group_size = 1;
  for (int64_t m : masked_shape) group_size *= m;
  std::vector<std::vector<int64_t>> groups;
  for (int64_t g = 0; g < world / group_size; ++g) {
    const auto gi = decompose(g, unmasked_shape);
    std::vector<int64_t> ranks;
    for (int64_t r = 0; r < group_size; ++r) {
      const auto ri = decompose(r, masked_shape);
      int64_t rank = 0;
      for (size_t i = 0; i < ri.size(); ++i) rank += ri[i] * masked_stride[i];
      for (size_t i = 0; i < gi.size(); ++i) rank += gi[i] * unmasked_stride[i];
      ranks.push_back(rank);
    }
    groups.push_back(ranks);
  }
  return groups;
}

RC_GTEST_PROP(Layout, GroupsMatchMegatronOracle, ()) {
  const int64_t tp = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 4});
  const int64_t cp = *rc::gen::elementOf(std::vector<int64_t>{1, 2});
  const int64_t dp = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 3, 4});
  const int64_t pp = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 3});
  const int64_t world = tp * cp * dp * pp;
  // Expert sizes that divide: etp from tp's divisors, ep a divisor of the rest.
  const int64_t etp = *rc::gen::elementOf(std::vector<int64_t>{1, tp});
  const int64_t rest = world / (etp * pp);
  std::vector<int64_t> ep_choices;
  for (int64_t e = 1; e <= rest; ++e) {
    if (rest % e == 0) ep_choices.push_back(e);
  }
  const int64_t ep = *rc::gen::elementOf(ep_choices);
  // Any order of the first four tokens; pp stays last (elsewhere a layout may be rejected).
  std::vector<std::vector<ParallelDim>> orders;
  std::vector<ParallelDim> perm = {ParallelDim::kTP, ParallelDim::kCP, ParallelDim::kEP,
                                   ParallelDim::kDP};
  do {
    orders.push_back(perm);
    orders.back().push_back(ParallelDim::kPP);
  } while (std::next_permutation(perm.begin(), perm.end()));
  const std::vector<ParallelDim> dims = *rc::gen::elementOf(orders);
  RankOrder order;
  std::copy(dims.begin(), dims.end(), order.dims.begin());
  Layout layout;
  const Status s = Layout::Make(world, {tp, pp, dp, cp, ep, etp}, order, &layout);
  RC_ASSERT(s.ok());
  RC_TAG(world <= 8 ? "world<=8" : "world>8");

  struct Case {
    GroupKind kind;
    bool expert;
    std::vector<ParallelDim> varied;
  };
  const std::vector<Case> cases = {
      {GroupKind::kTensor, false, {ParallelDim::kTP}},
      {GroupKind::kPipeline, false, {ParallelDim::kPP}},
      {GroupKind::kData, false, {ParallelDim::kDP}},
      {GroupKind::kContext, false, {ParallelDim::kCP}},
      {GroupKind::kDataContext, false, {ParallelDim::kDP, ParallelDim::kCP}},
      {GroupKind::kModel, false, {ParallelDim::kTP, ParallelDim::kPP}},
      {GroupKind::kExpert, true, {ParallelDim::kEP}},
      {GroupKind::kExpertTensor, true, {ParallelDim::kTP}},
      {GroupKind::kExpertData, true, {ParallelDim::kDP}},
  };
  for (const Case& c : cases) {
    std::vector<int64_t> sizes;
    std::vector<bool> mask;
    for (ParallelDim d : order.dims) {
      int64_t size = 1;
      switch (d) {
        case ParallelDim::kTP:
          size = c.expert ? etp : tp;
          break;
        case ParallelDim::kCP:
          size = c.expert ? 1 : cp;
          break;
        case ParallelDim::kEP:
          size = c.expert ? ep : 1;
          break;
        case ParallelDim::kDP:
          size = c.expert ? world / (etp * ep * pp) : dp;
          break;
        case ParallelDim::kPP:
          size = pp;
          break;
      }
      sizes.push_back(size);
      mask.push_back(std::find(c.varied.begin(), c.varied.end(), d) != c.varied.end());
    }
    for (const auto& group : OracleGroups(world, sizes, mask)) {
      for (size_t i = 0; i < group.size(); ++i) {
        RC_ASSERT(layout.Group(c.kind, group[i]) == group);
        RC_ASSERT(layout.GroupRank(c.kind, group[i]) == static_cast<int64_t>(i));
      }
    }
  }
  for (int64_t rank = 0; rank < world; ++rank) {
    const RankCoords co = layout.Coords(rank);
    RC_ASSERT(layout.DenseRank(co.tp, co.cp, co.dp, co.pp) == rank);
  }
}

}  // namespace
}  // namespace ckptspec
