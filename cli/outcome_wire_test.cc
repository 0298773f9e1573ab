#include "cli/outcome_wire.h"

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

TEST(OutcomeWire, EveryFieldRoundTripsExactly) {
  PropertyOutcome o;
  o.property = "P13";
  o.target = "B19";
  o.verdict = Verdict::kFail;
  o.cases = 17;
  o.seconds = 0.1 + 0.2;  // not a short decimal
  o.time_to_failure_s = 1.0 / 3.0;
  o.message = "line 1\nline 2 \"quoted\" \t tab";
  o.counterexample = {{"ckptspec::RunSpec", "world 4"}, {"long", "7"}};
  o.shrunk_size = 42;
  o.tag_counts = {{"async save", 3}, {"sync save", 97}};
  o.reproduce = "RC_PARAMS=\"reproduce=abc\"";
  PropertyOutcome back;
  ASSERT_TRUE(DecodeOutcome(EncodeOutcome(o), &back).ok());
  EXPECT_EQ(back.property, o.property);
  EXPECT_EQ(back.target, o.target);
  EXPECT_EQ(back.verdict, o.verdict);
  EXPECT_EQ(back.cases, o.cases);
  EXPECT_EQ(back.seconds, o.seconds);
  EXPECT_EQ(back.time_to_failure_s, o.time_to_failure_s);
  EXPECT_EQ(back.message, o.message);
  EXPECT_EQ(back.counterexample, o.counterexample);
  EXPECT_EQ(back.shrunk_size, o.shrunk_size);
  EXPECT_EQ(back.tag_counts, o.tag_counts);
  EXPECT_EQ(back.reproduce, o.reproduce);
}

// A target's message may hold any bytes; encoding never throws (invalid UTF-8 is replaced).
TEST(OutcomeWire, InvalidUtf8InAMessageIsReplacedNotThrown) {
  PropertyOutcome o;
  o.message = std::string("bad \xff\xfe bytes");
  PropertyOutcome back;
  ASSERT_TRUE(DecodeOutcome(EncodeOutcome(o), &back).ok());
  EXPECT_EQ(back.message.substr(0, 4), "bad ");
}

TEST(OutcomeWire, WhatDoesNotDecodeIsCorruptionNamingIt) {
  PropertyOutcome o;
  EXPECT_EQ(DecodeOutcome("[1]", &o).message(), "worker outcome: expected an object, got [1]");
  EXPECT_EQ(DecodeOutcome("not json", &o).code(), Status::Code::kCorruption);
  EXPECT_EQ(DecodeOutcome("not json", &o).message(), "a worker's outcome is not JSON");
  const std::string good = EncodeOutcome(PropertyOutcome());
  std::string text = good;
  text.replace(text.find("\"verdict\":4"), 11, "\"verdict\":9");
  EXPECT_EQ(DecodeOutcome(text, &o).code(), Status::Code::kCorruption);
  EXPECT_EQ(DecodeOutcome(text, &o).message(),
            "worker outcome.verdict: expected an integer in [0, 4], got 9");
  EXPECT_EQ(DecodeOutcome("{\"property\": 3}", &o).message(),
            "worker outcome.property: expected a string, got 3");
  EXPECT_EQ(DecodeOutcome("{\"property\": \"P1\"}", &o).message(),
            "worker outcome: missing required member \"target\"");
  text = good;
  text.replace(text.find("\"tag_counts\":[]"), 15, "\"tag_counts\":[[\"a\"]]");
  EXPECT_EQ(DecodeOutcome(text, &o).message(),
            "worker outcome.tag_counts[0]: expected an array of 2 elements, got [\"a\"]");
  text = good;
  text.replace(text.find("\"cases\":0"), 9, "\"cases\":3000000000");
  EXPECT_EQ(DecodeOutcome(text, &o).message(),
            "worker outcome.cases: expected an integer in [-2147483648, 2147483647], got "
            "3000000000");
}

}  // namespace
}  // namespace ckptspec
