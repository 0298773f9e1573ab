// Test helper for the process harness: checks that nothing a harness started is left.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ckptspec {

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
