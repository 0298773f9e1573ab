#include "formats/zip_reader.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>

#include "formats/zip_records.h"

namespace ckptspec {
namespace {

using namespace zip_records;

std::string Range(uint64_t offset, uint64_t n) {
  return "[" + std::to_string(offset) + ", " + std::to_string(offset) + " + " + std::to_string(n) +
         ")";
}

bool RangeInside(uint64_t offset, uint64_t n, uint64_t limit) {
  return offset <= limit && n <= limit - offset;
}

// Where the central directory is and how many entries it holds, from the end record (and the
// zip64 end record when there is one).
struct CentralDirectoryLocation {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t entries = 0;
  uint64_t end_records_start = 0;  // where the (zip64) end record begins: the directory ends before
};

Status FindEndRecord(const ByteSource& source, uint64_t* end_record_offset) {
  const std::string name = source.name();
  const uint64_t size = source.size();
  if (size < kEndRecordBytes) {
    return Status::Corruption(name + ": " + std::to_string(size) +
                              " bytes are too few for a zip archive (its end record alone takes " +
                              std::to_string(kEndRecordBytes) + ")");
  }
  const uint64_t tail_bytes = std::min<uint64_t>(size, kEndRecordBytes + kMaxCommentBytes);
  std::string tail(tail_bytes, '\0');
  CKPTSPEC_RETURN_IF_ERROR(source.Read(size - tail_bytes, tail.size(), tail.data()));
  const auto* bytes = reinterpret_cast<const uint8_t*>(tail.data());
  // The last record whose comment ends exactly at the end of the source.
  for (uint64_t at = tail_bytes - kEndRecordBytes + 1; at-- > 0;) {
    const uint8_t* record = bytes + at;
    if (Load32(record) != kEndRecordSignature) continue;
    if (at + kEndRecordBytes + Load16(record + 20) != tail_bytes) continue;
    *end_record_offset = size - tail_bytes + at;
    return Status::OK();
  }
  return Status::Corruption(name + ": no end-of-central-directory record in its last " +
                            std::to_string(tail_bytes) + " bytes");
}

// The fields the end record and the zip64 end record share (widened to 64 bits).
struct EndRecordFields {
  uint64_t disk;
  uint64_t directory_disk;
  uint64_t entries_here;  // on this disk
  uint64_t entries;
  uint64_t directory_size;
  uint64_t directory_offset;
};

// The location the (zip64) end record at `record_offset` gives, for an archive on one disk.
Status LocationFrom(const std::string& name, const EndRecordFields& fields, uint64_t record_offset,
                    CentralDirectoryLocation* location) {
  if (fields.disk != 0 || fields.directory_disk != 0 || fields.entries_here != fields.entries) {
    return Status::NotSupported(name + ": the archive spans several disks (end record: disk " +
                                std::to_string(fields.disk) + ", central directory on disk " +
                                std::to_string(fields.directory_disk) + ", " +
                                std::to_string(fields.entries_here) + " of " +
                                std::to_string(fields.entries) + " entries on this disk)");
  }
  location->entries = fields.entries;
  location->size = fields.directory_size;
  location->offset = fields.directory_offset;
  location->end_records_start = record_offset;
  return Status::OK();
}

// Reads the zip64 end record that the locator at `locator_offset` names.
Status ReadZip64EndRecord(const ByteSource& source, uint64_t locator_offset,
                          CentralDirectoryLocation* location) {
  const std::string name = source.name();
  uint8_t locator[kZip64LocatorBytes];
  CKPTSPEC_RETURN_IF_ERROR(source.Read(locator_offset, sizeof(locator), locator));
  const uint32_t record_disk = Load32(locator + 4);
  const uint64_t record_offset = Load64(locator + 8);
  const uint32_t disks = Load32(locator + 16);
  if (record_disk != 0 || disks > 1) {
    return Status::NotSupported(name + ": the archive spans several disks (zip64 locator: end " +
                                "record on disk " + std::to_string(record_disk) + " of " +
                                std::to_string(disks) + ")");
  }
  const std::string where = name + ": the zip64 end record at " + std::to_string(record_offset) +
                            " (named by the " + "locator at " + std::to_string(locator_offset) +
                            ")";
  if (!RangeInside(record_offset, kZip64EndRecordBytes, locator_offset)) {
    return Status::Corruption(where + " does not lie before the locator");
  }
  uint8_t record[kZip64EndRecordBytes];
  CKPTSPEC_RETURN_IF_ERROR(source.Read(record_offset, sizeof(record), record));
  if (Load32(record) != kZip64EndRecordSignature) {
    return Status::Corruption(where + " lacks its signature");
  }
  const uint64_t record_size = Load64(record + 4);  // the bytes after this field
  if (record_size < kZip64EndRecordBytes - 12 ||
      !RangeInside(record_offset + 12, record_size, locator_offset)) {
    return Status::Corruption(where + " declares " + std::to_string(record_size) +
                              " bytes after its first 12: fewer than " +
                              std::to_string(kZip64EndRecordBytes - 12) +
                              " or more than lie before the locator");
  }
  const EndRecordFields fields = {Load32(record + 16), Load32(record + 20), Load64(record + 24),
                                  Load64(record + 32), Load64(record + 40), Load64(record + 48)};
  return LocationFrom(name, fields, record_offset, location);
}

Status LocateCentralDirectory(const ByteSource& source, CentralDirectoryLocation* location) {
  const std::string name = source.name();
  uint64_t end_offset = 0;
  CKPTSPEC_RETURN_IF_ERROR(FindEndRecord(source, &end_offset));
  uint8_t end[kEndRecordBytes];
  CKPTSPEC_RETURN_IF_ERROR(source.Read(end_offset, sizeof(end), end));
  if (end_offset >= kZip64LocatorBytes) {
    uint8_t signature[4];
    CKPTSPEC_RETURN_IF_ERROR(source.Read(end_offset - kZip64LocatorBytes, 4, signature));
    if (Load32(signature) == kZip64LocatorSignature) {
      return ReadZip64EndRecord(source, end_offset - kZip64LocatorBytes, location);
    }
  }
  const EndRecordFields fields = {Load16(end + 4),  Load16(end + 6),  Load16(end + 8),
                                  Load16(end + 10), Load32(end + 12), Load32(end + 16)};
  return LocationFrom(name, fields, end_offset, location);
}

Status CheckCentralDirectoryLocation(const std::string& name, const CentralDirectoryLocation& at,
                                     const ZipLimits& limits) {
  if (at.entries > limits.max_entries) {
    return Status::NotSupported(
        name + ": " + std::to_string(at.entries) +
        " entries exceed max_entries = " + std::to_string(limits.max_entries));
  }
  if (at.size > limits.max_central_directory_bytes) {
    return Status::NotSupported(name + ": the central directory's " + std::to_string(at.size) +
                                " bytes exceed max_central_directory_bytes = " +
                                std::to_string(limits.max_central_directory_bytes));
  }
  if (!RangeInside(at.offset, at.size, at.end_records_start)) {
    return Status::Corruption(name + ": the central directory " + Range(at.offset, at.size) +
                              " does not end before the end record at " +
                              std::to_string(at.end_records_start));
  }
  if (at.entries > at.size / kCentralHeaderBytes) {
    return Status::Corruption(name + ": the central directory's " + std::to_string(at.size) +
                              " bytes cannot hold " + std::to_string(at.entries) + " entries (" +
                              std::to_string(kCentralHeaderBytes) + " bytes each at least)");
  }
  return Status::OK();
}

// An entry as the central directory describes it, before its local header is read.
struct CentralEntry {
  ZipEntry entry;
  uint64_t local_header_offset = 0;
};

// Takes the 64-bit values of the fields the central directory marks 0xffffffff from the zip64
// extra field, in the order the format sets: size, compressed size, local header offset.
// `where` makes the message's beginning ("<source>: NAME").
template <typename Where>
Status ApplyZip64Extra(const Where& where, const uint8_t* extra, size_t extra_bytes, uint64_t* size,
                       uint64_t* compressed_size, uint64_t* local_header_offset) {
  uint64_t* const fields[] = {size, compressed_size, local_header_offset};
  const char* const field_names[] = {"size", "compressed size", "local header offset"};
  size_t at = 0;
  const uint8_t* zip64 = nullptr;
  size_t zip64_bytes = 0;
  while (at < extra_bytes) {
    if (extra_bytes - at < 4) {
      return Status::Corruption(where() + ": its extra field ends inside a field header at byte " +
                                std::to_string(at) + " of " + std::to_string(extra_bytes));
    }
    const uint16_t tag = Load16(extra + at);
    const uint16_t bytes = Load16(extra + at + 2);
    if (bytes > extra_bytes - at - 4) {
      return Status::Corruption(where() + ": extra field 0x" + Hex(tag, 4) + " at byte " +
                                std::to_string(at) + " runs past the extra field's " +
                                std::to_string(extra_bytes) + " bytes");
    }
    if (tag == kZip64ExtraTag && zip64 == nullptr) {
      zip64 = extra + at + 4;
      zip64_bytes = bytes;
    }
    at += 4 + size_t{bytes};
  }
  size_t used = 0;
  for (size_t i = 0; i < 3; ++i) {
    if (*fields[i] != kZip64Marker32) continue;
    if (zip64 == nullptr || zip64_bytes - used < 8) {
      return Status::Corruption(where() + ": the central directory marks its " + field_names[i] +
                                " 0xffffffff but no zip64 extra field holds it");
    }
    *fields[i] = Load64(zip64 + used);
    used += 8;
  }
  return Status::OK();
}

// Parses the central directory entry at `*at` of `directory` and advances `*at` past it.
Status ParseCentralEntry(const std::string& name, std::string_view directory, uint64_t index,
                         uint64_t directory_offset, size_t* at, CentralEntry* out) {
  const uint64_t header_offset = directory_offset + *at;
  // Messages are built only on error: an archive may hold a million entries.
  const auto where = [&] {
    return name + ": central directory entry " + std::to_string(index) + " at " +
           std::to_string(header_offset);
  };
  if (directory.size() - *at < kCentralHeaderBytes) {
    return Status::Corruption(where() + " runs past the directory's end");
  }
  const auto* header = reinterpret_cast<const uint8_t*>(directory.data() + *at);
  if (Load32(header) != kCentralHeaderSignature) {
    return Status::Corruption(where() + " lacks its signature (0x" + Hex(Load32(header), 8) + ")");
  }
  const uint16_t flags = Load16(header + 8);
  const uint16_t method = Load16(header + 10);
  const uint32_t crc = Load32(header + 16);
  uint64_t compressed_size = Load32(header + 20);
  uint64_t size = Load32(header + 24);
  const size_t name_bytes = Load16(header + 28);
  const size_t extra_bytes = Load16(header + 30);
  const size_t comment_bytes = Load16(header + 32);
  uint64_t local_header_offset = Load32(header + 42);
  const size_t variable_bytes = name_bytes + extra_bytes + comment_bytes;
  if (directory.size() - *at - kCentralHeaderBytes < variable_bytes) {
    return Status::Corruption(where() + ": its name, extra field and comment (" +
                              std::to_string(variable_bytes) + " bytes) run past the directory's " +
                              "end");
  }
  if (name_bytes == 0) return Status::Corruption(where() + " has an empty name");
  out->entry.name.assign(directory.data() + *at + kCentralHeaderBytes, name_bytes);
  const auto entry_where = [&] { return name + ": " + out->entry.name; };
  CKPTSPEC_RETURN_IF_ERROR(ApplyZip64Extra(entry_where, header + kCentralHeaderBytes + name_bytes,
                                           extra_bytes, &size, &compressed_size,
                                           &local_header_offset));
  if (flags & kEncryptedFlag) {
    return Status::NotSupported(entry_where() + ": encrypted entries are not supported");
  }
  if (method != kMethodStored) {
    return Status::NotSupported(entry_where() + ": compression method " + std::to_string(method) +
                                MethodName(method) +
                                " is not supported: torch.save stores entries uncompressed");
  }
  if (compressed_size != size) {
    return Status::Corruption(entry_where() + ": a stored entry's compressed size " +
                              std::to_string(compressed_size) + " differs from its size " +
                              std::to_string(size));
  }
  out->entry.size = size;
  out->entry.crc32 = crc;
  out->entry.method = method;
  out->local_header_offset = local_header_offset;
  *at += kCentralHeaderBytes + variable_bytes;
  return Status::OK();
}

Status ParseCentralDirectory(const ByteSource& source, const CentralDirectoryLocation& at,
                             std::vector<CentralEntry>* entries) {
  const std::string name = source.name();
  std::string directory(at.size, '\0');  // within limits and inside the source: checked
  CKPTSPEC_RETURN_IF_ERROR(source.Read(at.offset, directory.size(), directory.data()));
  entries->resize(at.entries);  // at most size / 46 entries: checked
  size_t position = 0;
  for (uint64_t i = 0; i < at.entries; ++i) {
    CKPTSPEC_RETURN_IF_ERROR(
        ParseCentralEntry(name, directory, i, at.offset, &position, &(*entries)[i]));
  }
  if (position != directory.size()) {
    return Status::Corruption(name + ": the central directory holds " +
                              std::to_string(directory.size() - position) + " bytes after its " +
                              std::to_string(at.entries) + " entries");
  }
  return Status::OK();
}

Status CheckNamesUnique(const std::string& name, const std::vector<CentralEntry>& entries) {
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int c = entries[a].entry.name.compare(entries[b].entry.name);
    return c != 0 ? c < 0 : a < b;
  });
  for (size_t i = 1; i < order.size(); ++i) {
    if (entries[order[i - 1]].entry.name == entries[order[i]].entry.name) {
      return Status::Corruption(name + ": " + entries[order[i]].entry.name +
                                " appears twice in the central directory (entries " +
                                std::to_string(order[i - 1]) + " and " + std::to_string(order[i]) +
                                ")");
    }
  }
  return Status::OK();
}

// Reads the entry's local header and sets its data offset.
Status ReadLocalHeader(const ByteSource& source, uint64_t directory_offset, CentralEntry* central) {
  ZipEntry& entry = central->entry;
  const auto where = [&] { return source.name() + ": " + entry.name; };
  const uint64_t offset = central->local_header_offset;
  const uint64_t fixed_and_name = kLocalHeaderBytes + entry.name.size();
  if (!RangeInside(offset, fixed_and_name, source.size())) {
    return Status::Corruption(where() + ": local header " + Range(offset, fixed_and_name) +
                              " lies outside the archive's " + std::to_string(source.size()) +
                              " bytes");
  }
  std::string header(fixed_and_name, '\0');
  CKPTSPEC_RETURN_IF_ERROR(source.Read(offset, header.size(), header.data()));
  const auto* bytes = reinterpret_cast<const uint8_t*>(header.data());
  if (Load32(bytes) != kLocalHeaderSignature) {
    return Status::Corruption(where() + ": no local header at " + std::to_string(offset) +
                              " (signature 0x" + Hex(Load32(bytes), 8) + ")");
  }
  const size_t name_bytes = Load16(bytes + 26);
  const size_t extra_bytes = Load16(bytes + 28);
  const std::string_view stored_name(header.data() + kLocalHeaderBytes,
                                     std::min(name_bytes, entry.name.size()));
  if (name_bytes != entry.name.size() || stored_name != entry.name) {
    std::string local_name(stored_name);
    if (name_bytes > entry.name.size()) local_name += "...";
    return Status::Corruption(where() + ": the local header at " + std::to_string(offset) +
                              " names " + local_name);
  }
  entry.data_offset = offset + kLocalHeaderBytes + name_bytes + extra_bytes;
  if (!RangeInside(entry.data_offset, entry.size, source.size())) {
    return Status::Corruption(where() + ": data " + Range(entry.data_offset, entry.size) +
                              " lies outside the archive's " + std::to_string(source.size()) +
                              " bytes");
  }
  if (entry.data_offset + entry.size > directory_offset) {
    return Status::Corruption(where() + ": data " + Range(entry.data_offset, entry.size) +
                              " runs into the central directory at " +
                              std::to_string(directory_offset));
  }
  return Status::OK();
}

// An entry spans its local header and its data; no two spans may overlap.
Status CheckNoOverlap(const std::string& name, const std::vector<CentralEntry>& entries) {
  std::vector<const CentralEntry*> by_offset(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) by_offset[i] = &entries[i];
  std::sort(by_offset.begin(), by_offset.end(), [](const CentralEntry* a, const CentralEntry* b) {
    return a->local_header_offset < b->local_header_offset;
  });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const ZipEntry& before = by_offset[i - 1]->entry;
    if (before.data_offset + before.size > by_offset[i]->local_header_offset) {
      return Status::Corruption(name + ": the data of " + before.name + " " +
                                Range(before.data_offset, before.size) + " overlaps " +
                                by_offset[i]->entry.name + ", whose local header starts at " +
                                std::to_string(by_offset[i]->local_header_offset));
    }
  }
  return Status::OK();
}

Status ReadDirectory(const ByteSource& source, const ZipLimits& limits,
                     std::vector<ZipEntry>* entries) {
  const std::string name = source.name();
  CentralDirectoryLocation location;
  CKPTSPEC_RETURN_IF_ERROR(LocateCentralDirectory(source, &location));
  CKPTSPEC_RETURN_IF_ERROR(CheckCentralDirectoryLocation(name, location, limits));
  std::vector<CentralEntry> central;
  CKPTSPEC_RETURN_IF_ERROR(ParseCentralDirectory(source, location, &central));
  CKPTSPEC_RETURN_IF_ERROR(CheckNamesUnique(name, central));
  for (CentralEntry& entry : central) {
    CKPTSPEC_RETURN_IF_ERROR(ReadLocalHeader(source, location.offset, &entry));
  }
  CKPTSPEC_RETURN_IF_ERROR(CheckNoOverlap(name, central));
  entries->reserve(central.size());
  for (CentralEntry& entry : central) entries->push_back(std::move(entry.entry));
  return Status::OK();
}

}  // namespace

Status ReadZipDirectory(const ByteSource& source, const ZipLimits& limits,
                        std::vector<ZipEntry>* entries) {
  entries->clear();
  Status status = ReadDirectory(source, limits, entries);
  if (!status.ok()) entries->clear();
  return status;
}

}  // namespace ckptspec
