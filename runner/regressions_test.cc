// Replays every kept failure under corpus/regressions/ (regression_case.h) on the reference, and
// checks the file format itself: round trip, named errors.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "runner/regression_case.h"
#include "targets/reference/reference_factory.h"

#ifndef CKPTSPEC_SOURCE_DIR
#error "CKPTSPEC_SOURCE_DIR must name the source tree (set by properties/CMakeLists.txt)"
#endif

namespace ckptspec {
namespace {

namespace fs = std::filesystem;

const TargetFactory& Reference() {
  static const TargetFactory factory = ReferenceTargetFactory();
  return factory;
}

std::vector<fs::path> CorpusFiles() {
  std::vector<fs::path> files;
  const fs::path dir = fs::path(CKPTSPEC_SOURCE_DIR) / "corpus" / "regressions";
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

TEST(Regressions, EveryKeptFailurePassesOnTheReference) {
  const std::vector<fs::path> files = CorpusFiles();
  ASSERT_GE(files.size(), 2u) << "corpus/regressions lost its cases";
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    RegressionCase c;
    const Status parsed = ParseRegressionCase(ReadAll(file), &c);
    ASSERT_TRUE(parsed.ok()) << parsed.ToString();
    EXPECT_EQ(c.name + ".json", file.filename().string()) << "a file is named after its case";
    const Status replay = ReplayRegression(c, Reference());
    EXPECT_TRUE(replay.ok()) << c.property << " on\n  " << DescribeRun(c.run)
                             << "\nfailed: " << replay.ToString();
  }
}

TEST(Regressions, FormatRoundTrips) {
  for (const fs::path& file : CorpusFiles()) {
    SCOPED_TRACE(file.filename().string());
    RegressionCase c, again;
    ASSERT_TRUE(ParseRegressionCase(ReadAll(file), &c).ok());
    const nlohmann::json j = RegressionCaseToJson(c);
    const Status s = RegressionCaseFromJson(j, &again);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(RegressionCaseToJson(again), j);
    EXPECT_EQ(DescribeRun(again.run), DescribeRun(c.run));
  }
}

TEST(Regressions, ErrorsNameTheField) {
  RegressionCase c;
  ASSERT_TRUE(ParseRegressionCase(ReadAll(CorpusFiles().front()), &c).ok());
  nlohmann::json j = RegressionCaseToJson(c);

  nlohmann::json typo = j;
  typo["run"]["modules"][0]["model"]["hiden_size"] = 8;
  Status s = RegressionCaseFromJson(typo, &c);
  EXPECT_EQ(s.message(), "regression: run.modules[0].model: unknown member \"hiden_size\"");

  nlohmann::json type = j;
  type["run"]["modules"][0]["training"]["data"]["shuffle"] = "no";
  s = RegressionCaseFromJson(type, &c);
  EXPECT_EQ(s.message(),
            "regression: run.modules[0].training.data.shuffle: expected a boolean, got \"no\"");

  nlohmann::json value = j;
  value["run"]["modules"][0]["training"]["rerun_mode"] = "sometimes";
  s = RegressionCaseFromJson(value, &c);
  EXPECT_EQ(s.message(),
            "regression: run.modules[0].training.rerun_mode: unknown value \"sometimes\"");

  nlohmann::json layout = j;
  layout["run"]["modules"][0]["tp"] = 3;
  s = RegressionCaseFromJson(layout, &c);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("regression: run.modules[0]: ", 0), 0u) << s.ToString();

  nlohmann::json property = j;
  property["property"] = "P99";
  s = RegressionCaseFromJson(property, &c);
  EXPECT_EQ(s.message(), "regression: property: expected \"P1\" or \"P2\", got \"P99\"");

  nlohmann::json no_run = j;
  no_run.erase("run");
  EXPECT_EQ(RegressionCaseFromJson(no_run, &c).message(),
            "regression: (root): missing required member \"run\"");

  nlohmann::json no_modules = j;
  no_modules["run"]["modules"] = nlohmann::json::array();
  EXPECT_EQ(RegressionCaseFromJson(no_modules, &c).message(),
            "regression: run.modules: expected a non-empty array, got []");

  nlohmann::json negative = j;
  negative["parameters"]["train_after_resume"] = -1;
  EXPECT_EQ(RegressionCaseFromJson(negative, &c).message(),
            "regression: parameters.train_after_resume: expected a non-negative integer, got -1");

  nlohmann::json frozen = j;
  frozen["run"]["modules"][0]["training"]["frozen"] = {"embedding", 3};
  EXPECT_EQ(RegressionCaseFromJson(frozen, &c).message(),
            "regression: run.modules[0].training.frozen[1]: expected a string, got 3");

  nlohmann::json narrow = j;
  narrow["run"]["modules"][0]["model"]["num_layers"] = int64_t{1} << 40;
  EXPECT_EQ(RegressionCaseFromJson(narrow, &c).message(),
            "regression: run.modules[0].model.num_layers: expected an integer in [-2147483648, "
            "2147483647], got 1099511627776");

  EXPECT_EQ(
      ParseRegressionCase("{not json", &c).message(),
      "regression: parse error at byte 3, line 1, column 3: syntax error while parsing object "
      "key - invalid literal; last read: '{no'; expected string literal");
  EXPECT_EQ(ParseRegressionCase(R"({"property": "P1", "property": "P2"})", &c).message(),
            "regression: (root): duplicate key \"property\" at byte 20, line 1, column 20");
}

}  // namespace
}  // namespace ckptspec
