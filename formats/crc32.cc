#include "formats/crc32.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

// Advances the CRC register `c` (not inverted) over n bytes with the tables.
uint32_t TableUpdate(uint32_t c, const unsigned char* p, size_t n) {
  while (n >= kSlices) {
    c = FoldWord(LoadLittle32(p) ^ c, 15) ^ FoldWord(LoadLittle32(p + 4), 11) ^
        FoldWord(LoadLittle32(p + 8), 7) ^ FoldWord(LoadLittle32(p + 12), 3);
    p += kSlices;
    n -= kSlices;
  }
  for (; n > 0; --n, ++p) c = (c >> 8) ^ kTables.t[0][(c ^ *p) & 0xFFu];
  return c;
}

#if defined(__x86_64__)
// Carry-less multiplication folding (x86 PCLMULQDQ): four 128-bit lanes are folded forward by 512
// bits per 64 bytes, then into one lane, then reduced to 32 bits by Barrett reduction. The
// constants are powers of x modulo the polynomial, bit-reflected and shifted left by one, as the
// reflected CRC needs: x^544 and x^480 (folding by 512 bits), x^160 and x^96 (by 128), x^64 (96
// bits to 64), and for the reduction floor(x^64 / P) and P itself.
constexpr uint64_t kFold512Low = 0x154442bd4, kFold512High = 0x1c6e41596;
constexpr uint64_t kFold128Low = 0x1751997d0, kFold128High = 0x0ccaa009e;
constexpr uint64_t kFold64 = 0x163cd6124;
constexpr uint64_t kBarrettPolynomial = 0x1db710641, kBarrettQuotient = 0x1f7011641;

// Folds `lane` forward by the distance of `k` (its two constants) and adds `next`.
__attribute__((target("pclmul,sse4.1"))) inline __m128i Fold(__m128i lane, __m128i k,
                                                             __m128i next) {
  return _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(lane, k, 0x00), _mm_clmulepi64_si128(lane, k, 0x11)),
      next);
}

// The register after n bytes, n a multiple of 16 and at least 64.
__attribute__((target("pclmul,sse4.1"))) uint32_t FoldUpdate(uint32_t c, const unsigned char* p,
                                                             size_t n) {
  auto load = [](const unsigned char* at) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
  };
  __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(c)));
  __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
  p += 64;
  n -= 64;
  __m128i k =
      _mm_set_epi64x(static_cast<long long>(kFold512High), static_cast<long long>(kFold512Low));
  for (; n >= 64; p += 64, n -= 64) {
    x0 = Fold(x0, k, load(p));
    x1 = Fold(x1, k, load(p + 16));
    x2 = Fold(x2, k, load(p + 32));
    x3 = Fold(x3, k, load(p + 48));
  }
  k = _mm_set_epi64x(static_cast<long long>(kFold128High), static_cast<long long>(kFold128Low));
  __m128i x = Fold(Fold(Fold(x0, k, x1), k, x2), k, x3);
  for (; n >= 16; p += 16, n -= 16) x = Fold(x, k, load(p));
  // 128 bits to 64: the low half times x^96, added to the high half.
  const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
  x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, k, 0x10));
  // 96 bits to 64: the low 32 times x^64, added to the rest.
  const __m128i k64 = _mm_set_epi64x(0, static_cast<long long>(kFold64));
  x = _mm_xor_si128(_mm_srli_si128(x, 4), _mm_clmulepi64_si128(_mm_and_si128(x, low32), k64, 0x00));
  // Barrett reduction to 32 bits.
  const __m128i barrett = _mm_set_epi64x(static_cast<long long>(kBarrettQuotient),
                                         static_cast<long long>(kBarrettPolynomial));
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), barrett, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(x, t), 1));
}

bool HaveFold() {
  static const bool have = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return have;
}
#endif

}  // namespace

uint32_t Crc32(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
#if defined(__x86_64__)
  if (n >= 64 && HaveFold()) {
    const size_t folded = n & ~size_t{15};
    c = FoldUpdate(c, p, folded);
    p += folded;
    n -= folded;
  }
#endif
  return ~TableUpdate(c, p, n);
}

}  // namespace ckptspec
