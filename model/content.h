// The counter-based content generator: the expected value of every element of every tensor is a
// pure function of (seed, key, global element index), so any shard's content can be computed
// anywhere -- on the host, or inside a CUDA kernel -- without storing it.
//
// Contracts:
//  - ContentBits(seed, key_hash, index) is a fixed, documented 64-bit mix (below); changing it
//    changes every golden checkpoint, so it is versioned by kContentGeneratorVersion.
//  - ContentElementBits(dtype, ...) is the element's bit pattern in `dtype`, zero-extended to 64
//    bits. Floating types hold a value in [-1, 1) (24 random bits, rounded to nearest even into
//    the dtype); int32 holds the low 32 bits of ContentBits; int64 all 64 bits.
//  - The global index is the row-major linear index into the tensor's global shape.
//  - KeyHash is host-only; device code receives the hash, never the string.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/content_encode.h"
#include "model/dtype.h"
#include "model/float_codec.h"
#include "model/host_device.h"

namespace ckptspec {

inline constexpr int kContentGeneratorVersion = 1;

// The finalizer of MurmurHash3 (fmix64): a bijection on 64-bit words with full avalanche.
CKPTSPEC_HD constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

// 64-bit FNV-1a of the key's bytes, then Mix64.
constexpr uint64_t KeyHash(std::string_view key) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : key) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001B3ull;
  }
  return Mix64(h);
}

// Mix64(Mix64(seed ^ key_hash * golden) + (index + 1) * golden'): distinct (seed, key) pairs give
// independent streams; consecutive indices give independent words. Split into its parts so a loop
// over consecutive indices can hoist the stream and step the index term by addition:
// ContentIndexTerm(i + 1) == ContentIndexTerm(i) + kContentIndexGolden (mod 2^64).
inline constexpr uint64_t kContentIndexGolden = 0xD1B54A32D192ED03ull;

CKPTSPEC_HD constexpr uint64_t ContentStream(uint64_t seed, uint64_t key_hash) {
  return Mix64(seed ^ (key_hash * 0x9E3779B97F4A7C15ull));
}

CKPTSPEC_HD constexpr uint64_t ContentIndexTerm(uint64_t index) {
  return (index + 1) * kContentIndexGolden;
}

CKPTSPEC_HD constexpr uint64_t ContentBitsFromTerm(uint64_t stream, uint64_t index_term) {
  return Mix64(stream + index_term);
}

CKPTSPEC_HD constexpr uint64_t ContentBits(uint64_t seed, uint64_t key_hash, uint64_t index) {
  return ContentBitsFromTerm(ContentStream(seed, key_hash), ContentIndexTerm(index));
}

// A value in [-1, 1) with 24 bits of resolution, exact in fp32.
CKPTSPEC_HD inline float ContentUnitFloat(uint64_t bits) {
  const int32_t r = ContentUnitNumerator(bits);  // [-2^23, 2^23)
  return static_cast<float>(r) * (1.0f / 8388608.0f);
}

// The element's bits in `dtype` given its ContentBits word.
CKPTSPEC_HD inline uint64_t ContentElementFromBits(DType dtype, uint64_t bits) {
  switch (dtype) {
    case DType::kInt32:
      return bits & 0xFFFFFFFFull;
    case DType::kInt64:
      return bits;
    // == EncodeFloat(dtype, ContentUnitFloat(bits)), by a branch-free path (content_encode.h).
    default:
      return EncodeContentUnit(dtype, bits);
  }
}

CKPTSPEC_HD inline uint64_t ContentElementBits(DType dtype, uint64_t seed, uint64_t key_hash,
                                               uint64_t global_index) {
  return ContentElementFromBits(dtype, ContentBits(seed, key_hash, global_index));
}

}  // namespace ckptspec
