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
  EXPECT_EQ(DecodeOutcome("[1]", &o).message(), "a worker's outcome is not a JSON object");
  EXPECT_EQ(DecodeOutcome("not json", &o).code(), Status::Code::kCorruption);
  std::string text = EncodeOutcome(PropertyOutcome());
  text.replace(text.find("\"verdict\":4"), 11, "\"verdict\":9");
  EXPECT_EQ(DecodeOutcome(text, &o).message(), "a worker's outcome has verdict 9");
  EXPECT_NE(DecodeOutcome("{\"property\": 3}", &o).message().find("does not decode"),
            std::string::npos);
}

}  // namespace
}  // namespace ckptspec
