#include "runner/reproduce_string.h"

#include <gtest/gtest.h>

#include <iterator>
#include <sstream>
#include <unordered_map>
#include <vector>

#include <rapidcheck.h>
#include <rapidcheck/detail/Configuration.h>

namespace ckptspec {
namespace {

const std::string kId = "B08/P4";

// A case as the runner records it: a Random that has been split (as a generator's is), a size, a
// shrink path.
rc::detail::Reproduce RecordedCase() {
  rc::detail::Reproduce r;
  r.random = rc::Random(42).split().split();
  r.size = 37;
  r.shrinkPath = {0, 3, 1, 0, 9};
  return r;
}

// The reproduce string the runner writes for `reproduce` (RapidCheck's own writer).
std::string Written(const rc::detail::Reproduce& reproduce, const std::string& id = kId,
                    int max_size = 100) {
  rc::detail::Configuration config;
  config.testParams.seed = 7;
  config.testParams.maxSize = max_size;
  config.reproduce[id] = reproduce;
  std::ostringstream os;
  os << config;
  return os.str();
}

// The reproduce value's bytes (RapidCheck's serializer), for tests that damage them.
std::vector<uint8_t> EntryBytes(const rc::detail::Reproduce& reproduce,
                                const std::string& id = kId) {
  std::unordered_map<std::string, rc::detail::Reproduce> map{{id, reproduce}};
  std::vector<uint8_t> bytes;
  rc::detail::serialize(map, std::back_inserter(bytes));
  return bytes;
}

// RapidCheck's base64: six bits per character, least significant first.
std::string Base64(const std::vector<uint8_t>& bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+_";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t bits = 0;
    int nbits = 0;
    for (size_t j = i; j < std::min(bytes.size(), i + 3); ++j, nbits += 8)
      bits |= uint32_t{bytes[j]} << nbits;
    for (; nbits > 0; nbits -= 6, bits >>= 6) out += kAlphabet[bits & 0x3f];
  }
  return out;
}

std::string WithValue(const std::string& value) { return "seed=7 reproduce=" + value; }

// Offsets in EntryBytes(RecordedCase()): entry count, id length, id, then the Random's key (32
// bytes), its bits (a varint: one byte here, 0b11 after two splits), counter, bit index; the size
// (4 bytes); the shrink path's length and steps.
constexpr size_t kRandom = 2 + 6;
constexpr size_t kBits = kRandom + 32, kCounter = kBits + 1, kBitIndex = kCounter + 1;
constexpr size_t kSize = kBitIndex + 1, kSteps = kSize + 4;

std::string DecodeError(const std::vector<uint8_t>& bytes) {
  DecodedReproduce decoded;
  const Status s = DecodeReproduceString(WithValue(Base64(bytes)), &decoded);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  return s.message();
}

std::string DecodeError(const std::string& text) {
  DecodedReproduce decoded;
  const Status s = DecodeReproduceString(text, &decoded);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  return s.message();
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(ReproduceString, WhatTheRunnerWritesDecodesToTheSameCase) {
  const rc::detail::Reproduce recorded = RecordedCase();
  ASSERT_EQ(EntryBytes(recorded)[kBits], 3);  // the offsets above hold
  DecodedReproduce decoded;
  ASSERT_TRUE(DecodeReproduceString(Written(recorded), &decoded).ok()) << Written(recorded);
  EXPECT_EQ(decoded.target, "B08");
  EXPECT_EQ(decoded.property, "P4");
  EXPECT_EQ(decoded.id(), kId);
  EXPECT_EQ(decoded.params.seed, 7u);
  EXPECT_EQ(decoded.params.maxSize, 100);
  EXPECT_TRUE(decoded.reproduce == recorded);
  // A target name may hold '/' (the property is after the last one); a quoted value is read too.
  ASSERT_TRUE(DecodeReproduceString(Written(recorded, "plug/in/P4"), &decoded).ok());
  EXPECT_EQ(decoded.target, "plug/in");
  ASSERT_TRUE(
      DecodeReproduceString("reproduce='" + Base64(EntryBytes(recorded)) + "'", &decoded).ok());
}

// Random::split asserts that the counter is 0: a Random a generator receives always is.
TEST(ReproduceString, ARandomThatHasDrawnNumbersIsRefused) {
  rc::detail::Reproduce r = RecordedCase();
  r.random.next();
  EXPECT_CONTAINS(DecodeError(Written(r)), "the Random's counter is 1");
  std::vector<uint8_t> bytes = EntryBytes(RecordedCase());
  bytes[kBitIndex] = 65;
  EXPECT_CONTAINS(DecodeError(bytes), "the Random's bit index is 65; at most 64");
  bytes = EntryBytes(RecordedCase());
  bytes[kBits] = 0x7f;  // bits 0-6 set with a bit index of 2
  EXPECT_CONTAINS(DecodeError(bytes),
                  "the Random's bits 127 have a bit set at or above its bit index 2");
}

// A negative size made the layout generator index out of bounds; sizes beyond max_size are never
// recorded.
TEST(ReproduceString, SizesOutsideZeroToMaxSizeAreRefused) {
  rc::detail::Reproduce r = RecordedCase();
  r.size = -5;
  EXPECT_CONTAINS(DecodeError(Written(r)),
                  "the case's size is -5; 0 to max_size = 100 are accepted");
  r.size = kMaxReproduceSize + 1;
  EXPECT_CONTAINS(DecodeError(Written(r)), "the case's size is 101");
  EXPECT_CONTAINS(DecodeError(Written(RecordedCase(), kId, 10)), "0 to max_size = 10 are");
  EXPECT_CONTAINS(DecodeError(Written(RecordedCase(), kId, 101)),
                  "max_size = '101' is out of range (accepted: 0 to 100)");
}

TEST(ReproduceString, ShrinkPathsBeyondTheLimitsAreRefused) {
  rc::detail::Reproduce r = RecordedCase();
  r.shrinkPath.assign(kMaxShrinkSteps + 1, 0);
  EXPECT_CONTAINS(DecodeError(Written(r)), "the shrink path has 10001 steps; at most 10000");
  r.shrinkPath = {0, kMaxShrinkIndex + 1};
  EXPECT_CONTAINS(DecodeError(Written(r)), "shrink step 1 is 1000001; at most 1000000");
  r.shrinkPath.assign(kMaxShrinkSteps, 2);
  DecodedReproduce decoded;
  EXPECT_TRUE(DecodeReproduceString(Written(r), &decoded).ok());
}

TEST(ReproduceString, DamagedBytesAreNamed) {
  const std::vector<uint8_t> good = EntryBytes(RecordedCase());
  std::vector<uint8_t> bytes(good.begin(), good.end() - 1);
  EXPECT_CONTAINS(DecodeError(bytes), "a shrink step at byte");
  EXPECT_CONTAINS(DecodeError(bytes), "is cut short");
  bytes.assign(good.begin(),
               good.begin() + kBitIndex);  // RapidCheck read the bit index past the end
  EXPECT_CONTAINS(DecodeError(bytes), "the Random's bit index at byte 42 is cut short");
  bytes = good;
  bytes.push_back(0);
  EXPECT_CONTAINS(DecodeError(bytes), "has 1 bytes after its entry");
  bytes = good;
  bytes[kBits] = 0xff;
  bytes.insert(bytes.begin() + kBits, 9, 0xff);  // a varint of more than 64 bits
  EXPECT_CONTAINS(DecodeError(bytes),
                  "the Random's bits at byte 40 is a number of more than 64 bits");
  bytes = good;
  bytes[0] = 2;
  EXPECT_CONTAINS(DecodeError(bytes), "holds 2 entries; exactly one");
  bytes[0] = 0;
  EXPECT_CONTAINS(DecodeError(bytes), "holds 0 entries");
  bytes = good;
  bytes[1] = 100;  // the id's length runs past the end
  EXPECT_CONTAINS(DecodeError(bytes), "the test id at byte 2 is cut short");
}

TEST(ReproduceString, TestIdsAreTargetSlashPropertyInPrintableAscii) {
  EXPECT_CONTAINS(DecodeError(Written(RecordedCase(), "B08P4")),
                  "the entry 'B08P4' is not of the form target/property");
  EXPECT_CONTAINS(DecodeError(Written(RecordedCase(), "/P4")), "the target name has 0 bytes");
  EXPECT_CONTAINS(DecodeError(Written(RecordedCase(), "B08/")), "the property name has 0 bytes");
  EXPECT_CONTAINS(DecodeError(Written(RecordedCase(), std::string("B0\x01/P4"))), "holds byte 1");
  EXPECT_CONTAINS(DecodeError(Written(RecordedCase(), std::string(300, 'x') + "/P4")),
                  "the target name has 300 bytes");
}

TEST(ReproduceString, TheTextAroundTheValueIsChecked) {
  const std::string value = Base64(EntryBytes(RecordedCase()));
  EXPECT_CONTAINS(DecodeError("seed=1"), "it has no reproduce=... entry");
  EXPECT_CONTAINS(DecodeError("colour=red " + WithValue(value)), "unknown key 'colour'");
  EXPECT_CONTAINS(DecodeError("seed=2 " + WithValue(value)), "'seed' is given twice");
  EXPECT_CONTAINS(
      DecodeError("seed=99999999999999999999 reproduce=" + value),
      "seed = '99999999999999999999' is out of range (accepted: 0 to 18446744073709551615)");
  EXPECT_CONTAINS(DecodeError("noshrink=2 reproduce=" + value), "noshrink = '2'");
  EXPECT_CONTAINS(DecodeError("max_success=-1 reproduce=" + value),
                  "max_success = '-1' is out of range (accepted: 0 to 2147483647)");
  EXPECT_CONTAINS(DecodeError("max_success=1e3 reproduce=" + value),
                  "max_success = '1e3' is not a whole number (accepted: 0 to 2147483647)");
  EXPECT_CONTAINS(DecodeError("seed=1 reproduce='" + value),
                  "the quote opened at offset 17 is not closed");
  EXPECT_CONTAINS(DecodeError("=1 " + WithValue(value)), "expected a key at offset 0, found '='");
  EXPECT_CONTAINS(DecodeError(WithValue(value.substr(0, 5))),
                  "has 5 characters, a length base64 never has");
  EXPECT_CONTAINS(DecodeError(WithValue("AB=C")), "has '=' at character 2, not a base64 digit");
  EXPECT_CONTAINS(DecodeError(WithValue("AQ")), "ends a group with stray bits at character 1");
  EXPECT_CONTAINS(DecodeError(WithValue(std::string(kMaxReproduceStringBytes, 'A'))),
                  "at most 65536 are accepted");
}

}  // namespace
}  // namespace ckptspec
