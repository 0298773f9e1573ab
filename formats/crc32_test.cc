#include "formats/crc32.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <string>

namespace ckptspec {
namespace {

// The CRC one bit at a time, straight from the definition: what the tables must agree with.
uint32_t BitwiseCrc32(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0xEDB88320u : 0u);
  }
  return ~crc;
}

uint32_t Crc(const std::string& bytes) { return Crc32(0, bytes.data(), bytes.size()); }

TEST(Crc32, KnownValues) {
  EXPECT_EQ(Crc(""), 0u);
  EXPECT_EQ(Crc("a"), 0xE8B7BE43u);
  EXPECT_EQ(Crc("123456789"), 0xCBF43926u);  // the CRC catalogue's check value
  EXPECT_EQ(Crc("The quick brown fox jumps over the lazy dog"), 0x414FA339u);
  EXPECT_EQ(Crc("little"), 0x19E33D85u);  // torch.save's byteorder entry, as Python's zipfile says
  EXPECT_EQ(Crc(std::string(1 << 20, '\0')), 0xA738EA1Cu);
  EXPECT_EQ(Crc32(0x12345678u, nullptr, 0), 0x12345678u);
}

RC_GTEST_PROP(Crc32Properties, EqualsTheBitwiseDefinitionAtAnyAlignment,
              (const std::string& bytes)) {
  const size_t skip = *rc::gen::inRange<size_t>(0, bytes.size() + 1);
  RC_ASSERT(Crc32(0, bytes.data() + skip, bytes.size() - skip) == BitwiseCrc32(bytes.substr(skip)));
}

// Long runs take the carry-less-multiplication path on x86-64: lengths up to 8 KiB, at any start
// and any initial CRC, chained over two pieces.
RC_GTEST_PROP(Crc32Properties, LongRunsEqualTheBitwiseDefinition, ()) {
  const size_t n = *rc::gen::inRange<size_t>(0, 8192);
  std::string bytes(n, '\0');
  uint64_t state = *rc::gen::arbitrary<uint64_t>();
  for (char& b : bytes) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    b = static_cast<char>(state >> 56);
  }
  const size_t skip = *rc::gen::inRange<size_t>(0, std::min<size_t>(n, 31) + 1);
  const std::string tail = bytes.substr(skip);
  RC_ASSERT(Crc32(0, tail.data(), tail.size()) == BitwiseCrc32(tail));
  const size_t split = *rc::gen::inRange<size_t>(0, tail.size() + 1);
  RC_ASSERT(Crc32(Crc32(0, tail.data(), split), tail.data() + split, tail.size() - split) ==
            BitwiseCrc32(tail));
}

RC_GTEST_PROP(Crc32Properties, ChainsOverPieces, (const std::string& bytes)) {
  const size_t split = *rc::gen::inRange<size_t>(0, bytes.size() + 1);
  const uint32_t first = Crc32(0, bytes.data(), split);
  RC_ASSERT(Crc32(first, bytes.data() + split, bytes.size() - split) == Crc(bytes));
}

}  // namespace
}  // namespace ckptspec
