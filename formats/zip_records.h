// The zip format's record layouts (APPNOTE.TXT 6.3) as the readers and the tests' writer use them:
// signatures, fixed sizes, flags, and little-endian field loads. Internal to formats/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ckptspec {
namespace zip_records {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;     // "PK\3\4"
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;   // "PK\1\2"
constexpr uint32_t kEndRecordSignature = 0x06054b50;       // "PK\5\6"
constexpr uint32_t kZip64EndRecordSignature = 0x06064b50;  // "PK\6\6"
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;    // "PK\6\7"
constexpr uint32_t kDataDescriptorSignature = 0x08074b50;  // "PK\7\8"

constexpr size_t kLocalHeaderBytes = 30;     // then name, extra field, data
constexpr size_t kCentralHeaderBytes = 46;   // then name, extra field, comment
constexpr size_t kEndRecordBytes = 22;       // then the archive comment
constexpr size_t kMaxCommentBytes = 0xFFFF;  // the comment's length is 16 bits
constexpr size_t kZip64LocatorBytes = 20;    // right before the end record
constexpr size_t kZip64EndRecordBytes = 56;  // its fixed part; "size" counts from byte 12

constexpr uint16_t kZip64ExtraTag = 0x0001;
constexpr uint32_t kZip64Marker32 = 0xFFFFFFFF;  // "in the zip64 extra field" (sizes, offsets)
constexpr uint16_t kZip64Marker16 = 0xFFFF;      // "in the zip64 end record" (counts)
constexpr uint16_t kEncryptedFlag = 1 << 0;
constexpr uint16_t kDataDescriptorFlag = 1 << 3;
constexpr uint16_t kUtf8NameFlag = 1 << 11;
constexpr uint16_t kMethodStored = 0;

inline uint16_t Load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
inline uint32_t Load32(const uint8_t* p) {
  return static_cast<uint32_t>(Load16(p)) | static_cast<uint32_t>(Load16(p + 2)) << 16;
}
inline uint64_t Load64(const uint8_t* p) {
  return static_cast<uint64_t>(Load32(p)) | static_cast<uint64_t>(Load32(p + 4)) << 32;
}

// `value` as `digits` lowercase hex digits: Hex(0x4b50, 8) is "00004b50".
inline std::string Hex(uint64_t value, int digits) {
  std::string out(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i, value >>= 4) out[i] = "0123456789abcdef"[value & 0xF];
  return out;
}

// " (deflate)" and the like for the methods APPNOTE names that torch.save archives might meet;
// "" for others.
inline const char* MethodName(uint16_t method) {
  switch (method) {
    case 8:
      return " (deflate)";
    case 9:
      return " (deflate64)";
    case 12:
      return " (bzip2)";
    case 14:
      return " (lzma)";
    case 93:
      return " (zstd)";
    case 95:
      return " (xz)";
    default:
      return "";
  }
}

}  // namespace zip_records
}  // namespace ckptspec
