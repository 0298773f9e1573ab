// The reference's consolidated export (checkpoint_export.h): what it holds, its import under other
// templates, and how a malformed export is refused.
#include "targets/reference/checkpoint_export.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::LoadInto;
using testing_util::MemHarness;
using testing_util::Tensor;

constexpr const char* kExportPath = "/exports/iter_7.export";

ShardedObject Object(ObjectSpec spec, std::string data) {
  ShardedObject o;
  o.spec = std::move(spec);
  o.data = std::move(data);
  return o;
}

ObjectSpec Sharded(const std::string& key, Dims shape, Dims offset) {
  ObjectSpec spec;
  spec.key = key;
  spec.global_shape = std::move(shape);
  spec.global_offset = std::move(offset);
  return spec;
}

// Two ranks: "w" split by rows, "b" replicated (rank 1's copy not main), a sharded object per
// rank, a rank-local object per rank, one common state.
std::vector<ShardedStateDict> TwoRanks() {
  std::vector<ShardedStateDict> dicts(2);
  for (int64_t r = 0; r < 2; ++r) {
    dicts[r].tensors.push_back(Tensor("w", {4, 3}, {2 * r, 0}, {2, 3}, {0, 0}, 0x10 + r));
    dicts[r].tensors.push_back(Tensor("b", {3}, {0}, {3}, {0, r}, 0x20));
    dicts[r].objects.push_back(
        Object(Sharded("rng_state", {2}, {r}), "rng of rank " + std::to_string(r)));
    dicts[r].objects.push_back(
        Object(RankLocalObjectSpec("local"), "local value of rank " + std::to_string(r)));
    dicts[r].common = {{"iteration", 7}, {"args", {{"lr", 0.5}}}};
  }
  return dicts;
}

// A checkpoint of TwoRanks() at iteration 7 and its export at kExportPath on the same Env.
struct Exported {
  Exported() {
    EXPECT_TRUE(h.engine->Save(7, TwoRanks(), SaveOptions()).ok());
    ReferenceExport exporter(h.engine.get());
    const Status s = exporter.Export(7, &h.env, kExportPath);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  std::string Bytes() {
    std::string bytes;
    EXPECT_TRUE(ReadFileToString(&h.env, kExportPath, 1 << 20, &bytes).ok());
    return bytes;
  }
  void Write(const std::string& bytes) {
    EXPECT_TRUE(WriteFileSynced(&h.env, kExportPath, bytes).ok());
  }
  Status Read() {
    CheckpointMetadata index;
    std::vector<ShardedStateDict> every_rank;
    return ReadExport(&h.env, kExportPath, &index, &every_rank);
  }
  MemHarness h;
};

TEST(CheckpointExport, HoldsEveryEntryWholeOnRankZeroAndEachRankLocalValueOnItsRank) {
  Exported e;
  CheckpointMetadata index;
  std::vector<ShardedStateDict> every_rank;
  const Status s = ReadExport(&e.h.env, kExportPath, &index, &every_rank);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(index.iteration, 7);
  EXPECT_EQ(index.world_size, 2);
  ASSERT_EQ(every_rank.size(), 2u);
  ASSERT_EQ(every_rank[0].tensors.size(), 2u);
  EXPECT_TRUE(every_rank[1].tensors.empty());
  const std::vector<ShardedStateDict> saved = TwoRanks();
  for (const ShardedTensor& t : every_rank[0].tensors) {
    EXPECT_EQ(t.spec, WholeTensorSpec(t.spec.key, DType::kFloat32, t.spec.global_shape));
    if (t.spec.key == "w") {
      std::vector<uint8_t> want = saved[0].tensors[0].data;
      want.insert(want.end(), saved[1].tensors[0].data.begin(), saved[1].tensors[0].data.end());
      EXPECT_EQ(t.data, want);
    } else {
      EXPECT_EQ(t.data, saved[0].tensors[1].data);
    }
  }
  ASSERT_EQ(every_rank[0].objects.size(), 3u);  // both rng_state shards and rank 0's local value
  ASSERT_EQ(every_rank[1].objects.size(), 1u);
  EXPECT_EQ(every_rank[1].objects[0].data, "local value of rank 1");
  for (const ShardedStateDict& d : every_rank) EXPECT_EQ(d.common, saved[0].common);
}

TEST(CheckpointExport, ImportedCheckpointLoadsUnderOtherTemplatesAsTheOriginal) {
  Exported e;
  MemHarness imported;
  ReferenceExport exporter(e.h.engine.get());
  int64_t iteration = -1;
  Status s = exporter.Import(&e.h.env, kExportPath, *imported.engine, &iteration);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(iteration, 7);
  // Three ranks: "w" by columns, each rank its rank-local value (rank 2 none saved: not asked).
  std::vector<ShardedStateDict> templates(3);
  for (int64_t r = 0; r < 3; ++r) {
    templates[r].tensors.push_back(Tensor("w", {4, 3}, {0, r}, {4, 1}, {0, 0}, 0));
    if (r < 2) templates[r].objects.push_back(Object(RankLocalObjectSpec("local"), ""));
    templates[r].objects.push_back(Object(Sharded("rng_state", {2}, {r % 2}), ""));
  }
  LoadResult original, from_import;
  s = LoadInto(*e.h.engine, templates, &original);
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = LoadInto(*imported.engine, templates, &from_import);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(from_import.state[r].tensors[0].data, original.state[r].tensors[0].data) << r;
    ASSERT_EQ(from_import.state[r].objects.size(), original.state[r].objects.size());
    for (size_t i = 0; i < original.state[r].objects.size(); ++i) {
      EXPECT_EQ(from_import.state[r].objects[i].data, original.state[r].objects[i].data) << r;
    }
    EXPECT_EQ(from_import.state[r].common, original.state[r].common);
  }
  EXPECT_EQ(from_import.state[1].objects[0].data, "local value of rank 1");
}

TEST(CheckpointExport, AnIterationWithoutACheckpointIsNotFound) {
  Exported e;
  ReferenceExport exporter(e.h.engine.get());
  EXPECT_TRUE(exporter.Export(8, &e.h.env, "/exports/none").code() == Status::Code::kNotFound);
}

TEST(CheckpointExport, MalformedExportsAreRefusedNamingWhatIsWrong) {
  Exported e;
  const std::string good = e.Bytes();
  ASSERT_TRUE(e.Read().ok());
  auto expect = [&e](const std::string& bytes, const std::string& says) {
    e.Write(bytes);
    const Status s = e.Read();
    EXPECT_TRUE(s.code() == Status::Code::kCorruption) << says << ": " << s.ToString();
    EXPECT_NE(s.message().find(says), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find(kExportPath), std::string::npos) << s.ToString();
  };
  expect(good.substr(0, 20), "shorter than an export's 32-byte header");
  std::string bad = good;
  bad[0] = 'C';
  expect(bad, "not a ckptspec export");
  bad = good;
  bad[16 + 7] = 0x7f;  // an index size beyond the file
  expect(bad, "index size");
  bad = good;
  bad[40] ^= 0x01;  // inside the index
  expect(bad, "the index's checksum does not match");
  bad = good;
  bad[bad.size() - 1] ^= 0x01;  // the last byte of the last item
  expect(bad, "checksum mismatch at offset");
  expect(good + "tail", "the data section after the index holds");
  expect(good.substr(0, good.size() - 1), "the data section after the index holds");
}

// The index of the export `bytes`.
CheckpointMetadata IndexOf(const std::string& bytes) {
  const uint64_t size = static_cast<uint8_t>(bytes[16]) | (static_cast<uint8_t>(bytes[17]) << 8);
  CheckpointMetadata m;
  EXPECT_TRUE(DecodeMetadata(bytes.substr(32, size), "index", &m).ok());
  return m;
}

// `bytes` with its index replaced by `m`'s text, the header's size and checksum to match.
std::string WithIndex(const std::string& bytes, const CheckpointMetadata& m) {
  const uint64_t size = static_cast<uint8_t>(bytes[16]) | (static_cast<uint8_t>(bytes[17]) << 8);
  const std::string text = EncodeMetadata(m);
  std::string out = bytes.substr(0, 16);
  for (uint64_t v : {uint64_t{text.size()}, Checksum(text.data(), text.size())}) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  return out + text + bytes.substr(32 + size);
}

// An index whose tensor is split in two chunks is not an export, even with valid data.
TEST(CheckpointExport, AnIndexWithASplitTensorIsNotConsolidated) {
  Exported e;
  const std::string good = e.Bytes();
  CheckpointMetadata m = IndexOf(good);
  ASSERT_EQ(m.tensors[0].key, "w");
  ChunkEntry first = m.tensors[0].chunks[0];
  ChunkEntry second = first;
  first.box.shape[0] = 2;
  first.extent.size /= 2;
  second.box.offset[0] = 2;
  second.box.shape[0] = 2;
  second.extent.size /= 2;
  second.extent.offset += second.extent.size;
  m.tensors[0].chunks = {first, second};
  e.Write(WithIndex(good, m));
  const Status s = e.Read();
  EXPECT_TRUE(s.code() == Status::Code::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("tensors[0] 'w': not consolidated"), std::string::npos)
      << s.ToString();
}

// A world the import would make a dict for per rank is bounded before anything is allocated.
TEST(CheckpointExport, AWorldBeyondTheImportBoundIsNotSupported) {
  Exported e;
  const std::string good = e.Bytes();
  CheckpointMetadata m = IndexOf(good);
  m.world_size = int64_t{1} << 17;
  e.Write(WithIndex(good, m));
  const Status s = e.Read();
  EXPECT_EQ(s.code(), Status::Code::kNotSupported) << s.ToString();
  EXPECT_NE(s.message().find("world_size 131072 exceeds"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace ckptspec
