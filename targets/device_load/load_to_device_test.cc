// Load to memory through the destination abstraction, on the host path (runs everywhere): the
// same round-trip checks that run on CUDA device state, with the CPU twin doing the comparing.
#include "targets/device_load/load_to_device.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "targets/device_load/load_test_util.h"
#include "targets/device_load/tensor_check.h"

namespace ckptspec {
namespace {

using testing_util::kLoadSeed;
using testing_util::MakeSharding;
using testing_util::MemHarness;
using testing_util::Plant;
using testing_util::SaveTp2;
using testing_util::TemplatesOf;
using testing_util::Tp4Request;

TEST(LoadToMemory, Tp2ToTp4HostRoundTripMatchesGeneratedContent) {
  MemHarness h;
  SaveTp2(&h, 10, false, nullptr);
  MemoryLoadResult loaded;
  const Status s = LoadToMemory(*h.engine, Tp4Request(10), MemoryKind::kHost, &loaded);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(loaded.result.iteration, 10);

  const auto templates = TemplatesOf(MakeSharding(4, 4, 1));
  size_t want_tensors = 0;
  for (const auto& d : templates) want_tensors += d.tensors.size();
  ASSERT_EQ(loaded.tensors.size(), want_tensors);
  for (const ShardedStateDict& d : loaded.result.state) {
    for (const ShardedTensor& t : d.tensors) EXPECT_TRUE(t.data.empty()) << t.spec.key;
  }

  std::vector<TensorCheck> checks;
  const Status c = CheckGenerated(loaded.tensors, kLoadSeed, CheckOptions(), &checks);
  ASSERT_TRUE(c.ok()) << c.ToString();
  ASSERT_EQ(checks.size(), loaded.tensors.size());
  for (size_t i = 0; i < checks.size(); ++i) {
    EXPECT_EQ(checks[i].report.mismatch_count, 0u) << DescribeCheck(checks[i]);
    EXPECT_EQ(checks[i].report.element_count,
              static_cast<uint64_t>(Volume(loaded.tensors[i].spec.local_shape)));
    EXPECT_EQ(checks[i].report.actual_checksum, checks[i].report.expected_checksum);
  }
  EXPECT_TRUE(AllMatch(checks));
}

TEST(LoadToMemory, WrongSeedIsReportedAsValueMismatches) {
  MemHarness h;
  SaveTp2(&h, 10, false, nullptr);
  MemoryLoadResult loaded;
  ASSERT_TRUE(LoadToMemory(*h.engine, Tp4Request(10), MemoryKind::kHost, &loaded).ok());
  std::vector<TensorCheck> checks;
  ASSERT_TRUE(CheckGenerated(loaded.tensors, kLoadSeed + 1, CheckOptions(), &checks).ok());
  EXPECT_FALSE(AllMatch(checks));
  for (const TensorCheck& c : checks) {
    EXPECT_GT(c.report.value_mismatches, 0u) << DescribeCheck(c);
    EXPECT_EQ(c.report.nan_mismatches + c.report.inf_mismatches, 0u) << DescribeCheck(c);
  }
}

// Host destinations produce exactly the bytes Engine::Load puts into the templates, and the
// generator's content, under resharding along either axis and across pipeline stages (CopyBox
// merges runs differently in each).
TEST(LoadToMemory, HostDestinationsGiveTheBytesOfLoad) {
  struct Shape {
    int64_t world, tp, pp;
  };
  for (const Shape& to :
       {Shape{4, 4, 1}, Shape{2, 1, 2}, Shape{4, 2, 2}, Shape{8, 4, 2}, Shape{1, 1, 1}}) {
    MemHarness h;
    SaveTp2(&h, 3, false, nullptr);
    LoadRequest request;
    request.iteration = 3;
    request.templates = TemplatesOf(MakeSharding(to.world, to.tp, to.pp));
    LoadResult classic;
    ASSERT_TRUE(h.engine->Load(request, &classic).ok());
    MemoryLoadResult loaded;
    const Status s = LoadToMemory(*h.engine, request, MemoryKind::kHost, &loaded);
    ASSERT_TRUE(s.ok()) << s.ToString();
    size_t i = 0;
    for (size_t r = 0; r < classic.state.size(); ++r) {
      for (const ShardedTensor& t : classic.state[r].tensors) {
        ASSERT_LT(i, loaded.tensors.size());
        const LoadedTensor& got = loaded.tensors[i++];
        EXPECT_EQ(got.rank, r);
        EXPECT_EQ(got.spec.key, t.spec.key);
        std::vector<uint8_t> bytes;
        ASSERT_TRUE(got.buffer->CopyToHost(&bytes).ok());
        EXPECT_EQ(bytes, t.data) << "tp" << to.tp << " pp" << to.pp << " rank " << r << " "
                                 << t.spec.key;
      }
    }
    EXPECT_EQ(i, loaded.tensors.size());
    std::vector<TensorCheck> checks;
    ASSERT_TRUE(CheckGenerated(loaded.tensors, kLoadSeed, CheckOptions(), &checks).ok());
    for (const TensorCheck& c : checks) {
      EXPECT_EQ(c.report.mismatch_count, 0u)
          << "tp" << to.tp << " pp" << to.pp << " " << DescribeCheck(c);
    }
  }
}

TEST(LoadToMemory, PlantedWrongValuesAreClassifiedAndLocated) {
  MemHarness h;
  std::vector<Plant> plants;
  SaveTp2(&h, 10, true, &plants);
  ASSERT_EQ(plants.size(), 2u);
  MemoryLoadResult loaded;
  ASSERT_TRUE(LoadToMemory(*h.engine, Tp4Request(10), MemoryKind::kHost, &loaded).ok());
  std::vector<TensorCheck> checks;
  ASSERT_TRUE(CheckGenerated(loaded.tensors, kLoadSeed, CheckOptions(), &checks).ok());

  // Every TP4 shard holding a planted element reports exactly that element; all else matches.
  std::map<std::string, const Plant*> by_key{{plants[0].key, &plants[0]},
                                             {plants[1].key, &plants[1]}};
  std::set<std::string> found;
  for (size_t i = 0; i < checks.size(); ++i) {
    const TensorCheck& c = checks[i];
    const auto it = by_key.find(c.key);
    if (it == by_key.end() || c.report.mismatch_count == 0) {
      EXPECT_EQ(c.report.mismatch_count, 0u) << DescribeCheck(c);
      continue;
    }
    const Plant& p = *it->second;
    EXPECT_EQ(c.report.mismatch_count, 1u) << DescribeCheck(c);
    EXPECT_EQ(c.report.first_mismatch_global_index, p.global_index) << DescribeCheck(c);
    EXPECT_NE(c.report.actual_checksum, c.report.expected_checksum);
    if (&p == &plants[0]) {
      EXPECT_EQ(c.report.nan_mismatches, 1u) << DescribeCheck(c);
    } else {
      EXPECT_EQ(c.report.value_mismatches, 1u) << DescribeCheck(c);
      EXPECT_EQ(c.report.max_ulp_error, 2u) << DescribeCheck(c);
    }
    found.insert(c.key);
  }
  EXPECT_EQ(found.size(), 2u) << "each planted value must show in some rank's shard";
}

TEST(LoadToMemory, CheckAgainstAnotherLoad) {
  MemHarness h;
  std::vector<Plant> plants;
  SaveTp2(&h, 1, false, nullptr);
  SaveTp2(&h, 2, true, &plants);
  MemoryLoadResult good, again, bad;
  ASSERT_TRUE(LoadToMemory(*h.engine, Tp4Request(1), MemoryKind::kHost, &good).ok());
  ASSERT_TRUE(LoadToMemory(*h.engine, Tp4Request(1), MemoryKind::kHost, &again).ok());
  ASSERT_TRUE(LoadToMemory(*h.engine, Tp4Request(2), MemoryKind::kHost, &bad).ok());
  std::vector<TensorCheck> checks;
  ASSERT_TRUE(CheckAgainst(again.tensors, good.tensors, CheckOptions(), &checks).ok());
  EXPECT_TRUE(AllMatch(checks));
  ASSERT_TRUE(CheckAgainst(bad.tensors, good.tensors, CheckOptions(), &checks).ok());
  uint64_t nan = 0, value = 0;
  for (const TensorCheck& c : checks) {
    nan += c.report.nan_mismatches;
    value += c.report.value_mismatches;
  }
  EXPECT_GE(nan, 1u);
  EXPECT_GE(value, 1u);
  EXPECT_EQ(nan + value, [&] {
    uint64_t n = 0;
    for (const TensorCheck& c : checks) n += c.report.mismatch_count;
    return n;
  }());

  // Tolerance mode with a loose atol accepts the finite planted value but not the NaN.
  CheckOptions loose;
  loose.mode = CKPTSPEC_COMPARE_TOLERANCE;
  loose.atol = 1.0;
  ASSERT_TRUE(CheckAgainst(bad.tensors, good.tensors, loose, &checks).ok());
  uint64_t mismatches = 0;
  for (const TensorCheck& c : checks) mismatches += c.report.mismatch_count;
  EXPECT_EQ(mismatches, nan);

  // Shards that do not correspond are refused.
  std::vector<LoadedTensor> shorter;
  EXPECT_EQ(CheckAgainst(shorter, good.tensors, CheckOptions(), &checks).code(),
            Status::Code::kInvalidArgument);
}

TEST(LoadToMemory, CorruptFileBytesFailTheStagingChecksum) {
  MemHarness h;
  SaveTp2(&h, 10, false, nullptr);
  ASSERT_TRUE(h.env.CorruptStoredByte("/ckpt/iter_0000010/shard_00000.bin", 17, 0x40).ok());
  MemoryLoadResult loaded;
  const Status s = LoadToMemory(*h.engine, Tp4Request(10), MemoryKind::kHost, &loaded);
  EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
  EXPECT_TRUE(loaded.tensors.empty());
}

TEST(LoadToMemory, DeviceLoadWithoutCudaIsNotSupported) {
  if (CudaAvailable().ok()) GTEST_SKIP() << "a CUDA device is present (see the CUDA tests)";
  MemHarness h;
  SaveTp2(&h, 10, false, nullptr);
  MemoryLoadResult loaded;
  const Status s = LoadToDevice(*h.engine, Tp4Request(10), &loaded);
  EXPECT_EQ(s.code(), Status::Code::kNotSupported);
  EXPECT_NE(s.ToString().find("no CUDA device"), std::string::npos) << s.ToString();
  EXPECT_TRUE(loaded.tensors.empty());
  std::unique_ptr<TensorBuffer> buffer;
  EXPECT_EQ(TensorBuffer::Allocate(MemoryKind::kCuda, 16, &buffer).code(),
            Status::Code::kNotSupported);
}

TEST(TensorBuffer, HostWritesStayInBounds) {
  std::unique_ptr<TensorBuffer> b;
  ASSERT_TRUE(TensorBuffer::Allocate(MemoryKind::kHost, 8, &b).ok());
  const uint8_t bytes[4] = {1, 2, 3, 4};
  EXPECT_TRUE(b->Write(4, bytes, 4).ok());
  EXPECT_EQ(b->Write(5, bytes, 4).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(b->Write(~uint64_t{0}, bytes, 2).code(), Status::Code::kInvalidArgument);
  std::vector<uint8_t> out;
  ASSERT_TRUE(b->Zero().ok());
  ASSERT_TRUE(b->Write(4, bytes, 4).ok());
  ASSERT_TRUE(b->CopyToHost(&out).ok());
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0, 0, 0, 1, 2, 3, 4}));
}

TEST(TensorCheck, GeometryOfAShard) {
  TensorSpec spec;
  spec.key = "w";
  spec.global_shape = {2, 8, 6};
  spec.global_offset = {1, 4, 0};
  spec.local_shape = {4, 6};
  spec.prepend_axis_num = 1;
  ckptspec_shard_geometry g;
  ASSERT_TRUE(ShardGeometryOf(spec, &g).ok());
  EXPECT_EQ(g.rank, 3);
  EXPECT_EQ(g.offset[0], 1);
  EXPECT_EQ(g.offset[1], 4);
  EXPECT_EQ(g.local_shape[0], 1);
  EXPECT_EQ(g.local_shape[1], 4);
  EXPECT_EQ(g.global_shape[2], 6);
  spec.global_shape.assign(9, 1);
  spec.global_offset.assign(9, 0);
  spec.local_shape.assign(8, 1);
  EXPECT_EQ(ShardGeometryOf(spec, &g).code(), Status::Code::kNotSupported);
}

}  // namespace
}  // namespace ckptspec
