// The ckptspec binary itself: what main adds to the verbs (exit codes of parse errors, the check
// that standard output was written, what is left when it is killed or quit).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/env.h"
#include "targets/process/process_test_util.h"

namespace {

using ckptspec::ProcessesMarkedWith;
using ckptspec::WaitForMarkedToEnd;

struct Exit {
  int code = -1;  // -1: ended by a signal
  std::string err;
};

// Starts ckptspec with `args` and this process's environment plus `env` ("NAME=value"), its
// standard output sent to `out_path`, its standard error to `err_fd`, no core dump.
pid_t StartCkptspec(const std::vector<std::string>& args, const std::string& out_path, int err_fd,
                    const std::vector<std::string>& env = {}) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY);
    dup2(out, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    std::vector<char*> argv = {const_cast<char*>(CKPTSPEC_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(CKPTSPEC_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

// Runs ckptspec with `args`, its standard output sent to `out_path`.
Exit RunCkptspec(const std::vector<std::string>& args, const std::string& out_path,
                 const std::vector<std::string>& env = {}) {
  int err_pipe[2];
  EXPECT_EQ(pipe2(err_pipe, O_CLOEXEC), 0);
  const pid_t pid = StartCkptspec(args, out_path, err_pipe[1], env);
  close(err_pipe[1]);
  Exit result;
  char buffer[4096];
  ssize_t n;
  while ((n = read(err_pipe[0], buffer, sizeof buffer)) > 0)
    result.err.append(buffer, static_cast<size_t>(n));
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.code = WEXITSTATUS(status);
  return result;
}

// A report on standard output that cannot be written (a full disk) is exit 2, not silence.
TEST(Main, StandardOutputThatCannotBeWrittenIsExit2) {
  Exit e = RunCkptspec({"list"}, "/dev/null");
  EXPECT_EQ(e.code, 0) << e.err;
  e = RunCkptspec({"list"}, "/dev/full");
  EXPECT_EQ(e.code, 2);
  EXPECT_EQ(e.err, "ckptspec: cannot write standard output\n");
}

TEST(Main, NumbersOutOfRangeAreExit2WithTheFlagNamed) {
  const Exit e = RunCkptspec({"run", "--seed", "99999999999999999999"}, "/dev/null");
  EXPECT_EQ(e.code, 2);
  EXPECT_EQ(e.err.substr(0, e.err.find('\n')),
            "--seed '99999999999999999999' is out of range (accepted: 0 to 18446744073709551615)");
}

// `ckptspec run --jobs 2` killed outright (SIGKILL: none of its code runs) in the middle of a
// long run: its workers end with it.
TEST(Main, RunKilledOutrightLeavesNoWorker) {
  ckptspec::BecomeSubreaper();  // the orphans come here, to be seen and reaped
  const std::string mark = "CKPTSPEC_TEST_MARK=main-jobs-" + std::to_string(getpid());
  const pid_t ckptspec = StartCkptspec(
      {"run", "--jobs", "2", "--target", "reference", "--budget", "1000000", "--quiet"},
      "/dev/null", STDERR_FILENO, {mark});
  const ckptspec::KillAtScopeEnd killed(ckptspec);
  ASSERT_TRUE(ckptspec::WaitForMarked(mark, 3, 10)) << "ckptspec and its 2 workers";
  ASSERT_EQ(kill(ckptspec, SIGKILL), 0);
  ASSERT_EQ(waitpid(ckptspec, nullptr, 0), ckptspec);
  const std::vector<pid_t> left = WaitForMarkedToEnd(mark, 5);
  EXPECT_TRUE(left.empty()) << left.size() << " workers outlived ckptspec by 5 s";
}

// A fake adapter (docs/PROTOCOL.md): each rank starts a process of its own in its group, answers
// hello, and shutdown by ending; any other request (the first save) it never answers.
const char kHangingAdapter[] =
    "sleep 600 & while read -r line; do "
    "id=$(printf '%s' \"$line\" | sed 's/.*\"id\":\\([0-9]*\\).*/\\1/'); "
    "case \"$line\" in "
    "*'\"op\":\"hello\"'*) printf '{\"id\":%s,\"rank\":%s,\"ok\":true,\"protocol\":1,"
    "\"capabilities\":{\"objects\":true}}\\n' \"$id\" \"$RANK\";; "
    "*'\"op\":\"shutdown\"'*) printf '{\"id\":%s,\"rank\":%s,\"ok\":true}\\n' \"$id\" "
    "\"$RANK\"; kill $!; exit 0;; "
    "*) sleep 600;; esac; done";

// `ckptspec run` of kHangingAdapter under a fresh $TMPDIR and scratch directory, every process it
// starts marked.
class AdapterRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ckptspec::BecomeSubreaper();  // the orphans come here, to be seen and reaped
    std::string base = ckptspec::FastTempRoot() + "/ckptspec-main-test-XXXXXX";
    ASSERT_NE(mkdtemp(base.data()), nullptr);
    base_ = base;
    env_ = {"TMPDIR=" + base_, "CKPTSPEC_SCRATCH_DIR=" + base_,
            "CKPTSPEC_TEST_MARK=main-adapter-" + std::to_string(getpid())};
  }
  void TearDown() override { (void)ckptspec::Env::Posix()->RemoveTree(base_); }

  const std::string& mark() const { return env_[2]; }

  // The entries of the base directory that are the harness's temporary directories.
  std::vector<std::string> TempDirs() const {
    std::vector<std::string> names, out;
    EXPECT_TRUE(ckptspec::Env::Posix()->GetChildren(base_, &names).ok());
    for (const std::string& n : names) {
      if (n.rfind("ckptspec-adapter-", 0) == 0) out.push_back(n);
    }
    return out;
  }

  // Starts the run; whether, within 10 s, a case's temporary directories existed and ckptspec,
  // its watchdog and at least one rank with its sleep ran (then a moment more, into the save).
  bool StartHangingRun(pid_t* pid) {
    *pid = StartCkptspec({"run", "--adapter", kHangingAdapter, "--properties", "P2"}, "/dev/null",
                         STDERR_FILENO, env_);
    for (int i = 0; i < 1000; ++i) {
      if (TempDirs().size() >= 3 && ProcessesMarkedWith(mark()).size() >= 4) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::string base_;
  std::vector<std::string> env_;
};

// Killed outright: no rank, and nothing a rank started in its group, outlives ckptspec; the
// temporary directories it could not remove are removed by the next run that looks there.
TEST_F(AdapterRunTest, KilledOutrightLeavesNoProcessAndTheNextRunReclaimsItsDirectories) {
  pid_t ckptspec = 0;
  const bool started = StartHangingRun(&ckptspec);
  const ckptspec::KillAtScopeEnd killed(ckptspec);
  ASSERT_TRUE(started) << "ckptspec, its watchdog, a rank and its sleep, the directories";
  ASSERT_EQ(kill(ckptspec, SIGKILL), 0);
  ASSERT_EQ(waitpid(ckptspec, nullptr, 0), ckptspec);
  const std::vector<pid_t> left = WaitForMarkedToEnd(mark(), 5);
  EXPECT_TRUE(left.empty()) << left.size() << " processes outlived ckptspec by 5 s";
  // The checkpoint and scratch directories of the target, and the storage recorder's.
  ASSERT_EQ(TempDirs().size(), 3u) << "the killed run's directories";
  // The next run with an adapter reclaims them first, before its adapter (here, one that
  // cannot start) is even probed.
  const Exit next = RunCkptspec({"run", "--adapter", "exit 3"}, "/dev/null", env_);
  EXPECT_EQ(next.code, 2) << next.err;
  EXPECT_NE(next.err.find("exited with status 3 during hello"), std::string::npos) << next.err;
  EXPECT_TRUE(TempDirs().empty()) << TempDirs().size() << " directories are left";
}

// SIGQUIT (Ctrl-\\) cleans up as SIGINT and SIGTERM do, and ends ckptspec by SIGQUIT.
TEST_F(AdapterRunTest, QuitLeavesNoProcessAndNoDirectory) {
  pid_t ckptspec = 0;
  const bool started = StartHangingRun(&ckptspec);
  const ckptspec::KillAtScopeEnd killed(ckptspec);
  ASSERT_TRUE(started) << "ckptspec, its watchdog, a rank and its sleep, the directories";
  ASSERT_EQ(kill(ckptspec, SIGQUIT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(ckptspec, &status, 0), ckptspec);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGQUIT) << "wait status " << status;
  const std::vector<pid_t> left = WaitForMarkedToEnd(mark(), 5);
  EXPECT_TRUE(left.empty()) << left.size() << " processes outlived ckptspec by 5 s";
  EXPECT_TRUE(TempDirs().empty()) << TempDirs().size() << " directories are left";
}

}  // namespace
