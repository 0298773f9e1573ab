#include "targets/process/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <utility>

#include "targets/process/cleanup_registry.h"

extern char** environ;

namespace ckptspec {
namespace {

std::string Errno(const char* call) { return std::string(call) + ": " + strerror(errno); }

// The environment for the child: the parent's, minus names `extra` sets, plus `extra`.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& x : extra)
      replaced = replaced || x.compare(0, name.size() + 1, name + "=") == 0;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace

Subprocess::~Subprocess() { Kill(); }

Status Subprocess::Start(const std::string& command, const std::vector<std::string>& extra_env) {
  if (pid_ != -1) return Status::FailedPrecondition("subprocess already started");
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Status::IOError(Errno("pipe2"));
  if (pipe2(out, O_CLOEXEC) != 0) {
    const Status s = Status::IOError(Errno("pipe2"));
    for (int fd : {in[0], in[1]}) close(fd);
    return s;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    const Status s = Status::IOError(Errno("pipe2"));
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    return s;
  }
  const std::vector<std::string> env = ChildEnvironment(extra_env);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  // The child's stdin, stdout and stderr are the pipes (dup2 clears close-on-exec on the copies;
  // everything else is closed by exec), SIGPIPE has its default action and the signal mask is
  // empty (ckptspec blocks the termination signals).
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  sigset_t no_signals, sigpipe;
  sigemptyset(&no_signals);
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  int error = posix_spawn_file_actions_init(&actions);
  if (error == 0) {
    error = posix_spawnattr_init(&attr);
    if (error != 0) posix_spawn_file_actions_destroy(&actions);
  }
  pid_t pid = -1;
  if (error == 0) {
    for (const auto& [from, to] : {std::pair{in[0], 0}, {out[1], 1}, {err[1], 2}}) {
      if (error == 0) error = posix_spawn_file_actions_adddup2(&actions, from, to);
    }
    if (error == 0) error = posix_spawnattr_setsigmask(&attr, &no_signals);
    if (error == 0) error = posix_spawnattr_setsigdefault(&attr, &sigpipe);
    if (error == 0)
      error = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (error == 0) {
      error = SpawnRegisteredGroup("/bin/sh", &actions, &attr, const_cast<char* const*>(argv),
                                   envp.data(), &pid);
    }
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
  }
  if (error != 0) {
    const Status s = Status::IOError(std::string("posix_spawn: ") + strerror(error));
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    return s;
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  pid_ = pid;
  stdin_fd_ = in[1];
  stdout_fd_ = out[0];
  stderr_fd_ = err[0];
  for (int fd : {stdin_fd_, stdout_fd_, stderr_fd_})
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return Status::OK();
}

void Subprocess::CloseStdin() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  stdin_fd_ = -1;
}

void Subprocess::CloseFds() {
  CloseStdin();
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdout_fd_ = -1;
  if (stderr_fd_ >= 0) close(stderr_fd_);
  stderr_fd_ = -1;
}

void Subprocess::DrainStderr() {
  // At most this much per call: a rank that writes without end cannot keep the caller here.
  constexpr size_t kMaxDrainBytes = size_t{4} << 20;
  char chunk[65536];
  for (size_t drained = 0; stderr_fd_ >= 0 && drained < kMaxDrainBytes;) {
    const ssize_t got = read(stderr_fd_, chunk, sizeof(chunk));
    if (got > 0) {
      log_.Append(chunk, static_cast<size_t>(got));
      drained += static_cast<size_t>(got);
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else if (got < 0 && errno == EAGAIN) {
      return;
    } else {  // end of file (every writer closed it) or a read error: nothing more will come
      close(stderr_fd_);
      stderr_fd_ = -1;
    }
  }
}

bool Subprocess::WaitFor(double timeout_s) {
  if (pid_ == -1 || reaped_) return reaped_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const pid_t r = waitpid(pid_, &wait_status_, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      reaped_ = true;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    DrainStderr();  // a rank blocked on a full stderr pipe could not end
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void Subprocess::Kill() {
  if (pid_ == -1 || killed_) return;
  killed_ = true;
  kill(-pid_, SIGKILL);  // the group outlives its leader while a member lives
  // Unregistered once every member is dying (none can start another), before any is reaped: the
  // watchdog (rank_watchdog.h) never holds the number of a group that has ended.
  UnregisterProcessGroup(pid_);
  if (!reaped_) {
    while (waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  // The shell's children in the group were handed to this process (a subreaper) when the shell
  // died: reap them too, until none of our children is left in the group.
  int status = 0;
  while (waitpid(-pid_, &status, 0) > 0 || errno == EINTR) {
  }
  DrainStderr();  // what the rank wrote before it was killed
  CloseFds();
}

namespace {

// The signal that ended `wait_status`: directly, or as a shell reports its child's (exit status
// 128 + N for a known signal N). 0 for an ordinary exit.
int EndingSignal(int wait_status, bool* via_shell) {
  *via_shell = false;
  if (WIFSIGNALED(wait_status)) return WTERMSIG(wait_status);
  if (!WIFEXITED(wait_status)) return 0;
  const int code = WEXITSTATUS(wait_status);
  if (code > 128 && code < 128 + 65 && sigabbrev_np(code - 128) != nullptr) {
    *via_shell = true;
    return code - 128;
  }
  return 0;
}

}  // namespace

bool Subprocess::died_of_signal() const {
  bool via_shell;
  return reaped_ && EndingSignal(wait_status_, &via_shell) != 0;
}

std::string Subprocess::ExitDescription() const {
  if (!reaped_) return "still running";
  bool via_shell = false;
  if (const int sig = EndingSignal(wait_status_, &via_shell)) {
    std::string text =
        "killed by signal " + std::to_string(sig) + " (SIG" + sigabbrev_np(sig) + ")";
    if (via_shell) text += ", as its shell reports (exit status " + std::to_string(128 + sig) + ")";
    return text;
  }
  if (WIFEXITED(wait_status_))
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
  return "ended with wait status " + std::to_string(wait_status_);
}

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace ckptspec
