// The digest of a parameter's elements that framework adapters report (docs/PROTOCOL.md,
// "Framework adapters", Digests): the sum modulo 2^64 of ElementDigest(i, b) over the elements,
// with i an element's row-major index in the whole (unsharded) parameter and b the 32-bit
// pattern of its value as fp32. Sums over disjoint element sets add, so the digests ranks report
// for their parts add up to the whole parameter's, whatever the layout.
// adapters/python/ckptspec_framework_kit.py computes the same function (its test checks the
// values observation_digest_test.cc checks).
#pragma once

#include <cstdint>
#include <string>

namespace ckptspec {

// MurmurHash3's 64-bit finalizer.
inline uint64_t Fmix64(uint64_t z) {
  z ^= z >> 33;
  z *= 0xFF51AFD7ED558CCDull;
  z ^= z >> 33;
  z *= 0xC4CEB9FE1A85EC53ull;
  return z ^ (z >> 33);
}

// One element's term: Fmix64(index * 0x9E3779B97F4A7C15 + fp32_bits * 0xC2B2AE3D27D4EB4F +
// 0x165667B19E3779F9), arithmetic modulo 2^64.
inline uint64_t ElementDigest(uint64_t index, uint32_t fp32_bits) {
  return Fmix64(index * 0x9E3779B97F4A7C15ull + uint64_t{fp32_bits} * 0xC2B2AE3D27D4EB4Full +
                0x165667B19E3779F9ull);
}

// The wire form: 16 lowercase hex digits.
std::string HexDigest(uint64_t digest);
// Reads exactly 16 hex digits (either case); false otherwise.
bool ParseHexDigest(const std::string& text, uint64_t* out);

}  // namespace ckptspec
