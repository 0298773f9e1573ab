#include "targets/process/harness_registry.h"

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

#include "targets/env/env.h"
#include "targets/process/process_tree.h"

namespace ckptspec {
namespace {

struct Registry {
  std::mutex mutex;
  std::set<pid_t> groups;
  std::set<std::string> dirs;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: the signal thread may use it
  return *registry;
}

constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP};

// One line of /proc/PID/stat: "pid (comm) state ppid pgrp ...". The command name may hold spaces
// and parentheses, so the fields after it are found from the last ')'.
bool ReadStat(pid_t pid, std::string* name, char* state, pid_t* ppid, pid_t* pgrp) {
  std::string text;
  if (!ReadProcFile("/proc/" + std::to_string(pid) + "/stat", &text) || text.empty()) return false;
  const size_t open_paren = text.find('(');
  const size_t close_paren = text.rfind(')');
  if (open_paren == std::string::npos || close_paren == std::string::npos ||
      close_paren < open_paren) {
    return false;
  }
  *name = text.substr(open_paren + 1, close_paren - open_paren - 1);
  long parent = 0, group = 0;
  char s = 0;
  if (sscanf(text.c_str() + close_paren + 1, " %c %ld %ld", &s, &parent, &group) != 3) return false;
  *state = s;
  *ppid = static_cast<pid_t>(parent);
  *pgrp = static_cast<pid_t>(group);
  return true;
}

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
    Child child{pid, "", 0, 0};
    pid_t ppid = 0;
    if (ReadStat(child.pid, &child.name, &child.state, &ppid, &child.pgrp) && ppid == self) {
      out.push_back(child);
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
  Registry& registry = TheRegistry();
  registry.mutex.lock();
  for (pid_t group : registry.groups) kill(-group, SIGKILL);
  // Every child is killed: ranks, what they left behind, orphans reparented to this subreaper.
  // Orphans of the killed keep arriving for a moment, so this repeats until none is left.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    const std::vector<Child> children = Children();
    if (children.empty() || std::chrono::steady_clock::now() > deadline) break;
    for (const Child& c : children) KillAndReap(c.pid, c.pgrp);
  }
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
  // Orphaned descendants of adapter processes are reparented to this process instead of init,
  // so that they can be found (FindLeftoverChildren) and reaped.
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  (void)subreaper;
  short flags = 0;
  int error = posix_spawnattr_getflags(attr, &flags);
  if (error == 0) error = posix_spawnattr_setflags(attr, flags | POSIX_SPAWN_SETPGROUP);
  if (error == 0) error = posix_spawnattr_setpgroup(attr, 0);  // a group led by the child
  if (error != 0) return error;
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  error = posix_spawn(pid, path, actions, attr, argv, envp);
  if (error == 0) registry.groups.insert(*pid);
  return error;
}

void UnregisterProcessGroup(pid_t pgid) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.groups.erase(pgid);
}

void RegisterTempDir(const std::string& path) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.dirs.insert(path);
}

void UnregisterTempDir(const std::string& path) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.dirs.erase(path);
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
  (void)installed;
}

std::vector<LeftoverProcess> FindLeftoverChildren() {
  std::set<pid_t> groups;
  {
    Registry& registry = TheRegistry();
    std::lock_guard<std::mutex> lock(registry.mutex);
    groups = registry.groups;
  }
  std::vector<LeftoverProcess> out;
  // A rank process leads its registered group. Any other child was reparented here: an orphan,
  // even while it is still in a rank's group (it may not have left it yet).
  for (const Child& c : Children(groups)) {
    if (c.state == 'Z') {
      (void)waitpid(c.pid, nullptr, WNOHANG);
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
