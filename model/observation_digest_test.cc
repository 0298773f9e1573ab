#include "model/observation_digest.h"

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

// The values adapters/python/ckptspec_framework_kit_test.py checks for the Python function: both
// sides compute the protocol's digest the same way.
TEST(ObservationDigest, KnownValues) {
  // Elements 0, 1, 2 holding 0.0, 1.0, -1.0.
  const uint64_t d =
      ElementDigest(0, 0) + ElementDigest(1, 0x3f800000u) + ElementDigest(2, 0xbf800000u);
  EXPECT_EQ(HexDigest(d), "5af0951796dd9fe2");
  EXPECT_EQ(HexDigest(0), "0000000000000000");
}

TEST(ObservationDigest, PartsAddUpToTheWhole) {
  uint64_t whole = 0, first = 0, second = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    const uint32_t bits = static_cast<uint32_t>(i * 2654435761u);
    whole += ElementDigest(i, bits);
    (i % 3 == 0 ? first : second) += ElementDigest(i, bits);
  }
  EXPECT_EQ(first + second, whole);
}

TEST(ObservationDigest, IndexAndValueBothMatter) {
  EXPECT_NE(ElementDigest(0, 1), ElementDigest(1, 0));
  EXPECT_NE(ElementDigest(5, 0x3f800000u), ElementDigest(5, 0x3f800001u));
}

TEST(ObservationDigest, HexRoundTrip) {
  uint64_t v = 0;
  ASSERT_TRUE(ParseHexDigest("5AF0951796dd9fe2", &v));
  EXPECT_EQ(v, 0x5af0951796dd9fe2ull);
  EXPECT_FALSE(ParseHexDigest("5af0951796dd9fe", &v));    // 15 digits
  EXPECT_FALSE(ParseHexDigest("5af0951796dd9fe2a", &v));  // 17
  EXPECT_FALSE(ParseHexDigest("5af0951796dd9fgz", &v));
  EXPECT_FALSE(ParseHexDigest("", &v));
}

}  // namespace
}  // namespace ckptspec
