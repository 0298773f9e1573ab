#include "formats/zip_reader.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "formats/zip_test_writer.h"

namespace ckptspec {
namespace {

using zip_test::Entry;
using zip_test::Layout;
using zip_test::Options;
using zip_test::Put16;
using zip_test::Put32;
using zip_test::Put64;
using zip_test::WriteTestZip;
namespace field = zip_test::field;

std::vector<Entry> TorchLikeEntries() {
  return {{"archive/data.pkl", std::string("\x80\x02}q\x00.", 6)},
          {"archive/byteorder", "little"},
          {"archive/data/0", std::string(24, '\x01')},
          {"archive/version", "3\n"},
          {"archive/.data/serialization_id", "1234567890"}};
}

Status Read(const std::string& bytes, std::vector<ZipEntry>* entries,
            const ZipLimits& limits = {}) {
  return ReadZipDirectory(MemoryByteSource(bytes, "x.pt"), limits, entries);
}

// The directory's entries as written: names, sizes, CRCs, and the data where data_offset says.
void ExpectEntriesAre(const std::string& archive, const std::vector<ZipEntry>& read,
                      const std::vector<Entry>& written) {
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].name, written[i].name);
    EXPECT_EQ(read[i].size, written[i].data.size());
    EXPECT_EQ(read[i].method, 0);
    EXPECT_EQ(read[i].crc32, Crc32(0, written[i].data.data(), written[i].data.size()));
    EXPECT_EQ(archive.substr(read[i].data_offset, read[i].size), written[i].data) << read[i].name;
  }
}

// An error with this code whose message is exactly `message`.
void ExpectError(const Status& status, Status::Code code, const std::string& message) {
  EXPECT_EQ(status.code(), code) << status.ToString();
  EXPECT_EQ(status.message(), message);
}

TEST(ZipReader, ReadsATorchLikeArchiveWithDataAlignedTo64Bytes) {
  const std::vector<Entry> written = TorchLikeEntries();
  const std::string archive = WriteTestZip(written);
  std::vector<ZipEntry> entries;
  ASSERT_TRUE(Read(archive, &entries).ok());
  ExpectEntriesAre(archive, entries, written);
  for (const ZipEntry& entry : entries) EXPECT_EQ(entry.data_offset % 64, 0u) << entry.name;
}

TEST(ZipReader, ReadsAZip64Archive) {
  const std::vector<Entry> written = TorchLikeEntries();
  Options options;
  options.zip64 = true;
  const std::string archive = WriteTestZip(written, options);
  std::vector<ZipEntry> entries;
  const Status status = Read(archive, &entries);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ExpectEntriesAre(archive, entries, written);
}

TEST(ZipReader, ReadsUnalignedDataAndAnArchiveComment) {
  const std::vector<Entry> written = {{"a/x", "xyz"}, {"a/empty", ""}};
  Options options;
  options.alignment = 0;
  // A comment that holds an end record's signature: the record is the one whose comment ends at
  // the end of the archive.
  options.comment = std::string("PK\x05\x06", 4) + std::string(30, 'c');
  const std::string archive = WriteTestZip(written, options);
  std::vector<ZipEntry> entries;
  ASSERT_TRUE(Read(archive, &entries).ok());
  ExpectEntriesAre(archive, entries, written);
  EXPECT_EQ(entries[0].data_offset, zip_records::kLocalHeaderBytes + 3);
}

TEST(ZipReader, ReadsAnEmptyArchive) {
  std::vector<ZipEntry> entries = {ZipEntry()};
  ASSERT_TRUE(Read(WriteTestZip({}), &entries).ok());
  EXPECT_TRUE(entries.empty());
}

TEST(ZipReader, ReadsAnArchiveInsideAWindowOfALargerSource) {
  const std::vector<Entry> written = TorchLikeEntries();
  const std::string archive = WriteTestZip(written);
  const std::string file = std::string(100, 'h') + archive + std::string(50, 't');
  const MemoryByteSource whole(file, "__0_0.distcp");
  WindowByteSource window;
  ASSERT_TRUE(WindowByteSource::Make(whole, 100, archive.size(), &window).ok());
  std::vector<ZipEntry> entries;
  ASSERT_TRUE(ReadZipDirectory(window, ZipLimits(), &entries).ok());
  ExpectEntriesAre(archive, entries, written);

  std::string damaged = file;
  Put32(&damaged, 100 + archive.size() - zip_records::kEndRecordBytes, 0);
  const MemoryByteSource damaged_whole(damaged, "__0_0.distcp");
  ASSERT_TRUE(WindowByteSource::Make(damaged_whole, 100, archive.size(), &window).ok());
  ExpectError(ReadZipDirectory(window, ZipLimits(), &entries), Status::Code::kCorruption,
              "__0_0.distcp[100, +" + std::to_string(archive.size()) +
                  "): no end-of-central-directory record in its last " +
                  std::to_string(archive.size()) + " bytes");
  EXPECT_TRUE(entries.empty());
}

// --- the end records

TEST(ZipReader, TooFewBytesAreCorruption) {
  std::vector<ZipEntry> entries;
  ExpectError(Read("PK\x05\x06", &entries), Status::Code::kCorruption,
              "x.pt: 4 bytes are too few for a zip archive (its end record alone takes 22)");
}

TEST(ZipReader, NoEndRecordIsCorruption) {
  std::vector<ZipEntry> entries;
  ExpectError(Read(std::string(100, 'z'), &entries), Status::Code::kCorruption,
              "x.pt: no end-of-central-directory record in its last 100 bytes");
}

TEST(ZipReader, AnEndRecordMoreThan64KiBBeforeTheEndIsNotFound) {
  const std::string archive = WriteTestZip(TorchLikeEntries()) + std::string(70000, '\0');
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: no end-of-central-directory record in its last 65557 bytes");
}

TEST(ZipReader, SeveralDisksAreNotSupported) {
  Layout layout;
  std::string archive = WriteTestZip(TorchLikeEntries(), {}, &layout);
  Put16(&archive, layout.end_record + field::kEndDisk, 1);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kNotSupported,
              "x.pt: the archive spans several disks (end record: disk 1, central directory on "
              "disk 0, 5 of 5 entries on this disk)");

  Options options;
  options.zip64 = true;
  archive = WriteTestZip(TorchLikeEntries(), options, &layout);
  Put32(&archive, layout.zip64_end_record + field::kZip64Disk, 2);
  ExpectError(Read(archive, &entries), Status::Code::kNotSupported,
              "x.pt: the archive spans several disks (end record: disk 2, central directory on "
              "disk 0, 5 of 5 entries on this disk)");
}

TEST(ZipReader, AZip64EndRecordThatIsNotThereIsCorruption) {
  Options options;
  options.zip64 = true;
  Layout layout;
  const std::string archive = WriteTestZip(TorchLikeEntries(), options, &layout);
  const std::string locator = std::to_string(layout.zip64_locator);
  std::vector<ZipEntry> entries;

  std::string damaged = archive;
  Put64(&damaged, layout.zip64_locator + field::kLocatorRecordOffset, layout.zip64_locator - 10);
  ExpectError(Read(damaged, &entries), Status::Code::kCorruption,
              "x.pt: the zip64 end record at " + std::to_string(layout.zip64_locator - 10) +
                  " (named by the locator at " + locator + ") does not lie before the locator");

  damaged = archive;
  Put64(&damaged, layout.zip64_locator + field::kLocatorRecordOffset, 0);
  ExpectError(Read(damaged, &entries), Status::Code::kCorruption,
              "x.pt: the zip64 end record at 0 (named by the locator at " + locator +
                  ") lacks its signature");

  damaged = archive;
  Put64(&damaged, layout.zip64_end_record + field::kZip64RecordSize, 45);
  ExpectError(Read(damaged, &entries), Status::Code::kCorruption,
              "x.pt: the zip64 end record at " + std::to_string(layout.zip64_end_record) +
                  " (named by the locator at " + locator +
                  ") declares 45 bytes after its first 12: fewer than 44 or more than lie before "
                  "the locator");
}

// --- the central directory as a whole

TEST(ZipReader, MoreEntriesThanTheLimitAreNotSupported) {
  ZipLimits limits;
  limits.max_entries = 4;
  std::vector<ZipEntry> entries;
  ExpectError(Read(WriteTestZip(TorchLikeEntries()), &entries, limits), Status::Code::kNotSupported,
              "x.pt: 5 entries exceed max_entries = 4");
}

TEST(ZipReader, ALargerCentralDirectoryThanTheLimitIsNotSupported) {
  Layout layout;
  const std::string archive = WriteTestZip(TorchLikeEntries(), {}, &layout);
  const uint64_t bytes = layout.end_record - layout.central_directory;
  ZipLimits limits;
  limits.max_central_directory_bytes = bytes - 1;
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries, limits), Status::Code::kNotSupported,
              "x.pt: the central directory's " + std::to_string(bytes) +
                  " bytes exceed max_central_directory_bytes = " + std::to_string(bytes - 1));
}

TEST(ZipReader, ACentralDirectoryBeyondTheEndRecordIsCorruption) {
  Layout layout;
  std::string archive = WriteTestZip(TorchLikeEntries(), {}, &layout);
  const uint64_t bytes = layout.end_record - layout.central_directory;
  Put32(&archive, layout.end_record + field::kEndDirectoryOffset, 0xFFFFFF00u);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: the central directory [4294967040, 4294967040 + " + std::to_string(bytes) +
                  ") does not end before the end record at " + std::to_string(layout.end_record));
}

TEST(ZipReader, MoreEntriesThanTheCentralDirectoryCanHoldAreCorruption) {
  Layout layout;
  std::string archive = WriteTestZip(TorchLikeEntries(), {}, &layout);
  const uint64_t bytes = layout.end_record - layout.central_directory;
  Put16(&archive, layout.end_record + field::kEndEntries, 100);
  Put16(&archive, layout.end_record + field::kEndEntriesHere, 100);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: the central directory's " + std::to_string(bytes) +
                  " bytes cannot hold 100 entries (46 bytes each at least)");
}

TEST(ZipReader, BytesAfterTheLastEntryAreCorruption) {
  Layout layout;
  std::string archive = WriteTestZip(TorchLikeEntries(), {}, &layout);
  Put16(&archive, layout.end_record + field::kEndEntries, 4);
  Put16(&archive, layout.end_record + field::kEndEntriesHere, 4);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: the central directory holds " +
                  std::to_string(layout.end_record - layout.central_headers[4]) +
                  " bytes after its 4 entries");
}

// --- central directory entries

TEST(ZipReader, ACentralEntryWithoutItsSignatureIsCorruption) {
  Layout layout;
  std::string archive = WriteTestZip(TorchLikeEntries(), {}, &layout);
  Put32(&archive, layout.central_headers[2], 0x12345678);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: central directory entry 2 at " + std::to_string(layout.central_headers[2]) +
                  " lacks its signature (0x12345678)");
}

TEST(ZipReader, ACentralEntryRunningPastTheDirectoryIsCorruption) {
  Layout layout;
  std::string archive = WriteTestZip(TorchLikeEntries(), {}, &layout);
  Put16(&archive, layout.central_headers[4] + field::kCentralNameBytes, 1000);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: central directory entry 4 at " + std::to_string(layout.central_headers[4]) +
                  ": its name, extra field and comment (1000 bytes) run past the directory's end");
}

TEST(ZipReader, AnEmptyNameIsCorruption) {
  Layout layout;
  const std::string archive = WriteTestZip({{"a/x", "1"}, {"", "2"}}, {}, &layout);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: central directory entry 1 at " + std::to_string(layout.central_headers[1]) +
                  " has an empty name");
}

TEST(ZipReader, CompressedEntriesAreNotSupported) {
  std::vector<ZipEntry> entries;
  ExpectError(Read(WriteTestZip({{"a/x", "1"}, {"a/data.pkl", "2", 8}}), &entries),
              Status::Code::kNotSupported,
              "x.pt: a/data.pkl: compression method 8 (deflate) is not supported: torch.save "
              "stores entries uncompressed");
  ExpectError(Read(WriteTestZip({{"a/y", "2", 77}}), &entries), Status::Code::kNotSupported,
              "x.pt: a/y: compression method 77 is not supported: torch.save stores entries "
              "uncompressed");
}

TEST(ZipReader, EncryptedEntriesAreNotSupported) {
  Layout layout;
  std::string archive = WriteTestZip({{"a/x", "1"}}, {}, &layout);
  Put16(&archive, layout.central_headers[0] + field::kCentralFlags, 1);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kNotSupported,
              "x.pt: a/x: encrypted entries are not supported");
}

TEST(ZipReader, AStoredEntryWhoseSizesDifferIsCorruption) {
  Layout layout;
  std::string archive = WriteTestZip({{"a/x", "123"}}, {}, &layout);
  Put32(&archive, layout.central_headers[0] + field::kCentralCompressedSize, 2);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: a/x: a stored entry's compressed size 2 differs from its size 3");
}

TEST(ZipReader, AZip64MarkerWithoutItsExtraFieldIsCorruption) {
  Options options;
  options.zip64 = true;
  Layout layout;
  const std::string archive = WriteTestZip({{"a/x", "123"}}, options, &layout);
  const uint64_t extra = layout.central_headers[0] + zip_records::kCentralHeaderBytes + 3;
  std::vector<ZipEntry> entries;

  std::string damaged = archive;
  Put16(&damaged, extra, 0x7777);  // another field's tag
  ExpectError(Read(damaged, &entries), Status::Code::kCorruption,
              "x.pt: a/x: the central directory marks its size 0xffffffff but no zip64 extra "
              "field holds it");

  damaged = archive;
  Put16(&damaged, extra + 2, 16);  // room for the sizes, not the local header's offset
  Put16(&damaged, extra + 20, 0x7777);
  Put16(&damaged, extra + 22, 0);
  ExpectError(Read(damaged, &entries), Status::Code::kCorruption,
              "x.pt: a/x: the central directory marks its local header offset 0xffffffff but no "
              "zip64 extra field holds it");

  damaged = archive;
  Put16(&damaged, extra + 2, 25);
  ExpectError(Read(damaged, &entries), Status::Code::kCorruption,
              "x.pt: a/x: extra field 0x0001 at byte 0 runs past the extra field's 28 bytes");
}

TEST(ZipReader, DuplicateNamesAreCorruption) {
  std::vector<ZipEntry> entries;
  ExpectError(Read(WriteTestZip({{"a/x", "1"}, {"a/y", "2"}, {"a/x", "3"}}), &entries),
              Status::Code::kCorruption,
              "x.pt: a/x appears twice in the central directory (entries 0 and 2)");
}

// --- local headers and data ranges

TEST(ZipReader, ALocalHeaderOutsideTheArchiveIsCorruption) {
  Layout layout;
  std::string archive = WriteTestZip({{"a/x", "1"}}, {}, &layout);
  Put32(&archive, layout.central_headers[0] + field::kCentralLocalHeader, 1000000);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: a/x: local header [1000000, 1000000 + 33) lies outside the archive's " +
                  std::to_string(archive.size()) + " bytes");
}

TEST(ZipReader, ALocalHeaderWithoutItsSignatureIsCorruption) {
  Layout layout;
  std::string archive = WriteTestZip({{"a/x", "1"}, {"a/y", "2"}}, {}, &layout);
  Put32(&archive, layout.local_headers[1], 0x04034b51);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: a/y: no local header at " + std::to_string(layout.local_headers[1]) +
                  " (signature 0x04034b51)");
}

TEST(ZipReader, ALocalHeaderNamingAnotherEntryIsCorruption) {
  Layout layout;
  std::string archive = WriteTestZip({{"a/x", "1"}, {"a/y", "2"}}, {}, &layout);
  archive[layout.local_headers[1] + zip_records::kLocalHeaderBytes + 2] = 'z';
  std::vector<ZipEntry> entries;
  ExpectError(
      Read(archive, &entries), Status::Code::kCorruption,
      "x.pt: a/y: the local header at " + std::to_string(layout.local_headers[1]) + " names a/z");
  Put16(&archive, layout.local_headers[1] + 26, 4);  // a longer name
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: a/y: the local header at " + std::to_string(layout.local_headers[1]) +
                  " names a/z...");
}

TEST(ZipReader, DataOutsideTheArchiveIsCorruption) {
  Layout layout;
  std::string archive = WriteTestZip({{"archive/data/0", "1"}}, {}, &layout);
  Put32(&archive, layout.central_headers[0] + field::kCentralSize, 4096);
  Put32(&archive, layout.central_headers[0] + field::kCentralCompressedSize, 4096);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: archive/data/0: data [64, 64 + 4096) lies outside the archive's " +
                  std::to_string(archive.size()) + " bytes");
}

TEST(ZipReader, DataRunningIntoTheCentralDirectoryIsCorruption) {
  Layout layout;
  std::string archive = WriteTestZip({{"a/x", "1"}}, {}, &layout);
  Put32(&archive, layout.central_headers[0] + field::kCentralSize, 40);
  Put32(&archive, layout.central_headers[0] + field::kCentralCompressedSize, 40);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: a/x: data [64, 64 + 40) runs into the central directory at " +
                  std::to_string(layout.central_directory));
}

TEST(ZipReader, OverlappingEntriesAreCorruption) {
  Layout layout;
  std::string archive = WriteTestZip({{"a/x", "1"}, {"a/y", "2"}}, {}, &layout);
  Put32(&archive, layout.central_headers[0] + field::kCentralSize, 70);
  Put32(&archive, layout.central_headers[0] + field::kCentralCompressedSize, 70);
  std::vector<ZipEntry> entries;
  ExpectError(Read(archive, &entries), Status::Code::kCorruption,
              "x.pt: the data of a/x [64, 64 + 70) overlaps a/y, whose local header starts at " +
                  std::to_string(layout.local_headers[1]));
}

// --- reading entries

TEST(ZipEntryRead, ChecksTheCrcInBlocksOfAnySize) {
  const std::string data(3000, 'q');
  const std::string archive = WriteTestZip({{"a/data/0", data}});
  const MemoryByteSource source(archive, "x.pt");
  std::vector<ZipEntry> entries;
  ASSERT_TRUE(ReadZipDirectory(source, ZipLimits(), &entries).ok());
  for (const size_t block : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, kZipCrcBlockBytes}) {
    EXPECT_TRUE(CheckZipEntryCrc(source, entries[0], block).ok()) << block;
  }
  ZipEntry wrong = entries[0];
  wrong.crc32 ^= 0x10;
  ExpectError(CheckZipEntryCrc(source, wrong, 7), Status::Code::kCorruption,
              "x.pt: a/data/0: CRC-32 0x" + zip_records::Hex(entries[0].crc32, 8) +
                  " differs from the 0x" + zip_records::Hex(wrong.crc32, 8) +
                  " its central directory records");
  wrong = entries[0];
  wrong.data_offset = archive.size() - 10;
  ExpectError(CheckZipEntryCrc(source, wrong), Status::Code::kCorruption,
              "x.pt: bytes [" + std::to_string(archive.size() - 10) + ", " +
                  std::to_string(archive.size() - 10) + " + 3000) lie outside its " +
                  std::to_string(archive.size()) + " bytes");
}

TEST(ZipEntryRead, ReadsASmallEntryWithinItsLimit) {
  const std::string archive = WriteTestZip({{"a/version", "3\n"}});
  const MemoryByteSource source(archive, "x.pt");
  std::vector<ZipEntry> entries;
  ASSERT_TRUE(ReadZipDirectory(source, ZipLimits(), &entries).ok());
  std::string text = "old";
  ASSERT_TRUE(ReadSmallEntry(source, entries[0], 2, &text).ok());
  EXPECT_EQ(text, "3\n");
  ExpectError(ReadSmallEntry(source, entries[0], 1, &text), Status::Code::kNotSupported,
              "x.pt: a/version holds 2 bytes, more than the 1 read here");
  EXPECT_EQ(text, "");

  ZipEntry wrong = entries[0];
  wrong.crc32 = 0;
  EXPECT_EQ(ReadSmallEntry(source, wrong, 2, &text).code(), Status::Code::kCorruption);
  wrong = entries[0];
  wrong.size = uint64_t{1} << 62;  // never allocated: the range is checked first
  ExpectError(ReadSmallEntry(source, wrong, UINT64_MAX, &text), Status::Code::kCorruption,
              "x.pt: bytes [64, 64 + 4611686018427387904) lie outside its " +
                  std::to_string(archive.size()) + " bytes");
}

// --- properties

// Every entry of a directory that reads lies inside the source, before no other entry's end,
// under a name no other entry has.
void AssertConsistent(const std::vector<ZipEntry>& entries, uint64_t source_size) {
  std::vector<const ZipEntry*> by_offset;
  for (const ZipEntry& entry : entries) {
    RC_ASSERT(entry.data_offset <= source_size);
    RC_ASSERT(entry.size <= source_size - entry.data_offset);
    RC_ASSERT(entry.method == 0);
    by_offset.push_back(&entry);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const ZipEntry* a, const ZipEntry* b) { return a->data_offset < b->data_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    RC_ASSERT(by_offset[i - 1]->data_offset + by_offset[i - 1]->size <= by_offset[i]->data_offset);
  }
  std::vector<std::string> names;
  for (const ZipEntry& entry : entries) names.push_back(entry.name);
  std::sort(names.begin(), names.end());
  RC_ASSERT(std::adjacent_find(names.begin(), names.end()) == names.end());
}

// Up to 5 entries "archive/data/I" with arbitrary bytes (inside a property only).
std::vector<Entry> GenEntries() {
  const size_t count = *rc::gen::inRange<size_t>(0, 6);
  std::vector<Entry> entries;
  for (size_t i = 0; i < count; ++i) {
    entries.push_back({"archive/data/" + std::to_string(i), *rc::gen::arbitrary<std::string>()});
  }
  return entries;
}

// Zip64 or not, an alignment, a short comment (inside a property only).
Options GenOptions() {
  Options options;
  options.zip64 = *rc::gen::arbitrary<bool>();
  options.alignment = *rc::gen::element<uint64_t>(0, 1, 8, 64);
  options.comment =
      *rc::gen::container<std::string>(*rc::gen::inRange<size_t>(0, 4), rc::gen::arbitrary<char>());
  return options;
}

RC_GTEST_PROP(ZipReaderProperties, WrittenArchivesReadBack, ()) {
  const std::vector<Entry> written = GenEntries();
  const std::string archive = WriteTestZip(written, GenOptions());
  std::vector<ZipEntry> entries;
  RC_ASSERT(Read(archive, &entries).ok());
  RC_ASSERT(entries.size() == written.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    RC_ASSERT(entries[i].name == written[i].name);
    RC_ASSERT(archive.substr(entries[i].data_offset, entries[i].size) == written[i].data);
    RC_ASSERT(CheckZipEntryCrc(MemoryByteSource(archive), entries[i], 5).ok());
  }
}

RC_GTEST_PROP(ZipReaderProperties, ATruncatedArchiveGivesAnErrorOrAConsistentDirectory, ()) {
  const std::string archive = WriteTestZip(GenEntries(), GenOptions());
  const size_t length = *rc::gen::inRange<size_t>(0, archive.size());
  const std::string truncated = archive.substr(0, length);
  std::vector<ZipEntry> entries;
  if (Read(truncated, &entries).ok()) AssertConsistent(entries, truncated.size());
}

RC_GTEST_PROP(ZipReaderProperties, ACorruptedByteGivesAnErrorOrAConsistentDirectory, ()) {
  std::string archive = WriteTestZip(GenEntries(), GenOptions());
  const size_t at = *rc::gen::inRange<size_t>(0, archive.size());
  archive[at] = *rc::gen::arbitrary<char>();
  std::vector<ZipEntry> entries;
  const Status status = Read(archive, &entries);
  if (status.ok()) {
    AssertConsistent(entries, archive.size());
  } else {
    RC_ASSERT(entries.empty());
    RC_ASSERT(status.message().rfind("x.pt: ", 0) == 0);
  }
}

}  // namespace
}  // namespace ckptspec
