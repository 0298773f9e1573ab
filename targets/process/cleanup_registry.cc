#include "targets/process/cleanup_registry.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "base/env.h"
#include "targets/process/process_tree.h"
#include "targets/process/rank_watchdog.h"

namespace ckptspec {
namespace {

struct Registry {
  std::mutex mutex;
  pid_t owner = 0;  // the process whose groups and directories these are
  std::set<pid_t> groups;
  std::set<std::string> dirs;
  pid_t subreaper = 0;  // the process that made itself a child subreaper
};

// The registry, locked by `lock`. A process forked from the one that filled it (a worker of
// `ckptspec run --jobs`) starts with an empty one: its parent's groups and directories are not its
// own to kill or remove.
Registry& LockedRegistry(std::unique_lock<std::mutex>* lock) {
  static Registry* registry = new Registry();  // never destroyed: the signal thread may use it
  *lock = std::unique_lock<std::mutex>(registry->mutex);
  if (registry->owner != getpid()) {
    registry->groups.clear();
    registry->dirs.clear();
    registry->owner = getpid();
  }
  return *registry;
}

constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Every child of this process but those in `skip`, with its command name, state and process
// group: read from the kernel's list of this process's children where it keeps one
// (process_tree.h), else found by reading every process's /proc/PID/stat (a cost in the number of
// processes on the machine). A skipped pid's /proc/PID/stat is not read.
struct Child {
  pid_t pid;
  std::string name;
  char state;
  pid_t pgrp;
};
std::vector<Child> Children(const std::set<pid_t>& skip = {}) {
  std::vector<Child> out;
  const pid_t self = getpid();
  const auto add_if_child = [&](pid_t pid) {
    if (skip.count(pid)) return;
    ProcStat stat;
    if (ReadProcStat(pid, &stat) && stat.ppid == self) {
      out.push_back(Child{pid, stat.name, stat.state, stat.pgrp});
    }
  };
  if (const std::optional<std::vector<pid_t>> listed = ChildPids(self)) {
    for (pid_t pid : *listed) add_if_child(pid);
    return out;
  }
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    add_if_child(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}

void KillAndReap(pid_t pid, pid_t pgrp) {
  kill(pid, SIGKILL);
  if (pgrp == pid) kill(-pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Runs on the signal thread: everything registered is killed and removed, then the process ends
// by `sig`. The registry's lock is never released: registration blocks until the end.
[[noreturn]] void TerminateCleanly(int sig) {
  std::unique_lock<std::mutex> lock;
  Registry& registry = LockedRegistry(&lock);
  lock.release();  // never unlocked
  for (pid_t group : registry.groups) kill(-group, SIGKILL);
  // Every child is killed: ranks, what they left behind, orphans reparented to this subreaper,
  // the watchdog (rank_watchdog.h: it has nothing left to do).
  // Orphans of the killed keep arriving for a moment, so this repeats until none is left.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    const std::vector<Child> children = Children();
    if (children.empty() || std::chrono::steady_clock::now() > deadline) break;
    for (const Child& c : children) KillAndReap(c.pid, c.pgrp);
  }
  // The process is ending on a signal: a directory that cannot be removed is left, there is no
  // one to tell.
  for (const std::string& dir : registry.dirs) (void)Env::Posix()->RemoveTree(dir);
  signal(sig, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  raise(sig);
  _exit(128 + sig);
}

}  // namespace

int SpawnRegisteredGroup(const char* path, const posix_spawn_file_actions_t* actions,
                         posix_spawnattr_t* attr, char* const argv[], char* const envp[],
                         pid_t* pid) {
  short flags = 0;
  int error = posix_spawnattr_getflags(attr, &flags);
  if (error == 0) error = posix_spawnattr_setflags(attr, flags | POSIX_SPAWN_SETPGROUP);
  if (error == 0) error = posix_spawnattr_setpgroup(attr, 0);  // a group led by the child
  if (error != 0) return error;
  std::unique_lock<std::mutex> lock;
  Registry& registry = LockedRegistry(&lock);
  // Orphaned descendants of adapter processes are reparented to this process instead of init,
  // so that they can be found (FindLeftoverChildren) and reaped. (A forked child does not inherit
  // the attribute: each process sets it for itself.)
  if (registry.subreaper != getpid() && prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) {
    registry.subreaper = getpid();
  }
  if (registry.groups.size() >= kMaxWatchedGroups) return EAGAIN;
  // No rank starts unwatched: the watchdog runs before the spawn, and hears of the group at once.
  error = EnsureWatchdog(registry.groups);
  if (error != 0) return error;
  error = posix_spawn(pid, path, actions, attr, argv, envp);
  if (error != 0) return error;
  registry.groups.insert(*pid);
  if (WatchGroup(*pid) == 0) return 0;
  error = EnsureWatchdog(registry.groups);  // the watchdog had ended: a fresh one, told of all
  if (error == 0) return 0;
  registry.groups.erase(*pid);
  kill(-*pid, SIGKILL);
  while (waitpid(*pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return error;
}

void UnregisterProcessGroup(pid_t pgid) {
  std::unique_lock<std::mutex> lock;
  Registry& registry = LockedRegistry(&lock);
  if (registry.groups.erase(pgid) > 0) UnwatchGroup(pgid);
}

void RegisterTempDir(const std::string& path) {
  std::unique_lock<std::mutex> lock;
  LockedRegistry(&lock).dirs.insert(path);
}

void UnregisterTempDir(const std::string& path) {
  std::unique_lock<std::mutex> lock;
  LockedRegistry(&lock).dirs.erase(path);
}

void RestoreTerminationSignals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : kTerminationSignals) signal(sig, SIG_DFL);
}

void InstallTerminationCleanup() {
  static const bool installed = [] {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kTerminationSignals) sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      int sig = 0;
      while (sigwait(&set, &sig) != 0) {
      }
      TerminateCleanly(sig);
    }).detach();
    return true;
  }();
  (void)installed;  // the static's initializer is the run-once; its value is not needed
}

std::vector<LeftoverProcess> FindLeftoverChildren() {
  std::set<pid_t> skip;
  {
    std::unique_lock<std::mutex> lock;
    skip = LockedRegistry(&lock).groups;
    if (WatchdogPid() > 0) skip.insert(WatchdogPid());
  }
  std::vector<LeftoverProcess> out;
  // A rank process leads its registered group; the watchdog is the harness's own. Any other
  // child was reparented here: an orphan, even while it is still in a rank's group (it may not
  // have left it yet).
  for (const Child& c : Children(skip)) {
    if (c.state == 'Z') {
      (void)waitpid(c.pid, nullptr, WNOHANG);  // an error: someone reaped it first
      continue;
    }
    out.push_back({c.pid, c.name});
  }
  return out;
}

void KillLeftovers(const std::vector<LeftoverProcess>& leftovers) {
  for (const LeftoverProcess& p : leftovers) KillAndReap(p.pid, getpgid(p.pid));
  // What the killed had started is reparented here in turn: those are leftovers too.
  for (int round = 0; round < 100; ++round) {
    const std::vector<LeftoverProcess> more = FindLeftoverChildren();
    if (more.empty()) return;
    for (const LeftoverProcess& p : more) KillAndReap(p.pid, getpgid(p.pid));
  }
}

std::string DescribeLeftovers(const std::vector<LeftoverProcess>& leftovers) {
  std::string text =
      std::to_string(leftovers.size()) + (leftovers.size() == 1 ? " process" : " processes");
  for (size_t i = 0; i < leftovers.size(); ++i) {
    if (i == 5) {
      text += ", ...";
      break;
    }
    text +=
        (i == 0 ? ": " : ", ") + std::to_string(leftovers[i].pid) + " (" + leftovers[i].name + ")";
  }
  return text;
}

}  // namespace ckptspec
