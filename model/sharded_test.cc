#include "model/sharded.h"

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

TensorSpec Valid() {
  TensorSpec t;
  t.key = "decoder.layers.mlp.linear_fc1.weight";
  t.dtype = DType::kBFloat16;
  t.global_shape = {4, 8, 16};
  t.global_offset = {2, 4, 0};
  t.local_shape = {4, 16};
  t.axis_fragmentations = {4, 2, 1};
  t.prepend_axis_num = 1;
  t.replica_id = {0, 0, 1};
  return t;
}

TEST(Sharded, MainReplicaRule) {
  EXPECT_TRUE(IsMainReplica({0}));
  EXPECT_TRUE(IsMainReplica({0, 0, 0}));
  EXPECT_FALSE(IsMainReplica({0, 1, 0}));
  EXPECT_FALSE(IsMainReplica({1}));
  EXPECT_EQ(ReplicaIdToString({0, 1, 2}), "(0, 1, 2)");
}

TEST(Sharded, ObjectUniqueKeyFollowsMegatron) {
  ObjectSpec o;
  o.key = "rerun_state_machine_state";
  o.global_shape = {8};
  o.global_offset = {3};
  EXPECT_EQ(o.UniqueKey(), "rerun_state_machine_state/shard_3_8");
  o.key = "rng_state";
  o.global_shape = {2, 4};
  o.global_offset = {1, 3};
  EXPECT_EQ(o.UniqueKey(), "rng_state/shard_1.3_2.4");
}

TEST(Sharded, BoxIncludesPrependedAxes) { EXPECT_EQ(Valid().box(), (Box{{2, 4, 0}, {1, 4, 16}})); }

TEST(Sharded, ValidateTensorSpecNamesKeyAndField) {
  EXPECT_TRUE(ValidateTensorSpec(Valid()).ok());
  auto message = [](TensorSpec t) { return ValidateTensorSpec(t).message(); };
  TensorSpec t = Valid();
  t.global_offset = {2, 4};
  EXPECT_EQ(message(t),
            "tensor 'decoder.layers.mlp.linear_fc1.weight': global_offset (2, 4) has 2 "
            "axes but global_shape (4, 8, 16) has 3");
  t = Valid();
  t.prepend_axis_num = 0;
  EXPECT_NE(message(t).find("local_shape (4, 16) plus prepend_axis_num 0"), std::string::npos);
  t = Valid();
  t.global_offset = {2, 2, 0};
  EXPECT_NE(message(t).find("global_offset[1] = 2 is not a multiple of the chunk extent 4"),
            std::string::npos);
  t = Valid();
  t.global_offset = {2, 8, 0};
  EXPECT_NE(message(t).find("lies outside global_shape"), std::string::npos);
  t = Valid();
  t.global_shape = {4, -8, 16};
  EXPECT_NE(message(t).find("negative extent"), std::string::npos);
  t = Valid();
  t.global_shape = {int64_t{1} << 40, int64_t{1} << 40, 16};
  t.axis_fragmentations.clear();
  EXPECT_NE(message(t).find("overflows"), std::string::npos);
  t = Valid();
  t.axis_fragmentations = {4, 3, 1};
  EXPECT_NE(message(t).find("axis_fragmentations[1] = 3"), std::string::npos);
  t = Valid();
  t.replica_id.clear();
  EXPECT_NE(message(t).find("replica_id is an empty tuple"), std::string::npos);
  t = Valid();
  t.axis_fragmentations.clear();  // irregular grid: any in-bounds chunk is fine
  t.global_offset = {2, 3, 0};
  EXPECT_TRUE(ValidateTensorSpec(t).ok());
}

TEST(Sharded, ValidateObjectSpec) {
  ObjectSpec o;
  o.key = "rng_state";
  o.global_shape = {2, 4};
  o.global_offset = {1, 3};
  EXPECT_TRUE(ValidateObjectSpec(o).ok());
  o.global_offset = {1, 4};
  EXPECT_EQ(ValidateObjectSpec(o).message(),
            "object 'rng_state': global_offset (1, 4) lies outside global_shape (2, 4)");
  o.global_offset = {1};
  EXPECT_NE(ValidateObjectSpec(o).message().find("differ in rank"), std::string::npos);
}

TEST(Sharded, SignatureCarriesDigestsOnRequest) {
  ShardedStateDict state;
  state.tensors.push_back({Valid(), std::vector<uint8_t>(4 * 16 * 2, 7)});
  state.objects.push_back({ObjectSpec{"rng_state", {1}, {0}, {0}, "", std::nullopt}, "abc"});
  (*state.common.Mutable())["iteration"] = 10;
  const RankSignature plain = SignatureOf(3, state);
  EXPECT_EQ(plain.rank, 3);
  EXPECT_FALSE(plain.tensors[0].digest.has_value());
  EXPECT_EQ(plain.common->at("iteration"), 10);
  const RankSignature digested = SignatureOf(3, state, true);
  ASSERT_TRUE(digested.tensors[0].digest.has_value());
  state.tensors[0].data[5] = 8;
  EXPECT_NE(SignatureOf(3, state, true).tensors[0].digest, digested.tensors[0].digest);
  EXPECT_NE(digested.objects[0].digest, std::nullopt);
}

}  // namespace
}  // namespace ckptspec
