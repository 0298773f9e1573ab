#include "formats/torch_save_archive.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "formats/zip_test_writer.h"

#ifndef CKPTSPEC_SOURCE_DIR
#error "CKPTSPEC_SOURCE_DIR must name the source tree (set by formats/CMakeLists.txt)"
#endif

namespace ckptspec {
namespace {

using zip_test::Entry;
using zip_test::WriteTestZip;

// A seed of zip_fuzzer: real torch.save files, written by tools/write_zip_seeds.py (torch 2.14.1).
std::string Seed(const std::string& name) {
  std::ifstream in(std::string(CKPTSPEC_SOURCE_DIR) + "/corpus/zip_fuzzer_seed_corpus/" + name,
                   std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void ExpectError(const Status& status, Status::Code code, const std::string& message) {
  EXPECT_EQ(status.code(), code) << status.ToString();
  EXPECT_EQ(status.message(), message);
}

// Opens `bytes` and checks every entry's CRC and alignment (torch.save aligns data to 64 bytes).
void OpenRealArchive(const std::string& bytes, const std::string& name, TorchSaveArchive* archive) {
  ASSERT_FALSE(bytes.empty()) << name << " is missing";
  const MemoryByteSource source(bytes, name);
  const Status status = OpenTorchSaveArchive(source, ZipLimits(), archive);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(archive->version, "3");
  for (const char* relative : {"data.pkl", "byteorder", "version", ".data/serialization_id"}) {
    EXPECT_NE(archive->Find(relative), nullptr) << name << ": " << relative;
  }
  for (const ZipEntry& entry : archive->entries) {
    EXPECT_TRUE(CheckZipEntryCrc(source, entry).ok()) << entry.name;
    EXPECT_EQ(entry.data_offset % 64, 0u) << entry.name;
  }
}

TEST(TorchSaveArchive, ReadsARealFp32Tensor) {
  for (const char* file : {"fp32_tensor.pt", "fp32_tensor_zip64.pt"}) {
    const std::string bytes = Seed(file);
    TorchSaveArchive archive;
    OpenRealArchive(bytes, file, &archive);
    EXPECT_EQ(archive.prefix, "archive");
    const ZipEntry* storage = archive.Find("data/0");
    ASSERT_NE(storage, nullptr) << file;
    ASSERT_EQ(storage->size, 16 * sizeof(float));
    for (int i = 0; i < 16; ++i) {  // torch.arange(16): little-endian floats 0, 1, ... 15
      float value;
      std::memcpy(&value, bytes.data() + storage->data_offset + i * sizeof(float), sizeof(float));
      EXPECT_EQ(value, static_cast<float>(i)) << file;
    }
  }
}

TEST(TorchSaveArchive, ReadsARealBf16Tensor) {
  const std::string bytes = Seed("bf16_tensor.pt");
  TorchSaveArchive archive;
  OpenRealArchive(bytes, "bf16_tensor.pt", &archive);
  const ZipEntry* storage = archive.Find("data/0");
  ASSERT_NE(storage, nullptr);
  ASSERT_EQ(storage->size, 12u * 2);
  // bf16 7.0 is the upper half of float 7.0 (0x40e00000), little-endian.
  EXPECT_EQ(bytes.substr(storage->data_offset + 7 * 2, 2), std::string("\xe0\x40", 2));
}

TEST(TorchSaveArchive, ReadsARealDictOfObjectsWrittenToAPath) {
  TorchSaveArchive archive;
  OpenRealArchive(Seed("common.pt"), "common.pt", &archive);
  EXPECT_EQ(archive.prefix, "common");  // torch.save names the directory after the file's stem
  EXPECT_NE(archive.Find("data/0"), nullptr);  // the "step" tensor
  EXPECT_EQ(archive.Find("archive/data.pkl"), nullptr);
}

TEST(TorchSaveArchive, ReadsAnArchiveInsideADistcpFile) {
  const std::string item = Seed("bf16_tensor.pt");
  const std::string file = std::string(1000, '\0') + item + Seed("fp32_tensor.pt");
  const MemoryByteSource distcp(file, "__0_0.distcp");
  WindowByteSource window;
  ASSERT_TRUE(WindowByteSource::Make(distcp, 1000, item.size(), &window).ok());
  TorchSaveArchive archive;
  ASSERT_TRUE(OpenTorchSaveArchive(window, ZipLimits(), &archive).ok());
  EXPECT_EQ(archive.Find("data/0")->size, 24u);
}

TEST(TorchSaveArchive, FindsEntriesByTheirNameUnderThePrefix) {
  const std::string bytes =
      WriteTestZip({{"m/data/1", "b"}, {"m/data.pkl", "p"}, {"m/data/0", "a"}, {"m/data/10", "c"}});
  TorchSaveArchive archive;
  ASSERT_TRUE(OpenTorchSaveArchive(MemoryByteSource(bytes), ZipLimits(), &archive).ok());
  EXPECT_EQ(archive.prefix, "m");
  EXPECT_EQ(archive.version, "");
  for (const char* relative : {"data/0", "data/1", "data/10", "data.pkl"}) {
    ASSERT_NE(archive.Find(relative), nullptr) << relative;
    EXPECT_EQ(archive.Find(relative)->name, std::string("m/") + relative);
  }
  EXPECT_EQ(archive.Find("data/2"), nullptr);
  EXPECT_EQ(archive.Find(""), nullptr);
  EXPECT_EQ(archive.Find("m/data.pkl"), nullptr);
}

Status Open(const std::vector<Entry>& entries, TorchSaveArchive* archive) {
  const std::string bytes = WriteTestZip(entries);
  return OpenTorchSaveArchive(MemoryByteSource(bytes, "common.pt"), ZipLimits(), archive);
}

TEST(TorchSaveArchive, DirectoryErrorsPassThrough) {
  TorchSaveArchive archive;
  archive.prefix = "old";
  ExpectError(Open({{"a/data.pkl", "1"}, {"a/data.pkl", "2"}}, &archive), Status::Code::kCorruption,
              "common.pt: a/data.pkl appears twice in the central directory (entries 0 and 1)");
  EXPECT_EQ(archive.prefix, "");
  EXPECT_TRUE(archive.entries.empty());
}

TEST(TorchSaveArchive, AnEmptyArchiveIsCorruption) {
  TorchSaveArchive archive;
  ExpectError(Open({}, &archive), Status::Code::kCorruption,
              "common.pt: the archive holds no entries");
}

TEST(TorchSaveArchive, EntriesOutsideOneTopLevelDirectoryAreCorruption) {
  TorchSaveArchive archive;
  ExpectError(Open({{"a/data.pkl", "1"}, {"b/data/0", "2"}}, &archive), Status::Code::kCorruption,
              "common.pt: b/data/0 lies outside the archive's top-level directory a/");
  ExpectError(Open({{"a/data.pkl", "1"}, {"a", "2"}}, &archive), Status::Code::kCorruption,
              "common.pt: a lies outside the archive's top-level directory a/");
  ExpectError(Open({{"a/data.pkl", "1"}, {"a/", "2"}}, &archive), Status::Code::kCorruption,
              "common.pt: a/ lies outside the archive's top-level directory a/");
  ExpectError(Open({{"data.pkl", "1"}}, &archive), Status::Code::kCorruption,
              "common.pt: data.pkl lies outside the archive's top-level directory data.pkl/");
}

TEST(TorchSaveArchive, AnArchiveWithoutDataPklIsCorruption) {
  TorchSaveArchive archive;
  ExpectError(Open({{"a/data/0", "1"}, {"a/x/data.pkl", "2"}}, &archive), Status::Code::kCorruption,
              "common.pt: the archive has no a/data.pkl");
}

TEST(TorchSaveArchive, ByteOrderMustBeLittle) {
  TorchSaveArchive archive;
  ExpectError(Open({{"a/data.pkl", "1"}, {"a/byteorder", "big"}}, &archive),
              Status::Code::kNotSupported,
              "common.pt: a/byteorder says big: big-endian archives are not supported");
  ExpectError(Open({{"a/data.pkl", "1"}, {"a/byteorder", "little\n\x01"}}, &archive),
              Status::Code::kCorruption,
              "common.pt: a/byteorder says \"little\\x0a\\x01\", neither little nor big");
  ExpectError(Open({{"a/data.pkl", "1"}, {"a/byteorder", std::string(65, 'l')}}, &archive),
              Status::Code::kNotSupported,
              "common.pt: a/byteorder holds 65 bytes, more than the 64 read here");
}

TEST(TorchSaveArchive, ByteOrderAndVersionAreCrcChecked) {
  zip_test::Layout layout;
  std::string bytes = WriteTestZip({{"a/data.pkl", "1"}, {"a/byteorder", "little"}}, {}, &layout);
  bytes[layout.data[1]] = 'L';
  TorchSaveArchive archive;
  const Status status =
      OpenTorchSaveArchive(MemoryByteSource(bytes, "common.pt"), ZipLimits(), &archive);
  EXPECT_EQ(status.code(), Status::Code::kCorruption);
  EXPECT_EQ(status.message().rfind("common.pt: a/byteorder: CRC-32 0x", 0), 0u) << status.message();
}

TEST(TorchSaveArchive, RecordsItsVersion) {
  TorchSaveArchive archive;
  ASSERT_TRUE(Open({{"a/data.pkl", "1"}, {"a/version", "12"}}, &archive).ok());
  EXPECT_EQ(archive.version, "12");
  ExpectError(Open({{"a/data.pkl", "1"}, {"a/version", "3\n\n"}}, &archive),
              Status::Code::kCorruption,
              "common.pt: a/version says \"3\\x0a\", not a version number");
  ExpectError(Open({{"a/data.pkl", "1"}, {"a/version", ""}}, &archive), Status::Code::kCorruption,
              "common.pt: a/version says \"\", not a version number");
  EXPECT_EQ(archive.version, "");
}

}  // namespace
}  // namespace ckptspec
