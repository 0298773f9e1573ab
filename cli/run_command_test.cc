#include "cli/run_command.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/parse_error_test_util.h"
#include "cli/replay_command.h"
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
  ASSERT_TRUE(ParseBudget("1000000000", &b).ok());
  EXPECT_EQ(b.cases, 1000000000);
  ASSERT_TRUE(ParseBudget("604800s", &b).ok());
}

// Out of range is refused, never clamped: the message names the flag, the value and both ranges.
TEST(RunCommand, BudgetOutOfRangeIsRefused) {
  Budget b;
  EXPECT_EQ(
      ParseBudget("1e99", &b).message(),
      "--budget '1e99' is neither a case count (1 to 1000000000) nor a time (seconds: 0.001 to "
      "604800 with 's', minutes: 0.001 to 10080 with 'm')");
  for (const char* text : {"lots", "-5", "0", "1.5", "", "1000000001", "99999999999999999999",
                           "1e400s", "nans", "infs", "0s", "604801s", "10081m", "-1m", "s", "m"}) {
    EXPECT_EQ(ParseBudget(text, &b).code(), Status::Code::kInvalidArgument) << text;
    EXPECT_EQ(b.cases, 0) << text;
    EXPECT_EQ(b.seconds, 0) << text;
  }
}

// --coverage prints the classes of the properties that ran, the same whether the tag counts come
// from worker processes or from this one.
TEST(RunCommand, CoverageTableIsTheSameForAnyJobs) {
  auto run = [](int jobs) {
    RunOptions o;
    o.targets = {"reference"};
    o.properties = "P1,P17";
    o.budget = "20";
    o.quiet = true;
    o.coverage = true;
    o.jobs = jobs;
    std::ostringstream out, err;
    EXPECT_EQ(RunRunCommand(o, out, err), 0) << err.str();
    return out.str();
  };
  const std::string serial = run(1);
  const size_t table = serial.find("scenario classes");
  ASSERT_NE(table, std::string::npos) << serial;
  EXPECT_NE(serial.find(" %  heterogeneous\n", table), std::string::npos) << serial;
  EXPECT_NE(serial.find("  P17 ", table), std::string::npos) << serial;
  EXPECT_EQ(serial.find("  P3 ", table), std::string::npos) << serial;  // not run
  EXPECT_EQ(run(2), serial);
}

// The numeric flags are checked while the command line is parsed: exit 2 before anything runs.
TEST(RunCommand, NumericFlagsOutOfRangeAreParseErrors) {
  const auto parse_error = [](const std::string& args) {
    CLI::App app;
    RunOptions o;
    AddRunCommand(app, &o);
    return ParseErrorOf(app, "run " + args);
  };
  EXPECT_EQ(parse_error("--seed 99999999999999999999"),
            "--seed '99999999999999999999' is out of range (accepted: 0 to 18446744073709551615)");
  EXPECT_EQ(parse_error("--seed -1"),
            "--seed '-1' is out of range (accepted: 0 to 18446744073709551615)");
  EXPECT_NE(parse_error("--budget 1e99").find("--budget '1e99' is neither a case count"),
            std::string::npos);
  EXPECT_EQ(parse_error("--adapter-timeout 0"),
            "--adapter-timeout '0' is out of range (accepted: 0.001 to 86400)");
  EXPECT_EQ(parse_error("--adapter-timeout nan"),
            "--adapter-timeout 'nan' is not a number (accepted: 0.001 to 86400)");
  EXPECT_EQ(parse_error("--seed 18446744073709551615 --budget 2m --adapter-timeout 0.5"), "parsed");
}

// A report path that cannot be written is found before the run (nothing ran: no matrix), and a
// full disk after it is exit 2 naming the flag and the path; the other report is still written.
TEST(RunCommand, ReportPathsAreCheckedFirstAndWriteErrorsAreExit2) {
  RunOptions o;
  o.targets = {"reference"};
  o.properties = "P2";
  o.budget = "2";
  o.quiet = true;
  o.json_out = "/nonexistent/dir/x.json";
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 2);
  EXPECT_EQ(err.str(),
            "ckptspec run: --json '/nonexistent/dir/x.json': cannot open for writing: No such file "
            "or directory\n");
  EXPECT_EQ(out.str(), "") << "the run started before the report path was checked";

  o.json_out = ::testing::TempDir() + "run_command_report.json";
  o.junit_out = "/dev/full";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunRunCommand(o, out2, err2), 2);
  EXPECT_EQ(err2.str(),
            "ckptspec run: --junit '/dev/full': cannot write: No space left on device\n");
  EXPECT_NE(out2.str().find("reference  clean    ."), std::string::npos) << out2.str();
  std::ifstream json(o.json_out);
  EXPECT_EQ(nlohmann::json::parse(json)["format"], "ckptspec.run");
  std::remove(o.json_out.c_str());
}

// Input files that are not regular files are refused before they are opened: a FIFO would block.
TEST(RunCommand, InputsThatAreNotRegularFilesAreRefused) {
  const std::string fifo = ::testing::TempDir() + "run_command_fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  alarm(60);  // were the FIFO opened, the test would hang: end it instead
  RunOptions o;
  o.targets = {"reference"};
  o.expectations = fifo;
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 2);
  EXPECT_EQ(err.str(), "ckptspec run: --expectations '" + fifo + "': a FIFO, not a regular file\n");
  o.expectations.clear();
  o.plugins = {fifo};
  std::ostringstream out2, err2;
  EXPECT_EQ(RunRunCommand(o, out2, err2), 2);
  EXPECT_EQ(err2.str(), "ckptspec run: --plugin '" + fifo + "': a FIFO, not a regular file\n");
  alarm(0);
  o.plugins = {"/dev/zero"};
  std::ostringstream out3, err3;
  EXPECT_EQ(RunRunCommand(o, out3, err3), 2);
  EXPECT_EQ(err3.str(),
            "ckptspec run: --plugin '/dev/zero': a character device, not a regular file\n");
  std::remove(fifo.c_str());
}

TEST(RunCommand, ReferencePasses) {
  RunOptions o;
  o.targets = {"reference"};
  o.properties = "P2";
  o.budget = "10";
  o.quiet = true;
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("reference  clean    .\n"), std::string::npos) << out.str();
}

// A mutant killed by the selected properties meets its expectation (exit 0); one they miss
// survives (exit 1, named).
TEST(RunCommand, ExitCodeFollowsTheMutantsExpectation) {
  RunOptions o;
  o.quiet = true;
  o.targets = {"B19"};
  o.properties = "P13";
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("\n1 kill of mutants not described here: --details prints each"),
            std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("reproduce:"), std::string::npos) << out.str();
  o.details = true;
  std::ostringstream out_details, err_details;
  EXPECT_EQ(RunRunCommand(o, out_details, err_details), 0) << err_details.str();
  EXPECT_NE(out_details.str().find("B19 P13: FAIL"), std::string::npos) << out_details.str();
  EXPECT_NE(out_details.str().find("reproduce: RC_PARAMS="), std::string::npos)
      << out_details.str();
  o.details = false;
  o.properties = "P5";
  o.budget = "5";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunRunCommand(o, out2, err2), 1) << out2.str();
  EXPECT_NE(out2.str().find("B19: SURVIVED every selected property"), std::string::npos)
      << out2.str();
}

// Replaces every number of seconds in a report ("0.0929274 s", "after 0.012485 s", "0.11s/8c")
// by "T": the only part of a report that differs between two runs of the same seed.
std::string WithoutTimes(const std::string& report) {
  const auto digit = [&](size_t k) {
    return k < report.size() && isdigit(static_cast<unsigned char>(report[k]));
  };
  std::string out;
  size_t i = 0;
  while (i < report.size()) {
    if (!digit(i) ||
        (i > 0 && (isalnum(static_cast<unsigned char>(report[i - 1])) || report[i - 1] == '.'))) {
      out += report[i++];
      continue;
    }
    size_t j = i;
    while (digit(j) ||
           (j < report.size() && (report[j] == '.' || report[j] == 'e' || report[j] == '-'))) {
      ++j;
    }
    size_t unit = report.compare(j, 1, " ") == 0 ? j + 1 : j;
    const bool seconds =
        report.compare(unit, 1, "s") == 0 &&
        (unit + 1 == report.size() || !isalpha(static_cast<unsigned char>(report[unit + 1])));
    if (seconds) {
      out += "T";
      i = unit + 1;
    } else {
      out.append(report, i, j - i);
      i = j;
    }
  }
  return out;
}

// --jobs runs the pairs in worker processes; the report is the serial one (up to the seconds),
// failures, counterexamples and reproduce strings included.
TEST(RunCommand, JobsGiveTheSerialReport) {
  RunOptions o;
  o.quiet = true;
  o.details = true;
  o.targets = {"reference", "B04", "B09", "B15", "B19"};
  o.properties = "P1,P2,P7,P13,P14";
  o.budget = "10";
  o.jobs = 1;
  std::ostringstream serial, serial_err;
  const int serial_code = RunRunCommand(o, serial, serial_err);
  EXPECT_EQ(serial_code, 0) << serial.str() << serial_err.str();
  EXPECT_NE(serial.str().find("B19"), std::string::npos);
  for (int jobs : {2, 5}) {
    o.jobs = jobs;
    std::ostringstream parallel, parallel_err;
    EXPECT_EQ(RunRunCommand(o, parallel, parallel_err), serial_code) << jobs;
    EXPECT_EQ(WithoutTimes(parallel.str()), WithoutTimes(serial.str())) << jobs;
  }
}

TEST(RunCommand, UnknownNamesAreInvalidArguments) {
  RunOptions o;
  o.targets = {"nonesuch"};
  std::ostringstream out, err;
  EXPECT_EQ(RunRunCommand(o, out, err), 2);
  EXPECT_NE(
      err.str().find("unknown target 'nonesuch' (known: reference, reference-per-writer, B01, "),
      std::string::npos)
      << err.str();
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
    o.properties = "P2,P17";
    o.budget = "3";
    o.quiet = true;
    o.expectations = file;
    std::ostringstream out, err;
    const int code = RunRunCommand(o, out, err);
    *text = out.str() + err.str();
    return code;
  };
  std::string text;
  EXPECT_EQ(run_with(R"({"P17": {"expect": "n/a", "reason": "real disk"}})", &text), 0) << text;
  EXPECT_NE(text.find("adapter:ckptspec-reference  as expected  .   -\n"), std::string::npos)
      << text;
  EXPECT_EQ(run_with(R"({"P2": {"expect": "fail", "reason": "a known bug"}})", &text), 1) << text;
  EXPECT_NE(text.find("adapter:ckptspec-reference  UNEXPECTED  P   N\n"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("UNEXPECTED pass: adapter:ckptspec-reference P2, expected fail (a known bug)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("UNEXPECTED n/a: adapter:ckptspec-reference P17, expected pass"),
            std::string::npos)
      << text;
  EXPECT_EQ(run_with(R"({"P22": {"expect": "pass"}})", &text), 2) << text;
  EXPECT_NE(text.find("properties.P22: no such property"), std::string::npos) << text;
  std::remove(file.c_str());
}

// A failure through an adapter ends with the one command that replays it against the same
// adapter; that command, run, fails again; the string without --adapter is refused with a message
// that says what to add.
TEST(RunCommand, AnAdapterFailureNamesTheCommandThatReplaysIt) {
  UseFastTempDir();
  const std::string adapter =
      std::string(CKPTSPEC_REFERENCE_ADAPTER) + " --mutant B28 --deferred-async";
  RunOptions o;
  o.adapters = {adapter};
  o.properties = "P20";
  o.quiet = true;
  std::ostringstream out, err;
  ASSERT_EQ(RunRunCommand(o, out, err), 1) << out.str() << err.str();
  const std::string text = out.str();
  const std::string hint =
      "\nreplay a failure of adapter:ckptspec-reference, one case:\n  P20: "
      "ckptspec replay --adapter '" +
      adapter + "' --adapter-timeout 60 '";
  const size_t at = text.find(hint);
  ASSERT_NE(at, std::string::npos) << text;
  const size_t from = at + hint.size(), to = text.find('\'', from);
  ASSERT_NE(to, std::string::npos) << text;
  ReplayOptions replay;
  replay.reproduce = text.substr(from, to - from);
  replay.adapter = adapter;
  std::ostringstream replay_out, replay_err;
  EXPECT_EQ(RunReplayCommand(replay, replay_out, replay_err), 1) << replay_err.str();
  EXPECT_NE(replay_out.str().find("adapter:ckptspec-reference P20: FAIL (1 cases"),
            std::string::npos)
      << replay_out.str();
  // The same string against the same target name without the defect: the case passes now.
  replay.adapter = CKPTSPEC_REFERENCE_ADAPTER;
  std::ostringstream fixed_out, fixed_err;
  EXPECT_EQ(RunReplayCommand(replay, fixed_out, fixed_err), 0) << fixed_err.str();
  EXPECT_NE(fixed_out.str().find("adapter:ckptspec-reference P20: pass (1 cases"),
            std::string::npos)
      << fixed_out.str();
  replay.adapter.clear();
  std::ostringstream bare_out, bare_err;
  EXPECT_EQ(RunReplayCommand(replay, bare_out, bare_err), 2);
  EXPECT_EQ(bare_err.str(),
            "ckptspec replay: the string was recorded against the adapter target "
            "'adapter:ckptspec-reference': pass the adapter's command as `ckptspec run` had it, "
            "with --adapter CMD\n");
}

}  // namespace
}  // namespace ckptspec
