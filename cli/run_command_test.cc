#include "cli/run_command.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "targets/process/process_test_util.h"

namespace ckptspec {
namespace {

TEST(RunCommand, BudgetIsCasesOrTime) {
  Budget b;
  ASSERT_TRUE(ParseBudget("200", &b).ok());
  EXPECT_EQ(b.cases, 200);
  ASSERT_TRUE(ParseBudget("30s", &b).ok());
  EXPECT_EQ(b.seconds, 30);
  ASSERT_TRUE(ParseBudget("2m", &b).ok());
  EXPECT_EQ(b.seconds, 120);
  EXPECT_EQ(ParseBudget("lots", &b).message(),
            "--budget 'lots' is neither a case count (e.g. 200) nor a time (e.g. 30s, 2m)");
  EXPECT_FALSE(ParseBudget("-5", &b).ok());
  EXPECT_FALSE(ParseBudget("1.5", &b).ok());
  EXPECT_FALSE(ParseBudget("", &b).ok());
}

TEST(RunCommand, ReferencePassesAndReportsAreWellFormed) {
  RunOptions o;
  o.properties = "P2";
  o.budget = "10";
  o.quiet = true;
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("reference  pass"), std::string::npos) << out.str();

  PropertyOutcome fail;
  fail.target = "B04";
  fail.property = "P7";
  fail.verdict = Verdict::kFail;
  fail.cases = 3;
  fail.time_to_failure_s = 0.25;
  fail.shrunk_size = 40;
  fail.message = "a <bad> \"thing\"";
  fail.reproduce = "reproduce=abc";
  PropertyOutcome na;
  na.target = "B04";
  na.property = "P14";
  na.verdict = Verdict::kNotApplicable;
  na.message = "no async";
  const std::vector<PropertyOutcome> outcomes = {fail, na};
  EXPECT_NE(MatrixText(outcomes).find("KILLED 0.25s/3c/40b"), std::string::npos) << MatrixText(outcomes);
  const nlohmann::json j = nlohmann::json::parse(OutcomesJson(outcomes, 9));
  EXPECT_EQ(j["seed"], 9);
  EXPECT_EQ(j["outcomes"][0]["verdict"], "FAIL");
  EXPECT_EQ(j["outcomes"][0]["reproduce"], "reproduce=abc");
  EXPECT_EQ(j["outcomes"][1]["verdict"], "n/a");
  const std::string junit = OutcomesJUnit(outcomes);
  EXPECT_NE(junit.find("failures=\"1\" skipped=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("&lt;bad&gt; &quot;thing&quot;"), std::string::npos) << junit;
}

TEST(RunCommand, UnknownNamesAreInvalidArguments) {
  RunOptions o;
  o.targets = {"nonesuch"};
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 2);
  EXPECT_NE(err.str().find("unknown target 'nonesuch' (known: reference, B01, "), std::string::npos) << err.str();
  o.targets = {"reference"};
  o.properties = "P1,P99";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunRunCommand(o, out2, err2), 2);
  EXPECT_NE(err2.str().find("unknown property 'P99'"), std::string::npos);
}

// The built-in adapter judged by expectation files: as expected (exit 0), an unexpected pass and
// an unexpected n/a (exit 1, each named below the matrix).
TEST(RunCommand, AdaptersAreJudgedByTheirExpectations) {
  UseFastTempDir();
  const std::string file = ::testing::TempDir() + "run_command_expectations.json";
  const auto run_with = [&](const std::string& properties, std::string* text) {
    std::ofstream(file) << R"({"format": "ckptspec.expectations", "version": 1, "properties": )"
                        << properties << "}";
    RunOptions o;
    o.adapters = {CKPTSPEC_REFERENCE_ADAPTER};
    o.properties = "P2,P13";
    o.budget = "3";
    o.quiet = true;
    o.expectations = file;
    std::ostringstream out, err;
    const int code = RunRunCommand(o, out, err);
    *text = out.str() + err.str();
    return code;
  };
  std::string text;
  EXPECT_EQ(run_with(R"({"P13": {"expect": "n/a", "reason": "real disk"}})", &text), 0) << text;
  EXPECT_NE(text.find("adapter:ckptspec_reference_adapter  pass"), std::string::npos) << text;
  EXPECT_EQ(run_with(R"({"P2": {"expect": "fail", "reason": "a known bug"}})", &text), 1) << text;
  EXPECT_NE(text.find("UNEXPECTED pass: adapter:ckptspec_reference_adapter P2, expected fail (a known bug)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("UNEXPECTED n/a: adapter:ckptspec_reference_adapter P13, expected pass"),
            std::string::npos) << text;
  EXPECT_EQ(run_with(R"({"P22": {"expect": "pass"}})", &text), 2) << text;
  EXPECT_NE(text.find("properties.P22: no such property"), std::string::npos) << text;
  std::remove(file.c_str());
}

}  // namespace
}  // namespace ckptspec
