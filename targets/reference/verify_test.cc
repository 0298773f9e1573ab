#include "targets/reference/verify.h"

#include <gtest/gtest.h>

#include <functional>

#include "targets/reference/format.h"
#include "targets/reference/reference_test_util.h"

namespace ckptspec {
namespace {

using testing_util::DictsOf;
using testing_util::MakeSharding;
using testing_util::MemHarness;

// Replaces /ckpt's metadata of `iteration` with `change` applied (its checksum file to match, so
// that only the change is wrong); *md receives the changed metadata.
void RewriteMetadata(MemEnv* env, int64_t iteration,
                     const std::function<void(CheckpointMetadata*)>& change,
                     CheckpointMetadata* md) {
  const std::string dir = "/ckpt/" + IterationDirName(iteration);
  std::string text;
  ASSERT_TRUE(ReadFileToString(env, dir + "/" + kMetadataFileName, kMaxMetadataBytes, &text).ok());
  ASSERT_TRUE(DecodeMetadata(text, "metadata.json", md).ok());
  ASSERT_NO_FATAL_FAILURE(change(md));
  text = EncodeMetadata(*md);
  ASSERT_TRUE(ReplaceFileAtomically(env, dir + "/" + kMetadataFileName, text).ok());
  ASSERT_TRUE(ReplaceFileAtomically(env, dir + "/" + kMetadataChecksumFileName,
                                    ChecksumHex(Checksum(text.data(), text.size())) + "\n")
                  .ok());
}

TEST(Verify, SoundCheckpointHasNoFindings) {
  MemHarness h;
  const ParameterSharding sharding = MakeSharding(4, 2, 2);
  ASSERT_TRUE(h.engine->Save(3, DictsOf(sharding, 1), SaveOptions()).ok());
  ASSERT_TRUE(h.engine->Save(5, DictsOf(sharding, 2), SaveOptions()).ok());
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&h.env, "/ckpt", /*all_iterations=*/true, &report).ok());
  EXPECT_TRUE(report.ok()) << report.findings.front();
  EXPECT_EQ(report.iterations, (std::vector<int64_t>{3, 5}));
  EXPECT_GT(report.chunks_checked, 0);
  EXPECT_GT(report.bytes_checked, 0u);
}

TEST(Verify, FlippedByteIsAFindingNamingTheFile) {
  MemHarness h;
  ASSERT_TRUE(h.engine->Save(3, DictsOf(MakeSharding(2, 2, 1), 1), SaveOptions()).ok());
  const std::string shard = "/ckpt/" + IterationDirName(3) + "/" + ShardFileName(1);
  ASSERT_TRUE(h.env.CorruptStoredByte(shard, 17, 0x40).ok());
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&h.env, "/ckpt", false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_NE(report.findings[0].find("checksum mismatch in " + shard), std::string::npos)
      << report.findings[0];
}

TEST(Verify, TrackerNamingAMissingIterationIsAFinding) {
  MemHarness h;
  ASSERT_TRUE(h.engine->Save(3, DictsOf(MakeSharding(2, 2, 1), 1), SaveOptions()).ok());
  ASSERT_TRUE(
      ReplaceFileAtomically(&h.env, "/ckpt/latest_checkpointed_iteration.txt", EncodeTracker(9))
          .ok());
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&h.env, "/ckpt", false, &report).ok());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.findings[0].find("tracker names iteration 9"), std::string::npos)
      << report.findings[0];
}

// Found by checkpoint_dir_fuzzer: a tensor whose metadata lists no chunk at all was missing from
// the coverage check, so verify called a checkpoint sound that no load can read.
TEST(Verify, TensorWithoutChunksIsACoverageFinding) {
  MemHarness h;
  ASSERT_TRUE(h.engine->Save(3, DictsOf(MakeSharding(2, 2, 1), 1), SaveOptions()).ok());
  CheckpointMetadata md;
  ASSERT_NO_FATAL_FAILURE(RewriteMetadata(
      &h.env, 3,
      [](CheckpointMetadata* m) {
        ASSERT_FALSE(m->tensors.empty());
        m->tensors[0].chunks.clear();
      },
      &md));
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&h.env, "/ckpt", false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u)
      << (report.findings.empty() ? "no finding" : report.findings[1]);
  EXPECT_NE(report.findings[0].find("coverage: tensor '" + md.tensors[0].key + "'"),
            std::string::npos)
      << report.findings[0];
}

// Found by checkpoint_dir_fuzzer: verify allocated one (empty) rank signature per rank of the
// metadata's world_size, so a world size of 2^31 asked for gigabytes. The coverage check now
// holds only the ranks that wrote something.
TEST(Verify, HugeWorldSizeCostsNothing) {
  MemHarness h;
  ASSERT_TRUE(h.engine->Save(3, DictsOf(MakeSharding(2, 2, 1), 1), SaveOptions()).ok());
  CheckpointMetadata md;
  ASSERT_NO_FATAL_FAILURE(RewriteMetadata(
      &h.env, 3, [](CheckpointMetadata* m) { m->world_size = int64_t{1} << 31; }, &md));
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(&h.env, "/ckpt", false, &report).ok());
  EXPECT_TRUE(report.ok()) << report.findings.front();
  EXPECT_GT(report.chunks_checked, 0);
}

TEST(Verify, MissingRootIsAnError) {
  MemEnv env;
  VerifyReport report;
  EXPECT_EQ(VerifyCheckpoint(&env, "/nowhere", false, &report).code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace ckptspec
