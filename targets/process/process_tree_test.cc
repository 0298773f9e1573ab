// The process tree against real processes: a shell and its child, which holds a known amount of
// memory.
#include "targets/process/process_tree.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "targets/process/subprocess.h"

namespace ckptspec {
namespace {

constexpr uint64_t kHeld = 48u << 20;

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
  Subprocess shell;  // sh -c in a process group of its own, killed and reaped by Kill()
  ASSERT_TRUE(shell.Start("sleep 60; true", {}).ok());
  const pid_t outer = shell.pid();
  EXPECT_TRUE(Lists(ChildPids(getpid()), outer));
  std::optional<std::vector<pid_t>> below;
  for (int i = 0; i < 1000 && !(below && below->size() == 1); ++i) {
    below = ChildPids(outer);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  shell.Kill();
  ASSERT_TRUE(below.has_value());
  EXPECT_EQ(below->size(), 1u) << "the shell's sleep";
  EXPECT_FALSE(Lists(ChildPids(getpid()), outer)) << "reaped";
}

TEST(ChildPids, AProcessThatIsGoneHasNone) {
  Subprocess shell;
  ASSERT_TRUE(shell.Start("exit 0", {}).ok());
  ASSERT_TRUE(shell.WaitFor(10)) << "reaped";
  const pid_t pid = shell.pid();
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
  Subprocess shell;
  ASSERT_TRUE(
      shell.Start("sh -c 'x=$(head -c 50331648 /dev/zero | tr \"\\000\" a); sleep 60'; true", {})
          .ok());
  const std::optional<uint64_t> tree = WaitForTreeBytes(shell.pid(), kHeld);
  shell.Kill();
  ASSERT_TRUE(tree.has_value());
  EXPECT_GE(*tree, kHeld) << "the inner shell's 48 MiB are below the outer shell";
}

TEST(ResidentTreeBytes, AProcessThatIsGoneCannotBeRead) {
  Subprocess shell;
  ASSERT_TRUE(shell.Start("exit 0", {}).ok());
  ASSERT_TRUE(shell.WaitFor(10)) << "reaped";
  const pid_t pid = shell.pid();
  EXPECT_FALSE(ResidentTreeBytes(pid).has_value());
}

}  // namespace
}  // namespace ckptspec
