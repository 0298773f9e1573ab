// What the registry guarantees when the process that started adapter ranks ends without running
// any code of its own (SIGKILL), and on each termination signal it catches: no rank process, and
// none of what the ranks started in their groups, outlives it.
#include "targets/process/cleanup_registry.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/env.h"
#include "targets/process/process_test_util.h"
#include "targets/process/rank_watchdog.h"
#include "targets/process/subprocess.h"

namespace ckptspec {
namespace {

// A rank that starts a process of its own in its group, then waits: both sleep for ten minutes.
const char kSleepingRank[] = "sleep 600 & wait";

// Forks a harness process that runs `before`, starts `ranks` sleeping ranks marked with `mark`
// (in their environment, which what they start inherits), runs `after`, then waits for a signal.
// Returns its pid once `after` has run; *forked is what `after` returned (in the harness), a pid
// or 0.
template <typename Before, typename After>
pid_t StartHarness(const std::string& mark, int ranks, Before before, After after, pid_t* forked) {
  int ready[2];
  EXPECT_EQ(pipe(ready), 0);
  const pid_t harness = fork();
  if (harness == 0) {
    close(ready[0]);
    before();
    std::vector<std::unique_ptr<Subprocess>> started;
    for (int r = 0; r < ranks; ++r) {
      started.push_back(std::make_unique<Subprocess>());
      if (!started.back()->Start(kSleepingRank, {mark}).ok()) _exit(90);
    }
    const pid_t child = after();
    (void)!write(ready[1], &child, sizeof(child));
    for (;;) pause();
  }
  close(ready[1]);
  EXPECT_EQ(read(ready[0], forked, sizeof(*forked)), static_cast<ssize_t>(sizeof(*forked)))
      << "the harness did not start its ranks";
  close(ready[0]);
  return harness;
}

// The harness is killed outright: its ranks and their children end all the same, even though a
// child it forked (which inherited its memory, not its watchdog's end) lives on.
TEST(HarnessRegistry, RanksEndWhenTheProcessThatStartedThemIsKilled) {
  BecomeSubreaper();
  const std::string mark = "CKPTSPEC_TEST_MARK=registry-sigkill-" + std::to_string(getpid());
  pid_t forked = 0;
  const pid_t harness = StartHarness(
      mark, 3, [] {},
      [] {
        const pid_t child = fork();
        if (child == 0) {
          for (;;) pause();
        }
        return child;
      },
      &forked);
  KillAtScopeEnd forked_killed(forked);  // once the harness is gone, a child of this process
  KillAtScopeEnd harness_killed(harness);
  ASSERT_TRUE(WaitForMarked(mark, 6, 10)) << "3 ranks and their sleeps";
  ASSERT_GT(forked, 0);
  ASSERT_EQ(kill(harness, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(harness, &status, 0), harness);
  const std::vector<pid_t> left = WaitForMarkedToEnd(mark, 5);
  EXPECT_TRUE(left.empty()) << left.size() << " processes outlived their harness by 5 s";
  EXPECT_EQ(kill(forked, 0), 0) << "the harness's forked child runs on";
  kill(forked, SIGKILL);
  EXPECT_EQ(waitpid(forked, &status, 0), forked);  // reparented to this subreaper
  ReapEndedChildren();                             // the watchdog
}

// The watchdog is killed (anyone with the user's rights can): the next rank started starts a
// fresh one, told of every group, so the rank started before it ends with the harness too.
TEST(HarnessRegistry, AKilledWatchdogIsReplacedAtTheNextStart) {
  BecomeSubreaper();
  const std::string mark = "CKPTSPEC_TEST_MARK=registry-watchdog-" + std::to_string(getpid());
  pid_t first_watchdog = 0;
  const pid_t harness = StartHarness(
      mark, 1, [] {},
      [&] {
        const pid_t watchdog = WatchdogPid();  // the harness has one thread: no lock needed
        kill(watchdog, SIGKILL);
        waitpid(watchdog, nullptr, 0);
        Subprocess* second = new Subprocess();  // runs until the harness is killed
        if (!second->Start(kSleepingRank, {mark}).ok()) _exit(91);
        return watchdog;
      },
      &first_watchdog);
  KillAtScopeEnd harness_killed(harness);
  ASSERT_TRUE(WaitForMarked(mark, 4, 10)) << "2 ranks and their sleeps";
  ASSERT_GT(first_watchdog, 0);
  ASSERT_EQ(kill(harness, SIGKILL), 0);
  ASSERT_EQ(waitpid(harness, nullptr, 0), harness);
  const std::vector<pid_t> left = WaitForMarkedToEnd(mark, 5);
  EXPECT_TRUE(left.empty()) << left.size() << " processes outlived their harness by 5 s";
  ReapEndedChildren();  // the second watchdog
}

// SIGQUIT (Ctrl-\) cleans up as SIGINT and SIGTERM do: the ranks end, the registered directories
// are removed, and the harness ends by SIGQUIT.
TEST(HarnessRegistry, SigquitEndsTheRanksAndRemovesTheDirectories) {
  BecomeSubreaper();
  std::string dir = "/tmp/ckptspec-registry-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string mark = "CKPTSPEC_TEST_MARK=registry-sigquit-" + std::to_string(getpid());
  pid_t forked = 0;
  const pid_t harness = StartHarness(
      mark, 2,
      [] {
        const rlimit no_core{0, 0};
        setrlimit(RLIMIT_CORE, &no_core);  // SIGQUIT's default action dumps core
        InstallTerminationCleanup();
      },
      [&] {
        RegisterTempDir(dir);
        return pid_t{0};
      },
      &forked);
  KillAtScopeEnd harness_killed(harness);
  ASSERT_TRUE(WaitForMarked(mark, 4, 10)) << "2 ranks and their sleeps";
  ASSERT_EQ(kill(harness, SIGQUIT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(harness, &status, 0), harness);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGQUIT) << "wait status " << status;
  const std::vector<pid_t> left = WaitForMarkedToEnd(mark, 5);
  EXPECT_TRUE(left.empty()) << left.size() << " processes outlived their harness by 5 s";
  const bool removed = access(dir.c_str(), F_OK) != 0;
  EXPECT_TRUE(removed) << dir << " is still there";
  if (!removed) (void)Env::Posix()->RemoveTree(dir);
}

}  // namespace
}  // namespace ckptspec
