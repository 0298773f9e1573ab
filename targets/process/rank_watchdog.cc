#include "targets/process/rank_watchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace ckptspec {
namespace {

// This process's watchdog: plain data, so that the fork handler can reset it in a child.
struct WatchdogState {
  pid_t pid = -1;
  int fd = -1;  // this process's end of the socket pair
};
WatchdogState g_watchdog;
bool g_fork_handler_installed = false;

// The watchdog's end of the pair, in the watchdog.
constexpr int kWatchdogEnd = 3;

// Runs in every child fork() makes: the child neither holds its parent's end (the watchdog would
// wait for the child too) nor has a watchdog of its own yet. Only async-signal-safe calls.
void ForgetInheritedWatchdog() {
  if (g_watchdog.fd >= 0) close(g_watchdog.fd);
  g_watchdog.pid = -1;
  g_watchdog.fd = -1;
}

// Closes every descriptor from `first` on.
void CloseDescriptorsFrom(int first) {
  if (close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  struct rlimit limit {};
  rlim_t end = 65536;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    end = limit.rlim_cur < (rlim_t{1} << 20) ? limit.rlim_cur : (rlim_t{1} << 20);
  }
  for (rlim_t fd = static_cast<rlim_t>(first); fd < end; ++fd) close(static_cast<int>(fd));
}

// The watchdog's whole life. It is the forked child of a process that may have other threads, so
// it makes only system calls: no allocation, no lock.
[[noreturn]] void WatchdogMain(int end) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGPIPE}) sigaction(sig, &ignore, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  setpgid(0, 0);
  if (end != kWatchdogEnd && dup2(end, kWatchdogEnd) != kWatchdogEnd) _exit(1);
  const int null = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3 && null >= 0; ++fd) dup2(null, fd);
  CloseDescriptorsFrom(kWatchdogEnd + 1);
  void* memory = mmap(nullptr, kMaxWatchedGroups * sizeof(pid_t), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) _exit(1);  // the starter's next message fails: it starts another
  pid_t* watched = static_cast<pid_t*>(memory);
  size_t count = 0;
  for (;;) {
    int32_t record = 0;
    const ssize_t got = recv(kWatchdogEnd, &record, sizeof(record), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // end of file: every holder of the other end has ended
    if (got != sizeof(record)) continue;
    if (record > 0 && count < kMaxWatchedGroups) {
      watched[count++] = record;
    } else if (record < 0) {
      for (size_t i = 0; i < count; ++i) {
        if (watched[i] != -record) continue;
        watched[i] = watched[--count];
        break;
      }
    }
  }
  for (size_t i = 0; i < count; ++i) kill(-watched[i], SIGKILL);
  _exit(0);
}

// Kills the watchdog (before closing its end, so that it cannot act on a list that is no longer
// the truth), closes this process's end and reaps it.
void StopWatchdog() {
  if (g_watchdog.pid > 0) kill(g_watchdog.pid, SIGKILL);
  if (g_watchdog.fd >= 0) close(g_watchdog.fd);
  if (g_watchdog.pid > 0) {
    while (waitpid(g_watchdog.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  g_watchdog = WatchdogState();
}

// Sends one record (a group to add, or minus one to remove). False, after stopping the watchdog,
// when it does not take it within a second: it is gone, stopped, or starved.
bool Send(int32_t record) {
  if (g_watchdog.fd < 0) return false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    ssize_t sent;
    while ((sent = send(g_watchdog.fd, &record, sizeof(record), MSG_NOSIGNAL | MSG_DONTWAIT)) < 0 &&
           errno == EINTR) {
    }
    if (sent == sizeof(record)) return true;
    if (sent >= 0 || errno != EAGAIN) break;
    pollfd writable{g_watchdog.fd, POLLOUT, 0};
    while (poll(&writable, 1, 1000) < 0 && errno == EINTR) {
    }
  }
  StopWatchdog();
  return false;
}

int StartWatchdog(const std::set<pid_t>& groups) {
  if (!g_fork_handler_installed) {
    const int error = pthread_atfork(nullptr, nullptr, ForgetInheritedWatchdog);
    if (error != 0) return error;
    g_fork_handler_installed = true;
  }
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) return errno;
  const pid_t pid = fork();  // the fork handler closes any earlier watchdog's end in the child
  if (pid < 0) {
    const int error = errno;
    close(ends[0]);
    close(ends[1]);
    return error;
  }
  if (pid == 0) {
    close(ends[0]);
    WatchdogMain(ends[1]);
  }
  close(ends[1]);
  g_watchdog.pid = pid;
  g_watchdog.fd = ends[0];
  for (pid_t group : groups) {
    if (!Send(static_cast<int32_t>(group))) return EPIPE;
  }
  return 0;
}

}  // namespace

int EnsureWatchdog(const std::set<pid_t>& groups) {
  if (g_watchdog.pid > 0) {
    int status = 0;
    const pid_t ended = waitpid(g_watchdog.pid, &status, WNOHANG);
    if (ended == 0) return 0;  // it runs
    g_watchdog.pid = -1;       // it ended (reaped now, or already): its pid may name another
  }
  StopWatchdog();
  return StartWatchdog(groups);
}

int WatchGroup(pid_t pgid) { return Send(static_cast<int32_t>(pgid)) ? 0 : EPIPE; }

// A watchdog that cannot be told has ended: no group is watched any more, which is the aim.
void UnwatchGroup(pid_t pgid) { (void)Send(-static_cast<int32_t>(pgid)); }

pid_t WatchdogPid() { return g_watchdog.pid; }

}  // namespace ckptspec
