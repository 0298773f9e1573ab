// Corruption and hostile metadata (P16): every case is a Status naming the file and the field;
// no crash, no allocation driven by an unchecked size, no access outside the checkpoint.
#include <gtest/gtest.h>

#include <functional>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using nlohmann::json;
using testing_util::LoadInto;
using testing_util::MemHarness;

constexpr const char* kDir = "/ckpt/iter_0000005";
constexpr const char* kMetadata = "/ckpt/iter_0000005/metadata.json";

std::vector<ShardedStateDict> Saved() {
  std::vector<ShardedStateDict> dicts(2);
  for (int64_t r = 0; r < 2; ++r) {
    for (const char* key : {"w", "v"}) {
      ShardedTensor t;
      t.spec.key = key;
      t.spec.dtype = DType::kFloat32;
      t.spec.global_shape = {4, 3};
      t.spec.global_offset = {2 * r, 0};
      t.spec.local_shape = {2, 3};
      t.data.resize(24);
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<uint8_t>(i + 40 * r);
      dicts[r].tensors.push_back(t);
    }
    ShardedObject o;
    o.spec.key = "rng_state";
    o.spec.global_shape = {2};
    o.spec.global_offset = {r};
    o.data = "rng" + std::to_string(r);
    dicts[r].objects.push_back(o);
  }
  return dicts;
}

std::vector<ShardedStateDict> Templates() {
  std::vector<ShardedStateDict> t;
  for (const auto& d : Saved()) t.push_back(TemplateOf(d));
  return t;
}

class ReferenceCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(h_.engine->Save(5, Saved(), SaveOptions()).ok());
    ASSERT_TRUE(ReadFileToString(&h_.env, kMetadata, 1 << 20, &original_).ok());
  }

  // The metadata as saved (every case starts from it).
  json Metadata() { return json::parse(original_); }
  // Replaces metadata.json with `text` and a matching metadata.xxh3.
  void WriteMetadata(const std::string& text) {
    ASSERT_TRUE(WriteFileSynced(&h_.env, kMetadata, text).ok());
    ASSERT_TRUE(WriteFileSynced(&h_.env, std::string(kDir) + "/metadata.xxh3",
                                ChecksumHex(Checksum(text.data(), text.size())) + "\n")
                    .ok());
  }
  Status Load() {
    LoadResult result;
    return LoadInto(*h_.engine, Templates(), &result);
  }
  // Mutates the metadata, loads, and expects an error whose message holds every needle.
  void ExpectError(const std::function<void(json&)>& mutate,
                   const std::vector<std::string>& needles,
                   Status::Code code = Status::Code::kCorruption) {
    json j = Metadata();
    mutate(j);
    WriteMetadata(j.dump());
    h_.env.ResetOpCount();
    const Status s = Load();
    EXPECT_EQ(s.code(), code) << s.ToString();
    for (const std::string& needle : needles) {
      EXPECT_NE(s.message().find(needle), std::string::npos)
          << "'" << needle << "' not in: " << s.ToString();
    }
    for (const std::string& op : h_.env.op_log()) {
      const bool inside = op.find(" /ckpt/iter_0000005/") != std::string::npos ||
                          op.find(" /ckpt/latest_checkpointed_iteration.txt") != std::string::npos;
      EXPECT_TRUE(inside && op.find("..") == std::string::npos) << "access outside: " << op;
    }
  }

  MemHarness h_;
  std::string original_;
};

TEST_F(ReferenceCorruption, IntactCheckpointLoads) { EXPECT_TRUE(Load().ok()); }

TEST_F(ReferenceCorruption, FlippedDataByteIsCaughtByItsChecksum) {
  ASSERT_TRUE(h_.env.CorruptStoredByte("/ckpt/iter_0000005/shard_00001.bin", 5, 0x10).ok());
  const Status s = Load();
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("shard_00001.bin"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("XXH3"), std::string::npos) << s.ToString();
  // The chunk is named (its box and tensor), though the name is made only for the error.
  EXPECT_NE(s.message().find(": chunk ["), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("] of tensor '"), std::string::npos) << s.ToString();
}

TEST_F(ReferenceCorruption, BitFlippedOnReadOfAnObjectIsCaught) {
  CheckpointMetadata m;
  ASSERT_TRUE(h_.engine->ReadMetadata(5, &m).ok());
  const Extent& e = m.objects[1].extent;
  h_.env.AddReadFault(
      {std::string(kDir) + "/" + m.files[e.file].name, ReadFault::Kind::kFlipBit, e.offset + 1, 3});
  const Status s = Load();
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("object 'rng_state/shard_1_2'"), std::string::npos) << s.ToString();
}

TEST_F(ReferenceCorruption, TruncatedOrMissingShardFileIsNamed) {
  ASSERT_TRUE(h_.env.TruncateStored("/ckpt/iter_0000005/shard_00000.bin", 10).ok());
  Status s = Load();
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("shard_00000.bin: 10 bytes on disk"), std::string::npos)
      << s.ToString();
  ASSERT_TRUE(h_.env.RemoveFile("/ckpt/iter_0000005/shard_00000.bin").ok());
  s = Load();
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("shard_00000.bin"), std::string::npos) << s.ToString();
}

TEST_F(ReferenceCorruption, EditedMetadataFailsItsChecksum) {
  ASSERT_TRUE(h_.env.CorruptStoredByte(kMetadata, 20, 0x01).ok());
  const Status s = Load();
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("metadata.json: fails its XXH3 checksum"), std::string::npos)
      << s.ToString();
}

TEST_F(ReferenceCorruption, BadJson) {
  WriteMetadata("{\"format\": [1, 2,");
  const Status s = Load();
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(
      s.message().find("metadata.json: parse error at byte 18, line 1, column 18: syntax error"),
      std::string::npos)
      << s.ToString();
  WriteMetadata(std::string(100000, '['));
  EXPECT_EQ(Load().code(), Status::Code::kCorruption);
}

TEST_F(ReferenceCorruption, WrongTypes) {
  ExpectError([](json& j) { j["tensors"][0]["global_shape"] = "abc"; },
              {"metadata.json", "tensors[0].global_shape", "expected an array"});
  ExpectError([](json& j) { j["tensors"][0]["chunks"][0]["byte_offset"] = 1.5; },
              {"tensors[0].chunks[0].byte_offset: expected a non-negative integer, got 1.5"});
  ExpectError([](json& j) { j["objects"][0]["xxh3"] = 12; },
              {"objects[0].xxh3: expected a string, got 12"});
  ExpectError([](json& j) { j["objects"][0]["xxh3"] = "ABC"; },
              {"objects[0].xxh3: expected 16 lowercase hex digits, got \"ABC\""});
  ExpectError([](json& j) { j["files"] = json::object(); }, {"files", "expected an array"});
  ExpectError([](json& j) { j.erase("tensors"); },
              {"metadata.json: (root): missing required member \"tensors\""});
  ExpectError([](json& j) { j = json::array(); },
              {"metadata.json: (root): expected an object, got []"});
}

TEST_F(ReferenceCorruption, NegativeAndOverflowingShapes) {
  ExpectError([](json& j) { j["tensors"][0]["global_shape"][0] = -4; },
              {"tensors[0].global_shape[0]", "-4"});
  ExpectError(
      [](json& j) {
        j["tensors"][0]["global_shape"] = {int64_t{1} << 62, int64_t{1} << 62};
      },
      {"tensors[0].global_shape", "overflows"});
  ExpectError([](json& j) { j["tensors"][0]["global_shape"][0] = uint64_t{18446744073709551615u}; },
              {"tensors[0].global_shape[0]", "overflows int64"});
  ExpectError([](json& j) { j["tensors"][0]["global_shape"][0] = 1e30; },
              {"tensors[0].global_shape[0]: integer 1e+30 overflows int64"});
  ExpectError([](json& j) { j["tensors"][0]["global_shape"][0] = 2.5; },
              {"tensors[0].global_shape[0]: expected a non-negative integer, got 2.5"});
  ExpectError([](json& j) { j["world_size"] = 0; }, {"world_size"});
  ExpectError([](json& j) { j["tensors"][0]["chunks"][0]["rank"] = 7; },
              {"tensors[0].chunks[0].rank"});
}

TEST_F(ReferenceCorruption, ChunkOutsideItsTensor) {
  ExpectError([](json& j) { j["tensors"][0]["chunks"][0]["offset"][0] = 3; },
              {"tensors[0].chunks[0].offset", "lies outside global shape (4, 3)"});
  ExpectError([](json& j) { j["tensors"][0]["chunks"][0]["shape"] = {2}; },
              {"tensors[0].chunks[0].shape", "differ in rank"});
  ExpectError([](json& j) { j["tensors"][0]["chunks"][1]["offset"][0] = 1; },
              {"chunks", "overlap"});  // found when a load reads the overlapping rows
}

TEST_F(ReferenceCorruption, FileNamesThatLeaveTheDirectory) {
  for (const char* name :
       {"../evil", "/etc/passwd", "a/b", "..", ".", "", "shard\\x", "metadata.json"}) {
    SCOPED_TRACE(name);
    ExpectError([&](json& j) { j["files"][0]["name"] = name; }, {"metadata.json", "files[0].name"});
  }
  ExpectError([](json& j) { j["files"][1]["name"] = j["files"][0]["name"]; },
              {"files[1].name", "duplicate file"});
}

TEST_F(ReferenceCorruption, SizesAndOffsetsFarAboveTheFile) {
  ExpectError([](json& j) { j["tensors"][0]["chunks"][0]["byte_offset"] = int64_t{1} << 60; },
              {"tensors[0].chunks[0].byte_offset", "exceeds file 'shard_00000.bin'"});
  ExpectError([](json& j) { j["objects"][0]["byte_size"] = int64_t{1} << 62; },
              {"objects[0].byte_offset", "exceeds file"});
  ExpectError([](json& j) { j["tensors"][0]["chunks"][0]["byte_size"] = 20; },
              {"tensors[0].chunks[0].byte_size", "elements of fp32"});
  // A declared file size far above the real one passes the schema and fails against the disk,
  // before anything is allocated from it.
  ExpectError([](json& j) { j["files"][0]["size"] = int64_t{1} << 50; },
              {"shard_00000.bin", "bytes on disk"});
  ExpectError([](json& j) { j["tensors"][0]["chunks"][0]["file"] = 9; },
              {"tensors[0].chunks[0].file"});
}

TEST_F(ReferenceCorruption, DuplicateKeys) {
  ExpectError([](json& j) { j["tensors"][1]["key"] = "w"; },
              {"tensors[1].key", "duplicate key 'w'"});
  ExpectError([](json& j) { j["objects"][1]["global_offset"] = {0}; },
              {"objects[1].key", "duplicate object 'rng_state/shard_0_2'"});
  ExpectError([](json& j) { j["objects"][0]["key"] = "w"; },
              {"objects[0].key", "also a tensor key"});
  // Rank-local objects are unique per (key, rank).
  ExpectError(
      [](json& j) {
        for (int i : {0, 1}) {
          j["objects"][i]["global_shape"] = json::array();
          j["objects"][i]["global_offset"] = json::array();
          j["objects"][i]["rank"] = 0;
        }
      },
      {"objects[1].key", "duplicate object 'rng_state/rank_0'"});
}

TEST_F(ReferenceCorruption, NewerFormatVersionIsNotSupported) {
  ExpectError([](json& j) { j["format_version"] = kReferenceFormatVersion + 1; },
              {"format_version", "newer than this reader"}, Status::Code::kNotSupported);
  ExpectError([](json& j) { j["format"] = "torch_dist"; }, {"format"});
  ExpectError([](json& j) { j["iteration"] = 6; }, {"iteration", "iter_0000005"});
}

TEST_F(ReferenceCorruption, HostileTrackerFile) {
  for (const char* text : {"abc", "", "../../etc", "99999999999999999999", "-3"}) {
    ASSERT_TRUE(WriteFileSynced(&h_.env, "/ckpt/latest_checkpointed_iteration.txt", text).ok());
    const Status s = Load();
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << text << ": " << s.ToString();
    EXPECT_NE(s.message().find("latest_checkpointed_iteration.txt"), std::string::npos);
  }
  ASSERT_TRUE(
      WriteFileSynced(&h_.env, "/ckpt/latest_checkpointed_iteration.txt", std::string(1 << 20, '7'))
          .ok());
  EXPECT_EQ(Load().code(), Status::Code::kCorruption);
  ASSERT_TRUE(WriteFileSynced(&h_.env, "/ckpt/latest_checkpointed_iteration.txt", "5\n").ok());
  EXPECT_TRUE(Load().ok());
}

TEST_F(ReferenceCorruption, TrackerNamingAMissingIterationIsNamed) {
  // The error names the tracker (the wrong file), not only the directory it points at.
  ASSERT_TRUE(WriteFileSynced(&h_.env, "/ckpt/latest_checkpointed_iteration.txt", "6").ok());
  const Status s = Load();
  EXPECT_EQ(s.code(), Status::Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("latest_checkpointed_iteration.txt"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("iter_0000006"), std::string::npos) << s.ToString();
}

TEST_F(ReferenceCorruption, MetadataDecoderNeverThrowsOnMutatedInput) {
  // Every single-byte change of a valid metadata text decodes to OK or a named error.
  json j = Metadata();
  const std::string text = j.dump();
  for (size_t i = 0; i < text.size(); i += 3) {
    for (char c : {'0', '-', '"', '}', '9', 'x'}) {
      std::string mutated = text;
      mutated[i] = c;
      CheckpointMetadata m;
      const Status s = DecodeMetadata(mutated, "m.json", &m);
      if (!s.ok()) {
        EXPECT_EQ(s.message().rfind("m.json: ", 0), 0u) << s.ToString();
      }
    }
  }
}

}  // namespace
}  // namespace ckptspec
