// The process tree against real processes: a shell and its child, which holds a known amount of
// memory.
#include "targets/process/process_tree.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

constexpr uint64_t kHeld = 48u << 20;

// Starts `sh -c script` in a process group of its own; the group is killed and reaped by Stop.
pid_t StartShell(const char* script) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

void Stop(pid_t pid) {
  kill(-pid, SIGKILL);
  (void)waitpid(pid, nullptr, 0);
}

// Polls until the tree below `pid` holds at least `bytes`, for up to 10 seconds; the last reading.
std::optional<uint64_t> WaitForTreeBytes(pid_t pid, uint64_t bytes) {
  std::optional<uint64_t> read;
  for (int i = 0; i < 1000; ++i) {
    read = ResidentTreeBytes(pid);
    if (read && *read >= bytes) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return read;
}

bool Lists(const std::optional<std::vector<pid_t>>& pids, pid_t pid) {
  return pids && std::find(pids->begin(), pids->end(), pid) != pids->end();
}

TEST(ChildPids, ListsAChildAndItsChild) {
  const pid_t outer = StartShell("sleep 60; true");
  ASSERT_GT(outer, 0);
  EXPECT_TRUE(Lists(ChildPids(getpid()), outer));
  std::optional<std::vector<pid_t>> below;
  for (int i = 0; i < 1000 && !(below && below->size() == 1); ++i) {
    below = ChildPids(outer);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Stop(outer);
  ASSERT_TRUE(below.has_value());
  EXPECT_EQ(below->size(), 1u) << "the shell's sleep";
  EXPECT_FALSE(Lists(ChildPids(getpid()), outer)) << "reaped";
}

TEST(ChildPids, AProcessThatIsGoneHasNone) {
  const pid_t pid = StartShell("exit 0");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  const std::optional<std::vector<pid_t>> none = ChildPids(pid);
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(ResidentTreeBytes, ThisProcessHoldsSomething) {
  const std::optional<uint64_t> self = ResidentTreeBytes(getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_GT(*self, 4096u);
}

TEST(ResidentTreeBytes, CountsWhatAGrandchildHolds) {
  // The outer shell starts an inner one (it does not exec it: a second command follows), which
  // holds 48 MiB of 'a's in a variable and sleeps; the outer one holds almost nothing.
  const pid_t outer =
      StartShell("sh -c 'x=$(head -c 50331648 /dev/zero | tr \"\\000\" a); sleep 60'; true");
  ASSERT_GT(outer, 0);
  const std::optional<uint64_t> tree = WaitForTreeBytes(outer, kHeld);
  Stop(outer);
  ASSERT_TRUE(tree.has_value());
  EXPECT_GE(*tree, kHeld) << "the inner shell's 48 MiB are below the outer shell";
}

TEST(ResidentTreeBytes, AProcessThatIsGoneCannotBeRead) {
  const pid_t pid = StartShell("exit 0");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  EXPECT_FALSE(ResidentTreeBytes(pid).has_value());
}

}  // namespace
}  // namespace ckptspec
