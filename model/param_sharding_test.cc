#include "model/param_sharding.h"

#include "model/validate.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <map>

namespace ckptspec {
namespace {

Layout MakeLayout(int64_t world, ParallelSizes sizes) {
  Layout layout;
  const Status s = Layout::Make(world, sizes, RankOrder(), &layout);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return layout;
}

ModelConfig SmallModel() {
  ModelConfig m;
  m.num_layers = 4;
  m.hidden_size = 16;
  m.num_attention_heads = 4;
  m.ffn_hidden_size = 32;
  m.vocab_size = 32;
  return m;
}

// Brute force, independent of the validators: every element of every key is covered by exactly
// one main replica, all entries of a key agree on dtype and global shape, and every entry passes
// the metadata integrity check. Returns a description of the first problem, or "".
std::string CheckExactlyOneMain(const GlobalSignature& sig) {
  std::map<std::string, std::vector<int>> counts;
  std::map<std::string, const TensorSpec*> first;
  for (const RankSignature& rank : sig.ranks) {
    for (const TensorSpec& t : rank.tensors) {
      const Status s = ValidateTensorSpec(t);
      if (!s.ok()) return s.ToString();
      auto [it, inserted] = first.emplace(t.key, &t);
      if (!inserted &&
          (it->second->dtype != t.dtype || it->second->global_shape != t.global_shape)) {
        return t.key + ": ranks disagree on dtype or global shape";
      }
      auto& c = counts[t.key];
      c.resize(Volume(t.global_shape));
      if (!IsMainReplica(t.replica_id)) continue;
      const Box box = t.box();
      Dims coord(box.rank(), 0);
      for (int64_t i = 0; i < Volume(box.shape); ++i) {
        int64_t rest = i;
        Dims g(box.rank());
        for (int a = box.rank() - 1; a >= 0; --a) {
          g[a] = box.offset[a] + rest % box.shape[a];
          rest /= box.shape[a];
        }
        ++c[LinearIndex(g, t.global_shape)];
      }
    }
  }
  for (const auto& [key, c] : counts) {
    for (size_t i = 0; i < c.size(); ++i) {
      if (c[i] != 1) {
        return key + ": element " + std::to_string(i) + " has " + std::to_string(c[i]) +
               " main replicas";
      }
    }
  }
  return "";
}

// Assembles every key's global tensor from the main replicas' data.
std::map<std::string, std::vector<uint8_t>> Assemble(const ParameterSharding& sharding,
                                                     uint64_t seed) {
  std::map<std::string, std::vector<uint8_t>> global;
  for (int64_t rank = 0; rank < sharding.world_size(); ++rank) {
    for (const ShardedTensor& t : sharding.RankStateDict(rank, seed).tensors) {
      if (!IsMainReplica(t.spec.replica_id)) continue;
      const int elem = DTypeSize(t.spec.dtype);
      auto& buffer = global[t.spec.key];
      buffer.resize(Volume(t.spec.global_shape) * elem);
      const Box box = t.spec.box();
      for (int64_t i = 0; i < Volume(box.shape); ++i) {
        int64_t rest = i;
        Dims g(box.rank());
        for (int a = box.rank() - 1; a >= 0; --a) {
          g[a] = box.offset[a] + rest % box.shape[a];
          rest /= box.shape[a];
        }
        memcpy(&buffer[LinearIndex(g, t.spec.global_shape) * elem], &t.data[i * elem], elem);
      }
    }
  }
  return global;
}

TEST(ParameterSharding, DenseTpPpDpReplicaIds) {
  ParameterSharding sharding;
  ASSERT_TRUE(
      ParameterSharding::Make(MakeLayout(8, {2, 2, 0, 1, 1, 0}), SmallModel(), &sharding).ok());
  EXPECT_EQ(CheckExactlyOneMain(sharding.Signature()), "");
  // Rank 3: tp 1, dp 1, pp 0 (first stage): the embedding, TP split along the vocab axis.
  const auto tensors = sharding.RankTensors(3);
  const TensorSpec& embedding = tensors.front();
  EXPECT_EQ(embedding.key, "embedding.word_embeddings.weight");
  EXPECT_EQ(embedding.global_offset, (Dims{16, 0}));
  EXPECT_EQ(embedding.local_shape, (Dims{16, 16}));
  EXPECT_EQ(embedding.replica_id, (ReplicaId{0, 0, 1}));
  // A replicated layer norm: (0, tp, dp), stacked under the layer axis.
  const TensorSpec& norm = tensors[1];
  EXPECT_EQ(norm.key, "decoder.layers.self_attention.linear_qkv.layer_norm_weight");
  EXPECT_EQ(norm.global_shape, (Dims{4, 16}));
  EXPECT_EQ(norm.prepend_axis_num, 1);
  EXPECT_EQ(norm.replica_id, (ReplicaId{0, 1, 1}));
  // Row-parallel proj: split along its axis 1 (axis 2 of the stacked tensor).
  for (const TensorSpec& t : tensors) {
    if (t.key == "decoder.layers.self_attention.linear_proj.weight") {
      EXPECT_EQ(t.global_offset[2], 8);
      EXPECT_EQ(t.axis_fragmentations, (Dims{4, 1, 2}));
    }
  }
}

TEST(ParameterSharding, TiedEmbeddingOnLastStageIsSecondaryCopy) {
  ParameterSharding sharding;
  ASSERT_TRUE(
      ParameterSharding::Make(MakeLayout(4, {1, 2, 0, 1, 1, 0}), SmallModel(), &sharding).ok());
  // Rank 2 is stage 1 (last) with dp 0: it holds the tied embedding with replica (1, 0, 0).
  bool found = false;
  for (const TensorSpec& t : sharding.RankTensors(2)) {
    if (t.key == "embedding.word_embeddings.weight") {
      found = true;
      EXPECT_EQ(t.replica_id, (ReplicaId{1, 0, 0}));
    }
    EXPECT_NE(t.key, "output_layer.weight");
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(CheckExactlyOneMain(sharding.Signature()), "");
  ModelConfig untied = SmallModel();
  untied.tie_embeddings = false;
  ASSERT_TRUE(ParameterSharding::Make(MakeLayout(4, {1, 2, 0, 1, 1, 0}), untied, &sharding).ok());
  EXPECT_EQ(sharding.RankTensors(2).back().key, "output_layer.weight");
  EXPECT_EQ(CheckExactlyOneMain(sharding.Signature()), "");
}

TEST(ParameterSharding, MoeExpertsOnEpAxisWithExpertTp) {
  ModelConfig model = SmallModel();
  model.num_experts = 4;
  model.moe_ffn_hidden_size = 8;
  // world 8: tp 2, dp 4; ep 2, etp 1 -> edp 4.
  ParameterSharding sharding;
  ASSERT_TRUE(ParameterSharding::Make(MakeLayout(8, {2, 1, 0, 1, 2, 1}), model, &sharding).ok());
  EXPECT_EQ(CheckExactlyOneMain(sharding.Signature()), "");
  // Rank 1: ep coordinate 1 -> experts 2 and 3; etp 1 -> whole fc1; edp 0.
  int experts = 0;
  for (const TensorSpec& t : sharding.RankTensors(1)) {
    if (t.key != "decoder.layers.mlp.experts.linear_fc1.weight") continue;
    ++experts;
    EXPECT_EQ(t.prepend_axis_num, 2);
    EXPECT_GE(t.global_offset[1], 2);
    EXPECT_EQ(t.global_shape, (Dims{4, 4, 8, 16}));
    EXPECT_EQ(t.local_shape, (Dims{8, 16}));
    EXPECT_EQ(t.replica_id, (ReplicaId{0, 0, 0}));
  }
  EXPECT_EQ(experts, 2 * 4);  // 2 local experts x 4 layers
}

TEST(ParameterSharding, MixedDenseAndMoeLayersGetPerLayerKeys) {
  ModelConfig model = SmallModel();
  model.num_experts = 2;
  model.moe_layer_freq = 2;
  ParameterSharding sharding;
  ASSERT_TRUE(ParameterSharding::Make(MakeLayout(4, {1, 2, 0, 1, 2, 0}), model, &sharding).ok());
  EXPECT_EQ(CheckExactlyOneMain(sharding.Signature()), "");
  bool saw_dense_layer_1 = false;
  for (const TensorSpec& t : sharding.RankTensors(0)) {
    if (t.key == "decoder.layers.1.mlp.linear_fc1.weight") {
      saw_dense_layer_1 = true;
      EXPECT_EQ(t.prepend_axis_num, 0);
    }
  }
  EXPECT_TRUE(saw_dense_layer_1);
}

TEST(ParameterSharding, HeterogeneousModulesHaveDisjointKeys) {
  ModelConfig vision = SmallModel();
  vision.name = "vision";
  vision.num_layers = 2;
  ModelConfig language = SmallModel();
  language.name = "language";
  HeterogeneousLayout layout;
  ASSERT_TRUE(HeterogeneousLayout::Make({{"vision", 0, MakeLayout(2, {2, 1, 0, 1, 1, 0})},
                                         {"language", 2, MakeLayout(8, {2, 2, 0, 1, 1, 0})}},
                                        &layout)
                  .ok());
  ParameterSharding sharding;
  ASSERT_TRUE(ParameterSharding::Make(layout, {vision, language}, &sharding).ok());
  EXPECT_EQ(CheckExactlyOneMain(sharding.Signature()), "");
  EXPECT_EQ(sharding.RankTensors(1).front().key, "vision.embedding.word_embeddings.weight");
  EXPECT_EQ(sharding.RankTensors(1).front().origin, "vision:param");
  EXPECT_EQ(sharding.RankTensors(2).front().key, "language.embedding.word_embeddings.weight");
  // A model whose name does not match its module is refused with the module named.
  const Status s = ParameterSharding::Make(layout, {language, vision}, &sharding);
  EXPECT_EQ(s.message(), "module 'vision': model config is named 'language'");
}

TEST(ParameterSharding, UnevenPipelineSplit) {
  ModelConfig model = SmallModel();
  model.num_layers = 6;
  model.pipeline_split = {1, 1};
  ParameterSharding sharding;
  ASSERT_TRUE(ParameterSharding::Make(MakeLayout(3, {1, 3, 0, 1, 1, 0}), model, &sharding).ok());
  EXPECT_EQ(CheckExactlyOneMain(sharding.Signature()), "");
}

// Resharding invariance of content: the global tensors assembled from any two layouts of the
// same model are byte-identical.
RC_GTEST_PROP(ParameterSharding, ContentIsLayoutIndependent, ()) {
  ModelConfig model = SmallModel();
  model.num_experts = *rc::gen::elementOf(std::vector<int>{0, 4});
  model.moe_ffn_hidden_size = 8;
  model.tie_embeddings = *rc::gen::arbitrary<bool>();
  model.gated_linear_unit = *rc::gen::arbitrary<bool>();
  model.add_bias = *rc::gen::arbitrary<bool>();
  auto gen_layout = [&] {
    const int64_t tp = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 4});
    const int64_t pp = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 4});
    const int64_t dp = *rc::gen::elementOf(std::vector<int64_t>{1, 2});
    const int64_t ep = model.num_experts ? *rc::gen::elementOf(std::vector<int64_t>{1, 2}) : 1;
    const int64_t etp = *rc::gen::elementOf(std::vector<int64_t>{1, tp});
    Layout layout;
    RC_PRE(Layout::Make(tp * pp * dp, {tp, pp, dp, 1, ep, etp}, RankOrder(), &layout).ok());
    return layout;
  };
  const Layout a = gen_layout();
  const Layout b = gen_layout();
  RC_LOG() << "layouts: " << a.ToString() << "  vs  " << b.ToString() << "\n";
  ParameterSharding sa, sb;
  RC_ASSERT(ParameterSharding::Make(a, model, &sa).ok());
  RC_ASSERT(ParameterSharding::Make(b, model, &sb).ok());
  RC_ASSERT(CheckExactlyOneMain(sa.Signature()) == "");
  RC_ASSERT(Assemble(sa, 42) == Assemble(sb, 42));
}

// The validators agree with the brute-force count on every generated layout, and the canonical
// sharding passes P4 and P5 everywhere, with content digests attached.
RC_GTEST_PROP(ParameterSharding, CanonicalShardingPassesValidators, ()) {
  ModelConfig model = SmallModel();
  model.num_experts = *rc::gen::elementOf(std::vector<int>{0, 2, 4});
  model.moe_layer_freq = *rc::gen::elementOf(std::vector<int>{1, 2});
  model.moe_ffn_hidden_size = 8;
  model.tie_embeddings = *rc::gen::arbitrary<bool>();
  const int64_t tp = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 4});
  const int64_t pp = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 4});
  const int64_t cp = *rc::gen::elementOf(std::vector<int64_t>{1, 2});
  const int64_t dp = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 3});
  const int64_t ep = model.num_experts ? *rc::gen::elementOf(std::vector<int64_t>{1, 2}) : 1;
  const int64_t etp = *rc::gen::elementOf(std::vector<int64_t>{1, tp});
  Layout layout;
  RC_PRE(Layout::Make(tp * pp * cp * dp, {tp, pp, dp, cp, ep, etp}, RankOrder(), &layout).ok());
  RC_LOG() << layout.ToString() << ", experts " << model.num_experts << "\n";
  RC_TAG(ep > 1 ? "ep>1" : "ep=1");
  ParameterSharding sharding;
  RC_ASSERT(ParameterSharding::Make(layout, model, &sharding).ok());
  GlobalSignature sig;
  for (int64_t rank = 0; rank < sharding.world_size(); ++rank) {
    sig.ranks.push_back(SignatureOf(rank, sharding.RankStateDict(rank, 7), /*with_digests=*/true));
  }
  RC_ASSERT(CheckExactlyOneMain(sig) == "");
  const auto p4 = CheckShardingIntegrity(sig);
  RC_LOG() << FormatViolations(p4);
  RC_ASSERT(p4.empty());
  const auto p5 = CheckKeyInjectivity(sig);
  RC_LOG() << FormatViolations(p5);
  RC_ASSERT(p5.empty());
}

}  // namespace
}  // namespace ckptspec
