// Test helper for the process harness: checks that nothing a harness started is left.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "targets/process/process_tree.h"

namespace ckptspec {

// Makes this test process a child subreaper: what a process the test started leaves behind when
// it dies is reparented here, where it can be seen and reaped, instead of to init.
inline void BecomeSubreaper() { ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0) << strerror(errno); }

// Reaps every child of this process that has ended.
inline void ReapEndedChildren() {
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

// The processes whose environment holds `entry` ("NAME=value"): a mark a test puts in the
// environment of a process it starts, which everything that process starts inherits.
inline std::vector<pid_t> ProcessesMarkedWith(const std::string& entry) {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(atoi(e->d_name));
    std::string environment;
    if (pid <= 0 || !ReadProcFile("/proc/" + std::to_string(pid) + "/environ", &environment)) {
      continue;
    }
    for (size_t at = 0; at < environment.size();) {
      const size_t end = std::min(environment.find('\0', at), environment.size());
      if (environment.compare(at, end - at, entry) == 0) {
        out.push_back(pid);
        break;
      }
      at = end + 1;
    }
  }
  closedir(proc);
  return out;
}

// Waits up to `timeout_s` until at least `count` processes are marked with `entry` at once;
// whether they were. (A process in the middle of exec may be missed for a moment: the count is
// polled, not read once.)
inline bool WaitForMarked(const std::string& entry, size_t count, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (ProcessesMarkedWith(entry).size() < count) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Kills and reaps a child of this process when it goes out of scope, unless it was reaped
// already: a test that stops half-way leaves nothing running (what the child started is ended by
// the harness's own means, or reparented here).
class KillAtScopeEnd {
 public:
  explicit KillAtScopeEnd(pid_t pid) : pid_(pid) {}
  ~KillAtScopeEnd() {
    if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  KillAtScopeEnd(const KillAtScopeEnd&) = delete;
  KillAtScopeEnd& operator=(const KillAtScopeEnd&) = delete;

 private:
  pid_t pid_;
};

// Waits up to `timeout_s` for every process marked with `entry` to end, reaping the ended
// children of this process meanwhile. Returns those still running then, after killing them, so
// that a failing test leaves nothing behind.
inline std::vector<pid_t> WaitForMarkedToEnd(const std::string& entry, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::vector<pid_t> running;
  for (;;) {
    ReapEndedChildren();
    running = ProcessesMarkedWith(entry);
    if (running.empty() || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (pid_t pid : running) kill(pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ReapEndedChildren();
  return running;
}

// Every process group in `leaders` (each adapter rank leads one; what its shell started is in it)
// has no member left, not even a zombie, within a second.
inline void ExpectNoProcessLeft(const std::vector<pid_t>& leaders) {
  ASSERT_FALSE(leaders.empty());
  for (pid_t pid : leaders) {
    bool gone = false;
    for (int i = 0; i < 500 && !gone; ++i) {
      gone = kill(-pid, 0) != 0 && errno == ESRCH;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_TRUE(gone) << "process group " << pid << " still has members";
  }
}

// Where tests put adapter checkpoints: /dev/shm when it is a writable directory (tmpfs: the
// reference engine's fsyncs cost nothing there, and durability is not what these tests check),
// else /tmp. UseFastTempDir() also points TMPDIR there, for adapter targets' own directories.
inline std::string FastTempRoot() {
  return access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
}
inline void UseFastTempDir() { setenv("TMPDIR", FastTempRoot().c_str(), 1); }

}  // namespace ckptspec
