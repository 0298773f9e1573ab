// Hostile index text, with valid checksums so that only the JSON is wrong: `common` or `layout`
// nested 100,000 deep, in metadata.json (single index) or a writer's index.json (per-writer
// index), and keys given twice. Loading and `verify` name the error; nothing recurses per level.
// And what decoding a large metadata.json costs: under an address-space limit of three times its
// size plus a fixed allowance, the engine's metadata read (the one `verify` does) succeeds.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>

#include "model/address_limit_test_util.h"
#include "model/json_util.h"
#include "targets/reference/metadata_heavy_checkpoint.h"
#include "targets/reference/reference_test_util.h"
#include "targets/reference/verify.h"

namespace ckptspec {
namespace {

using testing_util::DictsOf;
using testing_util::EngineOn;
using testing_util::LoadInto;
using testing_util::MakeSharding;
using testing_util::TemplatesOf;

constexpr size_t kHostileDepth = 100000;
constexpr const char* kPlaceholder = "\"deep value goes here\"";

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Rewrites an index file (metadata.json or a writer's index.json) and its checksum file: the
// decoded index with `change` applied, encoded, then each placeholder string replaced by `splice`
// (text no JSON tree could be dumped from: dumping recurses).
void RewriteIndex(MemEnv* env, const std::string& dir, const char* name, const char* sum_name,
                  const std::function<void(CheckpointMetadata*)>& change,
                  const std::string& splice) {
  std::string text;
  ASSERT_TRUE(ReadFileToString(env, dir + "/" + name, kMaxMetadataBytes, &text).ok());
  CheckpointMetadata md;
  ASSERT_TRUE(DecodeMetadata(text, name, &md).ok());
  change(&md);
  text = EncodeMetadata(md);
  for (size_t at = text.find(kPlaceholder); at != std::string::npos; at = text.find(kPlaceholder)) {
    text.replace(at, std::string(kPlaceholder).size(), splice);
  }
  ASSERT_TRUE(ReplaceFileAtomically(env, dir + "/" + name, text).ok());
  ASSERT_TRUE(ReplaceFileAtomically(env, dir + "/" + sum_name,
                                    ChecksumHex(Checksum(text.data(), text.size())) + "\n")
                  .ok());
}

void SetCommon(CheckpointMetadata* md) { md->common = nlohmann::json::parse(kPlaceholder); }
void SetLayout(CheckpointMetadata* md) { md->layout = nlohmann::json::parse(kPlaceholder); }

// Loading fails with a Corruption holding `needle`; verify reports it as a finding.
void ExpectLoadAndVerifyName(MemEnv* env, IndexLayout layout, const std::string& needle) {
  auto engine = EngineOn(env, layout);
  LoadResult result;
  const Status s = LoadInto(*engine, TemplatesOf(MakeSharding(4, 2, 1)), &result);
  EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
  VerifyReport report;
  ASSERT_TRUE(VerifyCheckpoint(env, "/ckpt", /*all_iterations=*/false, &report).ok());
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_NE(report.findings[0].find(needle), std::string::npos) << report.findings[0];
}

std::string DeepError(const std::string& file, const std::string& member) {
  return file + ": " + member + "[0][0][0][0][0]...[0][0][0][0][0][0]: nests deeper than " +
         std::to_string(kDefaultMaxJsonDepth) + " levels at byte ";
}

// Iteration 5 of a TP2 DP2 run saved in `layout` on a fresh MemEnv.
void SaveOn(MemEnv* env, IndexLayout layout) {
  ASSERT_TRUE(env->CreateDir("/ckpt").ok());
  ASSERT_TRUE(env->SyncDir("/").ok());
  ASSERT_TRUE(
      EngineOn(env, layout)->Save(5, DictsOf(MakeSharding(4, 2, 1), 7), SaveOptions()).ok());
}

class MetadataReaderTest : public testing::Test {
 protected:
  void Save(IndexLayout layout) { ASSERT_NO_FATAL_FAILURE(SaveOn(&env_, layout)); }
  MemEnv env_;
};

TEST(MetadataReader, DeepCommonOrLayoutInMetadataJsonIsANamedError) {
  for (const auto& [member, change] :
       {std::pair<const char*, void (*)(CheckpointMetadata*)>{"common", SetCommon},
        {"layout", SetLayout}}) {
    MemEnv env;
    ASSERT_NO_FATAL_FAILURE(SaveOn(&env, IndexLayout::kSingle));
    ASSERT_NO_FATAL_FAILURE(RewriteIndex(&env, "/ckpt/iter_0000005", kMetadataFileName,
                                         kMetadataChecksumFileName, change, Nested(kHostileDepth)));
    ExpectLoadAndVerifyName(&env, IndexLayout::kSingle,
                            DeepError("/ckpt/iter_0000005/metadata.json", member));
  }
}

TEST_F(MetadataReaderTest, DeepCommonInAPerWriterIndexIsANamedError) {
  Save(IndexLayout::kPerWriter);
  const std::string writer = "/ckpt/iter_0000005/" + WriterDirName(1);
  ASSERT_NO_FATAL_FAILURE(RewriteIndex(&env_, writer, kWriterIndexFileName,
                                       kWriterIndexChecksumFileName, SetCommon,
                                       Nested(kHostileDepth)));
  ExpectLoadAndVerifyName(&env_, IndexLayout::kPerWriter,
                          DeepError(writer + "/index.json", "common"));
}

TEST_F(MetadataReaderTest, NestingWithinTheLimitStillLoads) {
  // Deep but allowed: the decoded tree is copied and compared across writers (recursively) safely.
  Save(IndexLayout::kPerWriter);
  const std::string deep = Nested(kDefaultMaxJsonDepth - 2);
  for (int64_t rank : {0, 1}) {
    ASSERT_NO_FATAL_FAILURE(RewriteIndex(&env_, "/ckpt/iter_0000005/" + WriterDirName(rank),
                                         kWriterIndexFileName, kWriterIndexChecksumFileName,
                                         SetCommon, deep));
  }
  CheckpointMetadata md;
  const Status s = EngineOn(&env_, IndexLayout::kPerWriter)->ReadMetadata(5, &md);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(JsonDeeperThan(md.common, kDefaultMaxJsonDepth - 4));  // an empty [] counts 0
}

TEST_F(MetadataReaderTest, AKeyTwiceInMetadataJsonIsANamedError) {
  // "tensors" again, empty: last-wins would read a checkpoint without tensors.
  Save(IndexLayout::kSingle);
  ASSERT_NO_FATAL_FAILURE(RewriteIndex(&env_, "/ckpt/iter_0000005", kMetadataFileName,
                                       kMetadataChecksumFileName, SetCommon,
                                       "{\"iteration\": 5}, \"tensors\": []"));
  ExpectLoadAndVerifyName(
      &env_, IndexLayout::kSingle,
      "/ckpt/iter_0000005/metadata.json: (root): duplicate key \"tensors\" at byte ");
}

TEST_F(MetadataReaderTest, AKeyTwiceInAChunkIsANamedError) {
  Save(IndexLayout::kSingle);
  ASSERT_NO_FATAL_FAILURE(RewriteIndex(
      &env_, "/ckpt/iter_0000005", kMetadataFileName, kMetadataChecksumFileName,
      [](CheckpointMetadata* md) { md->tensors[0].chunks[0].extent.checksum = 0; }, std::string()));
  // The first chunk's checksum member, written twice.
  std::string text;
  ASSERT_TRUE(
      ReadFileToString(&env_, "/ckpt/iter_0000005/metadata.json", kMaxMetadataBytes, &text).ok());
  const std::string member = "\"xxh3\": \"0000000000000000\"";
  const size_t at = text.find(member);
  ASSERT_NE(at, std::string::npos);
  text.insert(at, member + ", ");
  ASSERT_TRUE(ReplaceFileAtomically(&env_, "/ckpt/iter_0000005/metadata.json", text).ok());
  ASSERT_TRUE(ReplaceFileAtomically(&env_, "/ckpt/iter_0000005/metadata.xxh3",
                                    ChecksumHex(Checksum(text.data(), text.size())) + "\n")
                  .ok());
  ExpectLoadAndVerifyName(&env_, IndexLayout::kSingle,
                          "metadata.json: tensors[0].chunks[0]: duplicate key \"xxh3\" at byte ");
}

TEST(MetadataReader, ACommonTreeBeyondItsMemoryBoundIsANamedError) {
  // 3 MB of "{}," would take about 100 MB as a tree: more than kMaxMetadataTreeBytesPerByte per
  // byte of the text plus kMetadataTreeAllowance.
  CheckpointMetadata md;
  md.world_size = 1;
  md.common = nlohmann::json::parse(kPlaceholder);
  const auto empty_objects = [](int n) {
    std::string list = "[";
    for (int i = 0; i < n; ++i) list += "{},";
    return list + "{}]";
  };
  const std::string many = empty_objects(1000000);
  std::string text = EncodeMetadata(md);
  text.replace(text.find(kPlaceholder), std::string(kPlaceholder).size(), many);
  ASSERT_GT(96 * (many.size() / 3),
            kMaxMetadataTreeBytesPerByte * text.size() + kMetadataTreeAllowance);
  CheckpointMetadata out;
  const Status s = DecodeMetadata(text, "iter_0000001/metadata.json", &out);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_EQ(s.message().rfind("iter_0000001/metadata.json: common[", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("]: the JSON tree kept in memory exceeds "), std::string::npos)
      << s.message();
  // A tree a quarter of the size reads.
  text = EncodeMetadata(md);
  text.replace(text.find(kPlaceholder), std::string(kPlaceholder).size(), empty_objects(250000));
  EXPECT_TRUE(DecodeMetadata(text, "iter_0000001/metadata.json", &out).ok());
}

TEST(MetadataMemory, DecodingLargeMetadataFitsThreeTimesItsSize) {
#ifdef CKPTSPEC_NO_ADDRESS_LIMIT
  GTEST_SKIP() << testing_util::kNoAddressLimitReason;
#else
  char dir_template[] = "/tmp/ckptspec_metadata_memory_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string root = dir_template;
  MetadataHeavyShape shape;
  shape.tensors = 40;
  shape.chunks_per_tensor = 2500;  // 100,000 chunks: about 21 MB of metadata.json
  uint64_t metadata_bytes = 0;
  ASSERT_TRUE(WriteMetadataHeavyCheckpoint(Env::Posix(), root, shape, &metadata_bytes).ok());
  constexpr uint64_t kFixedAllowance = uint64_t{64} << 20;

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const uint64_t limit =
        testing_util::MappedAddressSpace() + 3 * metadata_bytes + kFixedAllowance;
    const rlimit rl{limit, limit};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
    ReferenceOptions options;
    options.env = Env::Posix();
    options.root = root;
    ReferenceEngine engine(std::move(options));
    CheckpointMetadata md;
    const Status s = engine.ReadMetadata(1, &md);
    _exit(s.ok() && md.tensors.size() == 40 && md.tensors[39].chunks.size() == 2500 ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(Env::Posix()->RemoveTree(root).ok());
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "reading " << metadata_bytes << " bytes of metadata did not fit 3x its size plus 64 MiB";
#endif
}

}  // namespace
}  // namespace ckptspec
