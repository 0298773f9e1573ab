// The ckptspec binary itself: what main adds to the verbs (exit codes of parse errors, the check
// that standard output was written).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

struct Exit {
  int code = -1;  // -1: ended by a signal
  std::string err;
};

// Runs ckptspec with `args`, its standard output sent to `out_path`.
Exit RunCkptspec(const std::vector<std::string>& args, const std::string& out_path) {
  int err_pipe[2];
  EXPECT_EQ(pipe(err_pipe), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY);
    dup2(out, STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(err_pipe[0]);
    std::vector<char*> argv = {const_cast<char*>(CKPTSPEC_BINARY)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(CKPTSPEC_BINARY, argv.data());
    _exit(127);
  }
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

}  // namespace
