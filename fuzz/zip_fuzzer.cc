// Fuzzes the reader of torch.save's zip container (formats/zip_reader.h,
// formats/torch_save_archive.h): any bytes give a Status, never a crash, a hang, a read outside
// the input or an allocation beyond a small multiple of it. Seeds: real torch.save files
// (tools/write_zip_seeds.py). Invariants:
//  - a directory that reads is consistent: every entry's data inside the input and before the
//    next entry's, names unique, stored only;
//  - every entry of it up to 4 KiB reads (ReadSmallEntry) exactly when its CRC checks
//    (CheckZipEntryCrc, in 7-byte blocks), and what it reads is the entry's bytes;
//  - a torch.save archive that opens has the same entries as the directory (sorted by name),
//    each found under its prefix, data.pkl among them, and a numeric version or none;
//  - Crc32 agrees with the bitwise definition and chains over any split.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "formats/torch_save_archive.h"
#include "formats/zip_reader.h"
#include "fuzz/fuzz_target.h"

namespace {

using namespace ckptspec;

constexpr uint64_t kSmallEntryBytes = 4096;

uint32_t BitwiseCrc32(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0xEDB88320u : 0u);
  }
  return ~crc;
}

void CheckCrc32(std::string_view bytes) {
  const std::string_view head = bytes.substr(0, 256);
  const uint32_t whole = Crc32(0, head.data(), head.size());
  CKPTSPEC_FUZZ_CHECK(whole == BitwiseCrc32(head), "Crc32 differs from the bitwise CRC");
  const size_t split = head.empty() ? 0 : static_cast<unsigned char>(head[0]) % head.size();
  const uint32_t first = Crc32(0, head.data(), split);
  CKPTSPEC_FUZZ_CHECK(Crc32(first, head.data() + split, head.size() - split) == whole,
                      "Crc32 does not chain");
}

void CheckDirectory(const ByteSource& source, std::string_view bytes,
                    const std::vector<ZipEntry>& entries) {
  std::vector<const ZipEntry*> by_offset;
  for (const ZipEntry& entry : entries) {
    CKPTSPEC_FUZZ_CHECK(
        entry.data_offset <= bytes.size() && entry.size <= bytes.size() - entry.data_offset,
        "an entry's data lies outside the input");
    CKPTSPEC_FUZZ_CHECK(entry.method == 0, "a directory holds a compressed entry");
    by_offset.push_back(&entry);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const ZipEntry* a, const ZipEntry* b) { return a->data_offset < b->data_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    CKPTSPEC_FUZZ_CHECK(
        by_offset[i - 1]->data_offset + by_offset[i - 1]->size <= by_offset[i]->data_offset,
        "two entries' data overlap");
  }
  std::vector<std::string> names;
  for (const ZipEntry& entry : entries) names.push_back(entry.name);
  std::sort(names.begin(), names.end());
  CKPTSPEC_FUZZ_CHECK(std::adjacent_find(names.begin(), names.end()) == names.end(),
                      "a name appears twice");
  for (const ZipEntry& entry : entries) {
    if (entry.size > kSmallEntryBytes) continue;
    std::string data;
    const bool read = ReadSmallEntry(source, entry, kSmallEntryBytes, &data).ok();
    const bool crc_checks = CheckZipEntryCrc(source, entry, 7).ok();
    CKPTSPEC_FUZZ_CHECK(read == crc_checks, "ReadSmallEntry and CheckZipEntryCrc disagree");
    CKPTSPEC_FUZZ_CHECK(!read || data == bytes.substr(entry.data_offset, entry.size),
                        "ReadSmallEntry read other bytes than the entry's");
  }
}

void CheckArchive(const TorchSaveArchive& archive, std::vector<ZipEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const ZipEntry& a, const ZipEntry& b) { return a.name < b.name; });
  CKPTSPEC_FUZZ_CHECK(archive.entries.size() == entries.size(),
                      "the archive and the directory differ in entries");
  for (size_t i = 0; i < entries.size(); ++i) {
    const ZipEntry& entry = archive.entries[i];
    CKPTSPEC_FUZZ_CHECK(entry.name == entries[i].name &&
                            entry.data_offset == entries[i].data_offset &&
                            entry.size == entries[i].size,
                        "the archive and the directory differ in an entry");
    const std::string_view name = entry.name;
    CKPTSPEC_FUZZ_CHECK(name.size() > archive.prefix.size() + 1 &&
                            name.substr(0, archive.prefix.size()) == archive.prefix &&
                            name[archive.prefix.size()] == '/',
                        "an entry lies outside the archive's prefix");
    CKPTSPEC_FUZZ_CHECK(archive.Find(name.substr(archive.prefix.size() + 1)) == &entry,
                        "Find misses an entry");
  }
  CKPTSPEC_FUZZ_CHECK(archive.Find("data.pkl") != nullptr, "an archive without data.pkl opened");
  CKPTSPEC_FUZZ_CHECK(archive.version.find_first_not_of("0123456789") == std::string::npos,
                      "a version that is not a number");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const MemoryByteSource source(bytes, "fuzz.pt");
  CheckCrc32(bytes);
  std::vector<ZipEntry> entries;
  const bool directory_reads = ReadZipDirectory(source, ZipLimits(), &entries).ok();
  if (directory_reads) CheckDirectory(source, bytes, entries);
  TorchSaveArchive archive;
  if (OpenTorchSaveArchive(source, ZipLimits(), &archive).ok()) {
    CKPTSPEC_FUZZ_CHECK(directory_reads, "an archive opened whose directory does not read");
    CheckArchive(archive, entries);
  }
  return 0;
}
