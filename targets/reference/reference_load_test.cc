// The reference engine's load into templates of another dtype than the checkpoint's
// (reference_load.cc; model/dtype_conversion.h states the rule).
#include <gtest/gtest.h>

#include <cstring>

#include "model/float_codec.h"
#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::DictsOf;
using testing_util::LoadInto;
using testing_util::MakeSharding;
using testing_util::MemHarness;
using testing_util::SmallModel;
using testing_util::TemplatesOf;

uint64_t Element(const ShardedTensor& t, size_t i) {
  const int size = DTypeSize(t.spec.dtype);
  uint64_t v = 0;
  for (int b = 0; b < size; ++b) v |= static_cast<uint64_t>(t.data[i * size + b]) << (8 * b);
  return v;
}

// c10's round_to_nearest_even (PyTorch's float -> bfloat16), written from its definition: an
// oracle independent of the project's codecs, for finite values that stay finite.
uint32_t OracleBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u + ((u >> 16) & 1) + 0x7FFFu) >> 16;
}

// The templates of `sharding` with every tensor requested in `dtype`.
std::vector<ShardedStateDict> TemplatesIn(const ParameterSharding& sharding, DType dtype) {
  std::vector<ShardedStateDict> templates = TemplatesOf(sharding);
  for (ShardedStateDict& d : templates) {
    for (ShardedTensor& t : d.tensors) {
      t.spec.dtype = dtype;
      t.data.assign(static_cast<size_t>(Volume(t.spec.local_shape)) * DTypeSize(dtype), 0);
    }
  }
  return templates;
}

// A bf16 checkpoint loaded into fp32 templates, under its own layout (where a chunk would be read
// straight into the destination) and under another: every element is the saved value, exactly.
TEST(ReferenceLoad, WidensIntoAnFp32TemplateExactly) {
  ModelConfig model = SmallModel();
  model.params_dtype = DType::kBFloat16;
  MemHarness h;
  ASSERT_TRUE(h.engine->Save(1, DictsOf(MakeSharding(4, 2, 2, model), 5), SaveOptions()).ok());
  for (const auto& [tp, pp] : {std::pair<int, int>{2, 2}, {4, 1}}) {
    const ParameterSharding now = MakeSharding(4, tp, pp, model);
    LoadResult as_saved, widened;
    ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(now), &as_saved).ok());
    const Status s = LoadInto(*h.engine, TemplatesIn(now, DType::kFloat32), &widened);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (size_t r = 0; r < widened.state.size(); ++r) {
      for (size_t i = 0; i < widened.state[r].tensors.size(); ++i) {
        const ShardedTensor& w = widened.state[r].tensors[i];
        const ShardedTensor& b = as_saved.state[r].tensors[i];
        ASSERT_EQ(w.spec.dtype, DType::kFloat32);
        for (size_t e = 0; e < static_cast<size_t>(Volume(w.spec.local_shape)); ++e) {
          ASSERT_EQ(BitsToFloat(static_cast<uint32_t>(Element(w, e))),
                    BFloat16Codec::Decode(static_cast<uint32_t>(Element(b, e))))
              << w.spec.key << " element " << e << " (TP" << tp << " PP" << pp << ")";
        }
      }
    }
  }
}

// An fp32 checkpoint loaded into bf16 templates: rounded to nearest even, as PyTorch rounds.
TEST(ReferenceLoad, NarrowsIntoABf16TemplateRoundingToNearestEven) {
  ModelConfig model = SmallModel();
  model.params_dtype = DType::kFloat32;
  const ParameterSharding sharding = MakeSharding(2, 2, 1, model);
  MemHarness h;
  ASSERT_TRUE(h.engine->Save(1, DictsOf(sharding, 9), SaveOptions()).ok());
  LoadResult as_saved, narrowed;
  ASSERT_TRUE(LoadInto(*h.engine, TemplatesOf(sharding), &as_saved).ok());
  ASSERT_TRUE(LoadInto(*h.engine, TemplatesIn(sharding, DType::kBFloat16), &narrowed).ok());
  int64_t rounded_up = 0, checked = 0;
  for (size_t r = 0; r < narrowed.state.size(); ++r) {
    for (size_t i = 0; i < narrowed.state[r].tensors.size(); ++i) {
      const ShardedTensor& n = narrowed.state[r].tensors[i];
      const ShardedTensor& f = as_saved.state[r].tensors[i];
      for (size_t e = 0; e < static_cast<size_t>(Volume(n.spec.local_shape)); ++e) {
        const uint32_t bits = static_cast<uint32_t>(Element(f, e));
        ASSERT_EQ(Element(n, e), OracleBf16(BitsToFloat(bits))) << n.spec.key << " element " << e;
        rounded_up += Element(n, e) != (bits >> 16);  // truncation would keep the top half
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_GT(rounded_up, 0);
}

ShardedStateDict OneTensor(DType dtype, const std::vector<uint8_t>& data, int64_t n) {
  ShardedStateDict d;
  ShardedTensor t;
  t.spec.key = "w";
  t.spec.dtype = dtype;
  t.spec.global_shape = {n};
  t.spec.global_offset = {0};
  t.spec.local_shape = {n};
  t.spec.replica_id = {0};
  t.data = data;
  d.tensors.push_back(std::move(t));
  return d;
}

// Integer entries convert into nothing else, and a finite value that does not fit the template's
// dtype is refused: each error names the tensor and both dtypes (or the element).
TEST(ReferenceLoad, RefusesIntegerConversionsAndOverflowNamingTheTensor) {
  MemHarness h;
  std::vector<uint8_t> steps(16, 0);
  steps[0] = 3;
  ASSERT_TRUE(h.engine
                  ->Save(1, std::vector<ShardedStateDict>{OneTensor(DType::kInt64, steps, 2)},
                         SaveOptions())
                  .ok());
  LoadResult result;
  for (DType to : {DType::kFloat32, DType::kInt32}) {
    const Status s = LoadInto(
        *h.engine, {TemplateOf(OneTensor(to, std::vector<uint8_t>(2 * DTypeSize(to), 0), 2))},
        &result);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << DTypeName(to);
    EXPECT_NE(s.message().find("tensor 'w': checkpoint dtype int64, requested " +
                               std::string(DTypeName(to))),
              std::string::npos)
        << s.ToString();
  }

  MemHarness big;
  std::vector<uint8_t> values(8, 0);
  const uint32_t fits = FloatToBits(1.5f), overflows = FloatToBits(1.0e6f);
  std::memcpy(values.data(), &fits, 4);
  std::memcpy(values.data() + 4, &overflows, 4);
  ASSERT_TRUE(big.engine
                  ->Save(1, std::vector<ShardedStateDict>{OneTensor(DType::kFloat32, values, 2)},
                         SaveOptions())
                  .ok());
  const Status s =
      LoadInto(*big.engine, {TemplateOf(OneTensor(DType::kFloat16, std::vector<uint8_t>(4, 0), 2))},
               &result);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor 'w': element 1"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("does not fit fp16"), std::string::npos) << s.ToString();
  ASSERT_TRUE(LoadInto(*big.engine,
                       {TemplateOf(OneTensor(DType::kBFloat16, std::vector<uint8_t>(4, 0), 2))},
                       &result)
                  .ok());  // bf16 has fp32's range
}

}  // namespace
}  // namespace ckptspec
