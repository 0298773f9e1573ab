// The entry reads declared in zip_reader.h: CheckZipEntryCrc and ReadSmallEntry.
#include <algorithm>
#include <vector>

#include "formats/zip_reader.h"
#include "formats/zip_records.h"

namespace ckptspec {
namespace {

Status CompareCrc(const ByteSource& source, const ZipEntry& entry, uint32_t actual) {
  if (actual == entry.crc32) return Status::OK();
  return Status::Corruption(source.name() + ": " + entry.name + ": CRC-32 0x" +
                            zip_records::Hex(actual, 8) + " differs from the 0x" +
                            zip_records::Hex(entry.crc32, 8) + " its central directory records");
}

}  // namespace

Status CheckZipEntryCrc(const ByteSource& source, const ZipEntry& entry, size_t block_bytes) {
  CKPTSPEC_RETURN_IF_ERROR(CheckRange(source.name(), source.size(), entry.data_offset, entry.size));
  std::vector<unsigned char> block(
      static_cast<size_t>(std::min<uint64_t>(std::max<size_t>(block_bytes, 1), entry.size)));
  uint32_t crc = 0;
  for (uint64_t done = 0; done < entry.size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), entry.size - done));
    CKPTSPEC_RETURN_IF_ERROR(source.Read(entry.data_offset + done, n, block.data()));
    crc = Crc32(crc, block.data(), n);
    done += n;
  }
  return CompareCrc(source, entry, crc);
}

Status ReadSmallEntry(const ByteSource& source, const ZipEntry& entry, uint64_t max_size,
                      std::string* out) {
  out->clear();
  if (entry.size > max_size) {
    return Status::NotSupported(source.name() + ": " + entry.name + " holds " +
                                std::to_string(entry.size) + " bytes, more than the " +
                                std::to_string(max_size) + " read here");
  }
  CKPTSPEC_RETURN_IF_ERROR(CheckRange(source.name(), source.size(), entry.data_offset, entry.size));
  std::string bytes(static_cast<size_t>(entry.size), '\0');
  CKPTSPEC_RETURN_IF_ERROR(source.Read(entry.data_offset, bytes.size(), bytes.data()));
  CKPTSPEC_RETURN_IF_ERROR(CompareCrc(source, entry, Crc32(0, bytes.data(), bytes.size())));
  *out = std::move(bytes);
  return Status::OK();
}

}  // namespace ckptspec
