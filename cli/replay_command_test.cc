#include "cli/replay_command.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <utility>

#include <rapidcheck.h>
#include <rapidcheck/detail/Configuration.h>

#include "runner/runner.h"
#include "runner/target_registry.h"

namespace ckptspec {
namespace {

// A kill recorded by the runner replays to the same failure from its reproduce string alone.
TEST(ReplayCommand, ARecordedKillFailsAgain) {
  std::vector<TargetFactory> targets;
  ASSERT_TRUE(ResolveTargets("B19", &targets).ok());
  const PropertyOutcome recorded = RunProperty(*FindProperty("P13"), targets.front(), RunParams());
  ASSERT_EQ(recorded.verdict, Verdict::kFail) << DescribeOutcome(recorded);
  std::string target, property;
  ASSERT_TRUE(ParseReproduceKey(recorded.reproduce, &target, &property).ok());
  EXPECT_EQ(target, "B19");
  EXPECT_EQ(property, "P13");

  ReplayOptions o;
  o.reproduce = recorded.reproduce;
  std::ostringstream out, err;
  EXPECT_EQ(RunReplayCommand(o, out, err), 1) << out.str() << err.str();
  EXPECT_NE(out.str().find("B19 P13: FAIL (1 cases"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(recorded.message.substr(0, 40)), std::string::npos) << out.str();
}

TEST(ReplayCommand, BadStringsAreInvalidArguments) {
  ReplayOptions o;
  o.reproduce = "seed=1 reproduce=garbage";
  std::ostringstream out, err;
  EXPECT_EQ(RunReplayCommand(o, out, err), 2);
  EXPECT_NE(err.str().find("ckptspec replay: reproduce string: the reproduce value's base64 ends a "
                           "group with stray bits"),
            std::string::npos)
      << err.str();
  o.reproduce = "seed=1";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunReplayCommand(o, out2, err2), 2);
  EXPECT_NE(err2.str().find("it has no reproduce=... entry"), std::string::npos) << err2.str();
}

// The exit status of `body` run in a child process: a crash there is a signal in the status, a
// failure of the test rather than the end of the test binary. A child that hangs is ended by an
// alarm (a signal too).
int StatusInChild(const std::function<int()>& body) {
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(120);
    std::_Exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

std::string DescribeStatus(int status) {
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

int ReplayInChild(const std::string& reproduce) {
  return StatusInChild([&reproduce] {
    ReplayOptions o;
    o.reproduce = reproduce;
    std::ostringstream out, err;
    return RunReplayCommand(o, out, err);
  });
}

// A recorded failure of a cheap case (B08 is killed by P4 in its first case).
std::string RecordedReproduce() {
  static const std::string recorded = [] {
    std::vector<TargetFactory> targets;
    EXPECT_TRUE(ResolveTargets("B08", &targets).ok());
    const PropertyOutcome outcome = RunProperty(*FindProperty("P4"), targets.front(), RunParams());
    EXPECT_EQ(outcome.verdict, Verdict::kFail) << DescribeOutcome(outcome);
    return outcome.reproduce;
  }();
  return recorded;
}

// The strings that crashed replay before it checked them: a Random that has drawn numbers (RapidCheck's
// Random::split asserted) and a negative size (the layout generator indexed out of bounds). Written
// by RapidCheck's own writer, from a recorded case.
TEST(ReplayCommand, CasesNoRunRecordsAreUsageErrors) {
  const std::string recorded = RecordedReproduce();
  rc::detail::Configuration config;
  ASSERT_EQ(DescribeStatus(ReplayInChild(recorded)), "exit 1")
      << "the recorded failure fails again";
  config.testParams.seed = 1;
  rc::detail::Reproduce drawn;
  drawn.random = rc::Random(5);
  drawn.random.next();
  drawn.size = 3;
  rc::detail::Reproduce negative;
  negative.random = rc::Random(5).split();
  negative.size = -5;
  for (const auto& [reproduce, message] : {std::pair{drawn, "the Random's counter is 1"},
                                           std::pair{negative, "the case's size is -5"}}) {
    config.reproduce = {{"B08/P4", reproduce}};
    std::ostringstream text;
    text << config;
    ASSERT_EQ(DescribeStatus(ReplayInChild(text.str())), "exit 2") << text.str();
    // It does not crash: its message, from a run in this process.
    ReplayOptions o;
    o.reproduce = text.str();
    std::ostringstream out, err;
    EXPECT_EQ(RunReplayCommand(o, out, err), 2);
    EXPECT_NE(err.str().find(message), std::string::npos) << err.str();
  }
}

// A recorded string with 1 to 4 characters changed, 300 ways (deterministically): each variant
// replays to an exit code (0 it passes, 1 it fails, 2 it does not decode), never a signal.
TEST(ReplayCommand, DamagedReproduceStringsNeverCrash) {
  const std::string recorded = RecordedReproduce();
  const size_t value_at = recorded.find("reproduce=") + 10;
  const size_t value_end = recorded.find(' ', value_at);
  ASSERT_NE(value_end, std::string::npos) << recorded;
  const std::string replacements =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+_ =\"'\\-/.";
  std::mt19937 random(13);
  const auto below = [&random](size_t n) { return static_cast<size_t>(random() % n); };
  std::map<int, int> exits;
  for (int variant = 0; variant < 300; ++variant) {
    std::string damaged = recorded;
    const int changes = 1 + variant % 4;
    for (int c = 0; c < changes; ++c) {
      // Three changes in four fall in the base64 value, where the case is.
      const size_t at =
          below(4) == 0 ? below(damaged.size()) : value_at + below(value_end - value_at);
      damaged[at] = replacements[below(replacements.size())];
    }
    const int status = ReplayInChild(damaged);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) <= 2)
        << "variant " << variant << ": " << DescribeStatus(status) << " replaying\n"
        << damaged;
    ++exits[WEXITSTATUS(status)];
  }
  // Most variants are refused, and many still decode and replay (a changed Random key is a valid
  // other case): the test covers both paths.
  EXPECT_GT(exits[2], 50);
  EXPECT_GT(exits[0] + exits[1], 50);
  std::cout << "exit 0: " << exits[0] << ", exit 1: " << exits[1] << ", exit 2: " << exits[2]
            << "\n";
}

}  // namespace
}  // namespace ckptspec
