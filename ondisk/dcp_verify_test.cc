#include "ondisk/dcp_verify.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "formats/torch_tensor_item.h"
#include "ondisk/file_byte_source.h"
#include "ondisk/fixture_test_util.h"

namespace ckptspec {
namespace {

using testing_util::Fixture;
using testing_util::ScratchCopy;
using testing_util::VerifyDcp;
using testing_util::ViewOf;

std::string AllFindings(const DcpVerifyReport& r) {
  std::string all;
  for (const std::string& f : r.index.findings) all += f + "\n";
  for (const std::string& f : r.data_findings) all += f + "\n";
  return all;
}

std::map<std::string, uint64_t> Checksums(const std::string& name) {
  DcpVerifyReport report;
  EXPECT_TRUE(VerifyDcp(Fixture(name), &report).ok()) << name;
  std::map<std::string, uint64_t> sums;
  for (const TensorChecksum& c : report.checksums) sums[c.fqn] = c.checksum;
  return sums;
}

TEST(DcpVerify, RealCheckpointsOfDcpAndMegatronAreSound) {
  struct Case {
    const char* name;
    CheckpointKind kind;
    int64_t tensors, chunks, bytes_items;
  };
  for (const Case& c : {Case{"dcp_single", CheckpointKind::kDcp, 13, 13, 4},
                        Case{"dcp_two_ranks", CheckpointKind::kDcp, 4, 6, 1},
                        Case{"dcp_four_ranks_resharded", CheckpointKind::kDcp, 4, 11, 1},
                        Case{"torch_dist_mcore", CheckpointKind::kTorchDist, 2, 3, 2},
                        Case{"torch_dist_mcore_0_19", CheckpointKind::kTorchDist, 2, 3, 3}}) {
    DcpVerifyReport report;
    ASSERT_TRUE(VerifyDcp(Fixture(c.name), &report).ok()) << c.name;
    EXPECT_TRUE(report.ok()) << c.name << ":\n" << AllFindings(report);
    EXPECT_EQ(report.kind, c.kind) << c.name;
    EXPECT_EQ(report.index.tensors, c.tensors) << c.name;
    EXPECT_EQ(report.index.chunks, c.chunks) << c.name;
    EXPECT_EQ(report.index.bytes_items, c.bytes_items) << c.name;
    EXPECT_EQ(report.items_read, report.index.storage_entries) << c.name;
    EXPECT_EQ(report.checksums.size(), static_cast<size_t>(c.tensors)) << c.name;
  }
}

TEST(DcpVerify, TorchDistNamesItsBackendsAndCommonState) {
  DcpVerifyReport old_layout, new_layout;
  ASSERT_TRUE(VerifyDcp(Fixture("torch_dist_mcore"), &old_layout, false).ok());
  EXPECT_EQ(old_layout.sharded_backend, "torch_dist");
  EXPECT_EQ(old_layout.common_backend, "torch");
  EXPECT_EQ(old_layout.common_source, "common.pt");
  EXPECT_EQ(old_layout.common_keys, (std::vector<std::string>{"iteration", "args"}));
  EXPECT_EQ(old_layout.metadata_extras, std::vector<std::string>{"all_local_plans"});
  ASSERT_TRUE(VerifyDcp(Fixture("torch_dist_mcore_0_19"), &new_layout, false).ok());
  EXPECT_EQ(new_layout.common_source, "bytes item 'common_state/shard_0_1'");
  EXPECT_EQ(new_layout.common_keys, (std::vector<std::string>{"iteration", "args"}));
}

TEST(DcpVerify, ChecksumsDoNotDependOnTheLayout) {
  const auto two = Checksums("dcp_two_ranks");
  const auto four = Checksums("dcp_four_ranks_resharded");
  const auto changed = Checksums("dcp_four_ranks_changed");
  ASSERT_EQ(two.size(), 4u);
  EXPECT_EQ(two, four);
  for (const auto& [key, sum] : two) {
    // corpus/dcp/MANIFEST.json: one element of model.fc1.weight differs in the changed copy.
    if (key == "model.fc1.weight") {
      EXPECT_NE(changed.at(key), sum);
    } else {
      EXPECT_EQ(changed.at(key), sum) << key;
    }
  }
}

TEST(DcpVerify, EachCorruptionOfTheFixturesIsFoundAndNamed) {
  // The defects corpus/dcp/MANIFEST.json records, and the finding naming each.
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"corrupt_missing_file",
       "files: '__1_0.distcp' is missing (or not a regular file): 5 storage_data entries name it"},
      {"corrupt_truncated_file",
       "files: 'model.fc2.weight' at offset (0, 5): bytes [2966, 2966 + 1577) lie outside "
       "'__1_0.distcp' (3848 bytes)"},
      {"corrupt_overlap",
       "tiling: P4 overlap: tensor 'model.fc1.weight': main chunks [0:4, 0:8] and [2:6, 0:8] "
       "overlap in [2:4, 0:8]"},
      {"corrupt_hole",
       "tiling: P4 gap: tensor 'model.fc1.weight': no main replica covers [4:8, 0:8]"},
      {"corrupt_storage_overlap",
       "files: '__0_0.distcp': bytes [852, 1705) belong to both 'model.fc1.weight' at offset "
       "(0, 0) and 'model.fc2.weight' at offset (0, 0)"},
      {"corrupt_missing_storage",
       "storage: tensor 'model.fc2.weight': chunk [0:4, 5:10] has no storage_data entry"},
  };
  for (const auto& [name, finding] : cases) {
    DcpVerifyReport report;
    ASSERT_TRUE(VerifyDcp(Fixture(name), &report).ok()) << name;
    EXPECT_FALSE(report.ok()) << name;
    EXPECT_NE(AllFindings(report).find(finding), std::string::npos)
        << name << ": expected\n  " << finding << "\namong\n"
        << AllFindings(report);
  }
}

TEST(DcpVerify, AnUnknownGlobalInMetadataIsRefusedWithItsNameAndOffset) {
  DcpVerifyReport report;
  const Status s = VerifyDcp(Fixture("corrupt_unknown_global"), &report);
  EXPECT_EQ(s.code(), Status::Code::kNotSupported);
  EXPECT_NE(s.message().find("global 'argparse.Namespace' is not allowed"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("pickle byte 1879"), std::string::npos) << s.ToString();
}

TEST(DcpVerify, AFlippedDataByteIsACrcFindingNamingTheChunk) {
  ScratchCopy copy("dcp_two_ranks");
  // The first item of __0_0.distcp is model.fc1.weight's chunk [0:4, 0:8] (its storage entry
  // starts at byte 0): flip a byte of its elements.
  const std::string file = copy.dir() + "/__0_0.distcp";
  std::unique_ptr<Env> view = ViewOf(copy.dir());
  std::unique_ptr<FileByteSource> source;
  ASSERT_TRUE(FileByteSource::Open(view.get(), file, &source).ok());
  TorchTensorItem item;
  WindowByteSource window;
  ASSERT_TRUE(WindowByteSource::Make(*source, 0, 1705, &window).ok());
  ASSERT_TRUE(ReadTorchTensorItem(window, ZipLimits(), &item).ok());
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(item.data_offset + 5));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(item.data_offset + 5));
    f.put(static_cast<char>(c ^ 0x10));
  }
  DcpVerifyReport report;
  ASSERT_TRUE(VerifyDcp(copy.dir(), &report).ok());
  EXPECT_TRUE(report.index.ok()) << AllFindings(report);
  EXPECT_NE(AllFindings(report).find("data: tensor 'model.fc1.weight' chunk [0:4, 0:8]: "
                                     "'archive/data/0' has CRC-32"),
            std::string::npos)
      << AllFindings(report);
}

TEST(DcpVerify, ALinkInPlaceOfADataFileIsNotFollowed) {
  ScratchCopy copy("dcp_two_ranks");
  // __1_0.distcp replaced by a link to a file outside the checkpoint: never read.
  const std::string outside = copy.base() + "/outside.distcp";
  std::filesystem::rename(copy.dir() + "/__1_0.distcp", outside);
  std::filesystem::create_symlink(outside, copy.dir() + "/__1_0.distcp");
  DcpVerifyReport report;
  ASSERT_TRUE(VerifyDcp(copy.dir(), &report).ok());
  EXPECT_NE(AllFindings(report).find("'__1_0.distcp' is missing (or not a regular file)"),
            std::string::npos)
      << AllFindings(report);
  EXPECT_EQ(report.items_read, 2);  // the items of __0_0.distcp only
}

TEST(DcpVerify, AnEntryNamingAPathOutsideTheDirectoryIsAFindingAndNeverOpened) {
  ScratchCopy copy("dcp_two_ranks");
  // Rename __1_0.distcp in .metadata (one memoized string of the same length) to a path that
  // leaves the directory, and put the file there.
  const std::string metadata = copy.dir() + "/.metadata";
  std::string bytes;
  {
    std::ifstream in(metadata, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t at = bytes.find("__1_0.distcp");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 12, "../escape.cp");
  std::ofstream(metadata, std::ios::binary | std::ios::trunc) << bytes;
  std::filesystem::rename(copy.dir() + "/__1_0.distcp", copy.base() + "/escape.cp");
  DcpVerifyReport report;
  ASSERT_TRUE(VerifyDcp(copy.dir(), &report).ok());
  EXPECT_NE(AllFindings(report).find(
                "files: storage_data names '../escape.cp', not a file of the checkpoint directory"),
            std::string::npos)
      << AllFindings(report);
  EXPECT_EQ(report.items_read, 2);  // the items of __0_0.distcp only
}

TEST(DcpVerify, AMetadataBeyondTheLimitIsRefusedBeforeItIsRead) {
  std::unique_ptr<Env> view = ViewOf(Fixture("dcp_two_ranks"));
  DetectedCheckpoint detected;
  ASSERT_TRUE(DetectCheckpoint(view.get(), Fixture("dcp_two_ranks"), &detected).ok());
  DcpVerifyOptions options;
  options.limits.max_metadata_bytes = 100;
  DcpVerifyReport report;
  const Status s = VerifyDcpCheckpoint(view.get(), detected, options, &report);
  EXPECT_EQ(s.code(), Status::Code::kNotSupported);
  EXPECT_NE(s.message().find("exceed max_metadata_bytes = 100 (--max-metadata-bytes raises it)"),
            std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace ckptspec
