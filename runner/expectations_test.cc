#include "runner/expectations.h"

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

PropertyOutcome Outcome(const std::string& property, Verdict verdict) {
  PropertyOutcome o;
  o.property = property;
  o.target = "t";
  o.verdict = verdict;
  return o;
}

TEST(Expectations, ParseTheFormAndRejectWhatIsWrongByName) {
  Expectations x;
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P13": {"expect": "n/a", "reason": "real disk"},
                     "P3": {"expect": "fail", "reason": "issue 12"}}})",
                                "x.json", &x)
                  .ok());
  EXPECT_EQ(x.For("P13").expected, Expected::kNotApplicable);
  EXPECT_EQ(x.For("P3").reason, "issue 12");
  EXPECT_EQ(x.For("P1").expected, Expected::kPass);

  const auto error = [](const std::string& text) {
    Expectations e;
    return ParseExpectations(text, "x.json", &e).message();
  };
  EXPECT_EQ(
      error("{"),
      "x.json: parse error at byte 2, line 1, column 2: syntax error while parsing object key - "
      "unexpected end of input; expected string literal");
  // A property twice is refused, not read as the last one.
  EXPECT_EQ(error(R"({"format": "ckptspec.expectations", "version": 1, "properties": {
      "P3": {"expect": "fail", "reason": "r"}, "P3": {"expect": "pass"}}})"),
            "x.json: properties: duplicate key \"P3\" at byte 114, line 2, column 48");
  EXPECT_EQ(error(R"({"format": "other", "version": 1})"),
            "x.json: format: expected \"ckptspec.expectations\", got \"other\"");
  EXPECT_EQ(
      error(
          R"({"format": "ckptspec.expectations", "version": 1, "properties": {"P99": {"expect": "pass"}}})"),
      "x.json: properties.P99: no such property");
  EXPECT_EQ(
      error(
          R"({"format": "ckptspec.expectations", "version": 1, "properties": {"P3": {"expect": "fail"}}})"),
      "x.json: properties.P3: an expected \"fail\" needs a non-empty \"reason\"");
  EXPECT_EQ(
      error(
          R"({"format": "ckptspec.expectations", "version": 1, "properties": {"P3": {"expect": "flaky", "reason": "r"}}})"),
      "x.json: properties.P3.expect: unknown value \"flaky\"");
  EXPECT_EQ(
      error(
          R"({"format": "ckptspec.expectations", "version": 1, "properties": {"P3": {"expect": "pass", "why": "r"}}})"),
      "x.json: properties.P3: unknown member \"why\"");
  EXPECT_EQ(error(R"({"format": "ckptspec.expectations", "version": 1, "target": "x"})"),
            "x.json: (root): unknown member \"target\"");
}

TEST(Expectations, KnownFindingsAreReadAndInheritedBaseFirst) {
  Expectations base, own;
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "known": [{"finding": "F9", "match": "a view of a leaf", "reason": "upstream"}]})",
                                "base.json", &base)
                  .ok());
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "extends": "base.json",
      "known": [{"finding": "F10", "match": "Caller", "reason": "fixed in 0.19"}]})",
                                "own.json", &own)
                  .ok());
  ASSERT_TRUE(ApplyBase(base, &own).ok());
  ASSERT_EQ(own.known.size(), 2u);
  EXPECT_EQ(own.known[0].finding, "F9");
  EXPECT_EQ(own.known[1].match, "Caller");
  EXPECT_EQ(own.known_reasons[1], "fixed in 0.19");
  Expectations e;
  EXPECT_EQ(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "known": [{"finding": "F9", "match": ""  , "reason": "r"}]})",
                              "x.json", &e)
                .message(),
            "x.json: known[0]: \"finding\", \"match\" and \"reason\" must not be empty");
  EXPECT_EQ(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "known": [{"finding": "F9", "match": "x"}]})",
                              "x.json", &e)
                .message(),
            "x.json: known[0]: missing required member \"reason\"");
}

TEST(Expectations, ApplyBaseKeepsTheFilesOwnEntriesAndTakesTheOthers) {
  const char* kBase = R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P13": {"expect": "n/a", "reason": "real disk"},
                     "P7": {"expect": "fail", "reason": "cached plan"}}})";
  Expectations base, row;
  ASSERT_TRUE(ParseExpectations(kBase, "base.json", &base).ok());
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "extends": "base.json", "properties": {"P15": {"expect": "fail", "reason": "strides"},
                                             "P7": {"expect": "pass"}}})",
                                "row.json", &row)
                  .ok());
  EXPECT_EQ(row.extends, "base.json");
  ASSERT_TRUE(ApplyBase(base, &row).ok());
  EXPECT_EQ(row.source, "row.json");
  EXPECT_EQ(row.For("P13").expected, Expected::kNotApplicable);  // from the base
  EXPECT_EQ(row.For("P13").reason, "real disk");
  EXPECT_EQ(row.For("P15").reason, "strides");         // the row's own
  EXPECT_EQ(row.For("P7").expected, Expected::kPass);  // the row's, over the base's
  EXPECT_EQ(row.For("P1").expected, Expected::kPass);

  // "extends" names a file beside, never a path (chains of bases: cli/expectations_file_test.cc).
  const auto error = [](const std::string& extends) {
    Expectations e;
    return ParseExpectations(
               R"({"format": "ckptspec.expectations", "version": 1, "extends": )" + extends + "}",
               "x.json", &e)
        .message();
  };
  EXPECT_EQ(
      error(R"("../base.json")"),
      "x.json: extends: expected the name of a file in the same directory, got \"../base.json\"");
  EXPECT_EQ(error(R"("..")"),
            "x.json: extends: expected the name of a file in the same directory, got \"..\"");
  EXPECT_EQ(error("7"), "x.json: extends: expected a string, got 7");
}

TEST(Expectations, JudgeEveryCombination) {
  const Expectation pass{Expected::kPass, ""}, fail{Expected::kFail, "r"},
      na{Expected::kNotApplicable, "r"};
  struct Row {
    const Expectation& expected;
    Verdict verdict;
    bool matches;
    const char* cell;
  };
  const Row rows[] = {
      {pass, Verdict::kPass, true, "pass"},
      {pass, Verdict::kFail, false, "UNEXPECTED FAIL"},
      {pass, Verdict::kError, false, "UNEXPECTED FAIL"},
      {pass, Verdict::kNotApplicable, false, "UNEXPECTED n/a"},
      {fail, Verdict::kFail, true, "xfail"},
      {fail, Verdict::kGaveUp, true, "xfail"},
      {fail, Verdict::kPass, false, "UNEXPECTED pass"},
      {fail, Verdict::kNotApplicable, false, "UNEXPECTED n/a"},
      {na, Verdict::kNotApplicable, true, "n/a"},
      {na, Verdict::kPass, false, "UNEXPECTED pass"},
      {na, Verdict::kFail, false, "UNEXPECTED FAIL"},
  };
  for (const Row& row : rows) {
    const Judgement j = Judge(row.expected, Outcome("P1", row.verdict));
    EXPECT_EQ(j.matches, row.matches)
        << ExpectedName(row.expected.expected) << " " << VerdictName(row.verdict);
    EXPECT_EQ(j.cell, row.cell) << ExpectedName(row.expected.expected) << " "
                                << VerdictName(row.verdict);
  }
}

// An expected failure with a match counts only when its message holds the match: a hang, or a
// failure for another reason, is unexpected.
TEST(Expectations, AnExpectedFailureWithAMatchNeverAbsorbsAnotherFailure) {
  Expectations e;
  ASSERT_TRUE(ParseExpectations(R"({"format": "ckptspec.expectations", "version": 1,
      "properties": {"P7": {"expect": "fail", "match": "from model not in state dict",
                            "reason": "F4"}}})",
                                "f.json", &e)
                  .ok());
  const Expectation& x = e.For("P7");
  EXPECT_EQ(x.match, "from model not in state dict");
  PropertyOutcome o = Outcome("P7", Verdict::kFail);
  o.message =
      "save of iteration 1 succeeded but does not resume: KeyError: 'x from model not in "
      "state dict'";
  EXPECT_EQ(Judge(x, o).cell, "xfail");
  o.message = "save of iteration 0: adapter rank 3: timed out: no reply within 300 s during save";
  const Judgement hang = Judge(x, o);
  EXPECT_FALSE(hang.matches);
  EXPECT_EQ(hang.cell, "UNEXPECTED FAIL for another reason");
  EXPECT_EQ(hang.symbol, 'F');
  o.verdict = Verdict::kError;
  EXPECT_FALSE(Judge(x, o).matches);

  for (const char* bad : {R"({"P7": {"expect": "n/a", "match": "x", "reason": "r"}})",
                          R"({"P7": {"expect": "fail", "match": "", "reason": "r"}})",
                          R"({"P7": {"expect": "fail", "match": 3, "reason": "r"}})"}) {
    Expectations ignored;
    const Status s = ParseExpectations(
        std::string(R"({"format": "ckptspec.expectations", "version": 1, "properties": )") + bad +
            "}",
        "f.json", &ignored);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("f.json: properties.P7.match: "), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace ckptspec
