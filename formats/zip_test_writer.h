// WriteTestZip: a small zip writer for the formats tests, laid out as torch.save's writer lays
// archives out (stored entries, data padded to an alignment through a "FB" extra field in the
// local header, sizes and CRC in a data descriptor, the local header's left 0), optionally in
// zip64 form (every size and offset of the central directory marked 0xffffffff and held in a
// zip64 extra field; zip64 end record and locator). It returns where it put each record so that
// a test can damage one (Put16/32/64). Header-only: tests include it, the library does not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/crc32.h"
#include "formats/zip_records.h"

namespace ckptspec {
namespace zip_test {

struct Entry {
  std::string name;
  std::string data;
  uint16_t method = zip_records::kMethodStored;  // written as is; the data is never compressed
};

struct Options {
  bool zip64 = false;
  uint64_t alignment = 64;  // of each entry's data; 0 or 1: no padding
  std::string comment;      // the archive comment after the end record
};

struct Layout {
  std::vector<uint64_t> local_headers;    // offset of each entry's local header
  std::vector<uint64_t> data;             // offset of each entry's data
  std::vector<uint64_t> central_headers;  // offset of each entry's central directory header
  uint64_t central_directory = 0;
  uint64_t zip64_end_record = 0;  // zip64 only
  uint64_t zip64_locator = 0;     // zip64 only
  uint64_t end_record = 0;
};

inline void Put16(std::string* bytes, uint64_t at, uint16_t v) {
  for (int i = 0; i < 2; ++i) (*bytes)[at + i] = static_cast<char>(v >> (8 * i));
}
inline void Put32(std::string* bytes, uint64_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*bytes)[at + i] = static_cast<char>(v >> (8 * i));
}
inline void Put64(std::string* bytes, uint64_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) (*bytes)[at + i] = static_cast<char>(v >> (8 * i));
}
inline void Append16(std::string* bytes, uint16_t v) {
  bytes->resize(bytes->size() + 2);
  Put16(bytes, bytes->size() - 2, v);
}
inline void Append32(std::string* bytes, uint32_t v) {
  bytes->resize(bytes->size() + 4);
  Put32(bytes, bytes->size() - 4, v);
}
inline void Append64(std::string* bytes, uint64_t v) {
  bytes->resize(bytes->size() + 8);
  Put64(bytes, bytes->size() - 8, v);
}

// Field offsets inside the records, for tests that damage them.
namespace field {
constexpr uint64_t kCentralFlags = 8, kCentralMethod = 10, kCentralCrc = 16,
                   kCentralCompressedSize = 20, kCentralSize = 24, kCentralNameBytes = 28,
                   kCentralExtraBytes = 30, kCentralLocalHeader = 42;
constexpr uint64_t kEndDisk = 4, kEndEntriesHere = 8, kEndEntries = 10, kEndDirectorySize = 12,
                   kEndDirectoryOffset = 16;
constexpr uint64_t kLocatorRecordOffset = 8, kZip64RecordSize = 4, kZip64Disk = 16;
}  // namespace field

inline std::string WriteTestZip(const std::vector<Entry>& entries, const Options& options = {},
                                Layout* layout_out = nullptr) {
  using namespace zip_records;
  constexpr uint16_t kPaddingTag = 0x4246;  // "FB", as PyTorch's writer tags its padding
  const uint16_t flags = kDataDescriptorFlag | kUtf8NameFlag;
  Layout layout;
  std::string out;
  std::vector<uint32_t> crcs;
  for (const Entry& entry : entries) {
    const uint32_t crc = Crc32(0, entry.data.data(), entry.data.size());
    crcs.push_back(crc);
    layout.local_headers.push_back(out.size());
    uint64_t extra = 0;
    if (options.alignment > 1) {
      const uint64_t unpadded = out.size() + kLocalHeaderBytes + entry.name.size();
      extra = (options.alignment - (unpadded + 4) % options.alignment) % options.alignment + 4;
    }
    Append32(&out, kLocalHeaderSignature);
    Append16(&out, options.zip64 ? 45 : 20);  // version needed
    Append16(&out, flags);
    Append16(&out, entry.method);
    Append32(&out, 0);  // time, date
    Append32(&out, 0);  // crc, sizes: in the data descriptor
    Append32(&out, 0);
    Append32(&out, 0);
    Append16(&out, static_cast<uint16_t>(entry.name.size()));
    Append16(&out, static_cast<uint16_t>(extra));
    out += entry.name;
    if (extra > 0) {
      Append16(&out, kPaddingTag);
      Append16(&out, static_cast<uint16_t>(extra - 4));
      out.append(extra - 4, 'Z');
    }
    layout.data.push_back(out.size());
    out += entry.data;
    Append32(&out, kDataDescriptorSignature);
    Append32(&out, crc);
    if (options.zip64) {
      Append64(&out, entry.data.size());
      Append64(&out, entry.data.size());
    } else {
      Append32(&out, static_cast<uint32_t>(entry.data.size()));
      Append32(&out, static_cast<uint32_t>(entry.data.size()));
    }
  }
  layout.central_directory = out.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& entry = entries[i];
    layout.central_headers.push_back(out.size());
    const uint32_t size32 =
        options.zip64 ? kZip64Marker32 : static_cast<uint32_t>(entry.data.size());
    Append32(&out, kCentralHeaderSignature);
    Append16(&out, options.zip64 ? 45 : 20);  // version made by
    Append16(&out, options.zip64 ? 45 : 20);  // version needed
    Append16(&out, flags);
    Append16(&out, entry.method);
    Append32(&out, 0);  // time, date
    Append32(&out, crcs[i]);
    Append32(&out, size32);  // compressed size
    Append32(&out, size32);
    Append16(&out, static_cast<uint16_t>(entry.name.size()));
    Append16(&out, options.zip64 ? 28 : 0);  // extra field
    Append16(&out, 0);                       // comment
    Append16(&out, 0);                       // disk
    Append16(&out, 0);                       // internal attributes
    Append32(&out, 0);                       // external attributes
    Append32(&out, options.zip64 ? kZip64Marker32 : static_cast<uint32_t>(layout.local_headers[i]));
    out += entry.name;
    if (options.zip64) {
      Append16(&out, kZip64ExtraTag);
      Append16(&out, 24);
      Append64(&out, entry.data.size());
      Append64(&out, entry.data.size());
      Append64(&out, layout.local_headers[i]);
    }
  }
  const uint64_t directory_bytes = out.size() - layout.central_directory;
  if (options.zip64) {
    layout.zip64_end_record = out.size();
    Append32(&out, kZip64EndRecordSignature);
    Append64(&out, kZip64EndRecordBytes - 12);
    Append16(&out, 45);
    Append16(&out, 45);
    Append32(&out, 0);  // disk
    Append32(&out, 0);  // the directory's disk
    Append64(&out, entries.size());
    Append64(&out, entries.size());
    Append64(&out, directory_bytes);
    Append64(&out, layout.central_directory);
    layout.zip64_locator = out.size();
    Append32(&out, kZip64LocatorSignature);
    Append32(&out, 0);
    Append64(&out, layout.zip64_end_record);
    Append32(&out, 1);
  }
  layout.end_record = out.size();
  const uint16_t count16 = options.zip64 ? kZip64Marker16 : static_cast<uint16_t>(entries.size());
  Append32(&out, kEndRecordSignature);
  Append16(&out, 0);
  Append16(&out, 0);
  Append16(&out, count16);
  Append16(&out, count16);
  Append32(&out, options.zip64 ? kZip64Marker32 : static_cast<uint32_t>(directory_bytes));
  Append32(&out, options.zip64 ? kZip64Marker32 : static_cast<uint32_t>(layout.central_directory));
  Append16(&out, static_cast<uint16_t>(options.comment.size()));
  out += options.comment;
  if (layout_out != nullptr) *layout_out = layout;
  return out;
}

}  // namespace zip_test
}  // namespace ckptspec
