#include "formats/crc32.h"

namespace ckptspec {
namespace {

constexpr uint32_t kReflectedPolynomial = 0xEDB88320u;
constexpr int kSlices = 16;

// kTables.t[0] is the bytewise table; t[s][b] is the CRC of byte b followed by s zero bytes, so
// 16 bytes advance the CRC with 16 independent lookups.
struct SliceTables {
  uint32_t t[kSlices][256];
};

constexpr SliceTables MakeSliceTables() {
  SliceTables tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kReflectedPolynomial : 0u);
    tables.t[0][byte] = crc;
  }
  for (int slice = 1; slice < kSlices; ++slice) {
    for (uint32_t byte = 0; byte < 256; ++byte) {
      const uint32_t previous = tables.t[slice - 1][byte];
      tables.t[slice][byte] = (previous >> 8) ^ tables.t[0][previous & 0xFFu];
    }
  }
  return tables;
}

constexpr SliceTables kTables = MakeSliceTables();

// Little-endian regardless of the host (compilers turn this into one load on x86 and ARM).
inline uint32_t LoadLittle32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// The four lookups that fold one 32-bit word whose first byte meets table `top`.
inline uint32_t FoldWord(uint32_t word, int top) {
  const auto& t = kTables.t;
  return t[top][word & 0xFFu] ^ t[top - 1][(word >> 8) & 0xFFu] ^ t[top - 2][(word >> 16) & 0xFFu] ^
         t[top - 3][word >> 24];
}

}  // namespace

uint32_t Crc32(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (n >= kSlices) {
    c = FoldWord(LoadLittle32(p) ^ c, 15) ^ FoldWord(LoadLittle32(p + 4), 11) ^
        FoldWord(LoadLittle32(p + 8), 7) ^ FoldWord(LoadLittle32(p + 12), 3);
    p += kSlices;
    n -= kSlices;
  }
  for (; n > 0; --n, ++p) c = (c >> 8) ^ kTables.t[0][(c ^ *p) & 0xFFu];
  return ~c;
}

}  // namespace ckptspec
