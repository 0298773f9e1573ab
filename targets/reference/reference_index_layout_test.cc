// The two index layouts of docs/FORMAT.md: a per-writer index (format version 2) saves, reshards and
// loads like the single index, either engine reads both, and the probe and the merge name what is
// wrong.
#include <gtest/gtest.h>

#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::CheckContent;
using testing_util::DictsOf;
using testing_util::EngineOn;
using testing_util::LoadInto;
using testing_util::MakeSharding;
using testing_util::TemplatesOf;

class IndexLayoutTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env_.CreateDir("/ckpt").ok());
    ASSERT_TRUE(env_.SyncDir("/").ok());
  }
  MemEnv env_;
};

TEST_F(IndexLayoutTest, PerWriterSavesOneIndexPerWriterAndReshards) {
  auto writer = EngineOn(&env_, IndexLayout::kPerWriter);
  ASSERT_TRUE(writer->Save(5, DictsOf(MakeSharding(4, 2, 1), 77), SaveOptions()).ok());
  std::vector<std::string> names;
  ASSERT_TRUE(env_.GetChildren("/ckpt/iter_0000005", &names).ok());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"writer_00000", "writer_00001"}))
      << "TP2 DP2: ranks 0 and 1 hold every main replica";
  EXPECT_TRUE(env_.FileExists("/ckpt/iter_0000005/writer_00001/index.json").ok());
  EXPECT_TRUE(env_.FileExists("/ckpt/iter_0000005/writer_00001/shard.bin").ok());

  // Read back by a single-index engine too: the layout is probed, not configured.
  for (IndexLayout reader_layout : {IndexLayout::kPerWriter, IndexLayout::kSingle}) {
    auto reader = EngineOn(&env_, reader_layout);
    LoadResult result;
    const Status s = LoadInto(*reader, TemplatesOf(MakeSharding(4, 4, 1)), &result);
    ASSERT_TRUE(s.ok()) << IndexLayoutName(reader_layout) << ": " << s.ToString();
    EXPECT_EQ(CheckContent(result.state, 77), "");
    CheckpointMetadata m;
    ASSERT_TRUE(reader->ReadMetadata(5, &m).ok());
    EXPECT_EQ(m.format_version, kPerWriterIndexFormatVersion);
    EXPECT_EQ(m.files.front().name, "writer_00000/shard.bin");
  }
}

TEST_F(IndexLayoutTest, AnIterationWithNeitherIndexIsNotFoundNamingBoth) {
  auto engine = EngineOn(&env_, IndexLayout::kSingle);
  ASSERT_TRUE(env_.CreateDir("/ckpt/iter_0000003").ok());
  CheckpointMetadata m;
  const Status s = engine->ReadMetadata(3, &m);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_EQ(s.message(),
            "/ckpt/iter_0000003: no metadata.json (single index) and no writer_* "
            "directory (per-writer index)");
}

TEST_F(IndexLayoutTest, AWritersIndexThatFailsItsChecksumIsNamed) {
  auto engine = EngineOn(&env_, IndexLayout::kPerWriter);
  ASSERT_TRUE(engine->Save(1, DictsOf(MakeSharding(2, 2, 1), 3), SaveOptions()).ok());
  const std::string path = "/ckpt/iter_0000001/writer_00001/index.json";
  std::string text;
  ASSERT_TRUE(ReadFileToString(&env_, path, 1 << 20, &text).ok());
  text[text.size() / 2] ^= 1;
  ASSERT_TRUE(WriteFileSynced(&env_, path, text).ok());
  CheckpointMetadata m;
  const Status s = engine->ReadMetadata(1, &m);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find(path + ": fails its XXH3 checksum"), std::string::npos)
      << s.ToString();
}

TEST_F(IndexLayoutTest, WritersThatDisagreeOnTheIterationAreCorruption) {
  auto engine = EngineOn(&env_, IndexLayout::kPerWriter);
  ASSERT_TRUE(engine->Save(1, DictsOf(MakeSharding(2, 2, 1), 3), SaveOptions()).ok());
  ASSERT_TRUE(engine->Save(2, DictsOf(MakeSharding(2, 2, 1), 3), SaveOptions()).ok());
  // Rank 1's index of iteration 2 copied into iteration 1: a valid file in the wrong place.
  for (const char* name : {"index.json", "index.xxh3"}) {
    std::string text;
    ASSERT_TRUE(ReadFileToString(&env_, std::string("/ckpt/iter_0000002/writer_00001/") + name,
                                 1 << 20, &text)
                    .ok());
    ASSERT_TRUE(
        WriteFileSynced(&env_, std::string("/ckpt/iter_0000001/writer_00001/") + name, text).ok());
  }
  CheckpointMetadata m;
  const Status s = engine->ReadMetadata(1, &m);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("writer_00001/index.json: iteration, world_size or common differ"),
            std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace ckptspec
