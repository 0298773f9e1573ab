// Properties of the CPU twin over random shards of random tensors: the report does not depend on
// the thread count and equals a one-element-at-a-time reference; generated expected values equal
// a buffer filled by model/content_fill.h.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "device/compare_accumulator.h"
#include "device/compare_host.h"
#include "device/compare_setup.h"
#include "device/element_compare.h"
#include "device/test_util.h"
#include "model/content.h"
#include "model/content_fill.h"

namespace ckptspec {
namespace device {
namespace {

using testing::ElementBuffer;
using testing::MakeGeometry;
using testing::Options;
using testing::SameReport;

struct Shard {
  Dims global;
  Box local;
};

rc::Gen<Shard> GenShard() {
  return rc::gen::exec([] {
    const int rank = *rc::gen::inRange(1, 5);
    Shard s;
    for (int a = 0; a < rank; ++a) {
      const int64_t extent = *rc::gen::inRange<int64_t>(1, rank <= 2 ? 300 : 12);
      const int64_t offset = *rc::gen::inRange<int64_t>(0, extent);
      const int64_t local = *rc::gen::inRange<int64_t>(0, extent - offset + 1);
      s.global.push_back(extent);
      s.local.offset.push_back(offset);
      s.local.shape.push_back(local);
    }
    return s;
  });
}

// One element at a time, in order, through the shared per-element function.
template <DType D>
CompareAccumulator Reference(const ElementBuffer& a, const ElementBuffer& e, const ShardIndexer& ix,
                             const CompareParams& p) {
  CompareAccumulator acc = EmptyAccumulator();
  for (int64_t i = 0; i < a.count(); ++i) {
    AccumulateElement<D>(a.Get(i), e.Get(i), i, ix.GlobalIndexOf(i), p, &acc);
  }
  return acc;
}

CompareAccumulator ReferenceFor(DType d, const ElementBuffer& a, const ElementBuffer& e,
                                const ShardIndexer& ix, const CompareParams& p) {
  switch (d) {
    case DType::kFloat32:
      return Reference<DType::kFloat32>(a, e, ix, p);
    case DType::kBFloat16:
      return Reference<DType::kBFloat16>(a, e, ix, p);
    case DType::kFloat16:
      return Reference<DType::kFloat16>(a, e, ix, p);
    case DType::kFloat8E4M3:
      return Reference<DType::kFloat8E4M3>(a, e, ix, p);
    case DType::kFloat8E5M2:
      return Reference<DType::kFloat8E5M2>(a, e, ix, p);
    case DType::kInt32:
      return Reference<DType::kInt32>(a, e, ix, p);
    case DType::kInt64:
      return Reference<DType::kInt64>(a, e, ix, p);
  }
  return EmptyAccumulator();
}

RC_GTEST_PROP(CompareHostProperty, ReportIsThreadInvariantAndEqualsTheReference, ()) {
  const Shard shard = *GenShard();
  const DType d =
      *rc::gen::elementOf(std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes)));
  const int64_t n = Volume(shard.local.shape);
  ElementBuffer expected(d, n);
  FillContent(d, 7, 99, shard.global, shard.local, expected.data());
  ElementBuffer actual = expected;
  // Corrupt a random subset: random bit patterns (NaNs, infinities and zeros included).
  const auto corruptions = *rc::gen::inRange<int>(0, 20);
  for (int k = 0; k < corruptions && n > 0; ++k) {
    const int64_t i = *rc::gen::inRange<int64_t>(0, n);
    actual.Set(i, *rc::gen::arbitrary<uint64_t>());
  }
  ckptspec_compare_options o = Options(d, *rc::gen::inRange(0, 3));
  o.max_ulp = *rc::gen::inRange<uint64_t>(0, 4);
  o.equal_nan = *rc::gen::inRange(0, 2);
  o.rtol = *rc::gen::elementOf(std::vector<double>{0, 1e-3, 0.5});
  o.atol = *rc::gen::elementOf(std::vector<double>{0, 1e-5, 2});
  const ckptspec_shard_geometry g = MakeGeometry(shard.global, shard.local);

  DType dt;
  CompareParams p;
  ShardIndexer ix;
  RC_ASSERT(ValidateOptions(o, &dt, &p).ok());
  RC_ASSERT(MakeIndexer(g, &ix).ok());
  const ckptspec_compare_report want =
      FinishReport(ReferenceFor(d, actual, expected, ix, p), g, ix);
  for (int threads : {1, 2, 5}) {
    o.threads = threads;
    ckptspec_compare_report got;
    RC_ASSERT(CompareHostBuffers(actual.data(), expected.data(), g, o, &got).ok());
    RC_ASSERT(SameReport(got, want));
  }
  // Planted elements are the only mismatches: everything else is bit-identical.
  RC_ASSERT(want.mismatch_count <= static_cast<uint64_t>(corruptions));
}

RC_GTEST_PROP(CompareHostProperty, GeneratedEqualsComparingAgainstFillContent, ()) {
  const Shard shard = *GenShard();
  const DType d =
      *rc::gen::elementOf(std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes)));
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const uint64_t key = KeyHash(*rc::gen::arbitrary<std::string>());
  const int64_t n = Volume(shard.local.shape);
  ElementBuffer expected(d, n);
  FillContent(d, seed, key, shard.global, shard.local, expected.data());
  ElementBuffer actual = expected;
  if (n > 0) {
    const int64_t i = *rc::gen::inRange<int64_t>(0, n);
    actual.Set(i, actual.Get(i) ^ 0x1);
  }
  const ckptspec_shard_geometry g = MakeGeometry(shard.global, shard.local);
  const ckptspec_compare_options o = Options(d, *rc::gen::inRange(0, 3));
  ckptspec_compare_report buffered, generated;
  RC_ASSERT(CompareHostBuffers(actual.data(), expected.data(), g, o, &buffered).ok());
  RC_ASSERT(CompareHostGenerated(actual.data(), seed, key, g, o, &generated).ok());
  RC_ASSERT(SameReport(buffered, generated));
  RC_ASSERT(buffered.mismatch_count == (n > 0 ? 1u : 0u));
}

}  // namespace
}  // namespace device
}  // namespace ckptspec
