// Inputs that need more memory than the process may use end in a named error and exit code 2,
// on each verb that reads them, never in an abort: the ckptspec binary allocates through
// mimalloc, whose own operator new aborts (cli/throwing_operator_new.cc), and the readers catch
// std::bad_alloc where they can name the input (cli/out_of_memory.h).
#include "cli/out_of_memory.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/address_limit_test_util.h"

namespace ckptspec {
namespace {

constexpr uint64_t kOneGiB = uint64_t{1} << 30;

struct Exit {
  int code = -1;   // -1: ended by a signal
  int signal = 0;  // the signal that ended it
  std::string err;
};

// Runs ckptspec with `args` in an address space of at most `address_space` bytes, standard output
// discarded, no core dump.
Exit RunLimited(const std::vector<std::string>& args, uint64_t address_space) {
  int err_pipe[2];
  EXPECT_EQ(pipe2(err_pipe, O_CLOEXEC), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit limit{address_space, address_space}, no_core{0, 0};
    if (setrlimit(RLIMIT_AS, &limit) != 0 || setrlimit(RLIMIT_CORE, &no_core) != 0) _exit(126);
    const int out = open("/dev/null", O_WRONLY);
    dup2(out, STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
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
  while ((n = read(err_pipe[0], buffer, sizeof buffer)) > 0) {
    result.err.append(buffer, static_cast<size_t>(n));
  }
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

// A temporary directory, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "ckptspec_oom_XXXXXX").string();
    path_ = ::mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ignored;  // best effort: a leftover temporary directory harms nothing
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(OutOfMemory, TheMessageNamesTheVerbAndTheLimit) {
  const std::string message = OutOfMemoryMessage("verify");
  EXPECT_EQ(message.rfind("ckptspec verify: out of memory", 0), 0u) << message;
}

TEST(OutOfMemory, InputsBeyondTheAddressSpaceAreANamedErrorOnEveryVerbThatReadsThem) {
#ifdef CKPTSPEC_NO_ADDRESS_LIMIT  // and the sanitized binary keeps the sanitizers' allocator
  GTEST_SKIP() << testing_util::kNoAddressLimitReason;
#endif
  TempDir tmp;
  // Sparse files of 1 GiB (within max_metadata_bytes): read whole, none fits in 1 GiB of address
  // space. A .metadata:
  const std::string dcp = tmp.path() + "/dcp";
  std::filesystem::create_directories(dcp);
  std::ofstream(dcp + "/.metadata").close();
  std::filesystem::resize_file(dcp + "/.metadata", kOneGiB);
  // Likewise a reference checkpoint's metadata.json, and a plan dump.
  const std::string ref = tmp.path() + "/reference";
  std::filesystem::create_directories(ref + "/iter_0000001");
  std::ofstream(ref + "/latest_checkpointed_iteration.txt") << "1";
  std::ofstream(ref + "/iter_0000001/metadata.xxh3") << "0123456789abcdef\n";
  const std::string plan = tmp.path() + "/plan.json";
  for (const std::string& sparse : {ref + "/iter_0000001/metadata.json", plan}) {
    std::ofstream(sparse).close();
    std::filesystem::resize_file(sparse, kOneGiB);
  }
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"verify", dcp}, "ckptspec verify: verifying " + dcp + ": out of memory"},
      {{"verify", "--data", "--checksums", dcp},
       "ckptspec verify: verifying " + dcp + ": out of memory"},
      {{"diff", dcp, dcp}, "ckptspec diff: A: reading the index of " + dcp + ": out of memory"},
      {{"verify", ref}, "out of memory"},
      {{"diff", ref, ref}, "out of memory"},
      {{"verify-plan", plan}, "out of memory"},
  };
  for (const Case& c : cases) {
    const Exit e = RunLimited(c.args, kOneGiB);
    std::string command;
    for (const std::string& a : c.args) command += " " + a;
    EXPECT_EQ(e.code, 2) << "ckptspec" << command << ": signal " << e.signal << ": " << e.err;
    EXPECT_NE(e.err.find(c.message), std::string::npos) << "ckptspec" << command << ": " << e.err;
  }
}

}  // namespace
}  // namespace ckptspec
