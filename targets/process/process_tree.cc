#include "targets/process/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace ckptspec {

bool ReadProcFile(const std::string& path, std::string* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      close(fd);
      return got == 0;
    }
    out->append(buffer, static_cast<size_t>(got));
  }
}

bool ReadProcStat(pid_t pid, ProcStat* out) {
  std::string text;
  if (!ReadProcFile("/proc/" + std::to_string(pid) + "/stat", &text) || text.empty()) return false;
  // "pid (comm) state ppid pgrp ...": the fields after the name are found from the last ')'.
  const size_t open_paren = text.find('(');
  const size_t close_paren = text.rfind(')');
  if (open_paren == std::string::npos || close_paren == std::string::npos ||
      close_paren < open_paren || close_paren + 2 >= text.size()) {
    return false;
  }
  out->name = text.substr(open_paren + 1, close_paren - open_paren - 1);
  out->state = text[close_paren + 2];
  // Fields 4 on (ppid, pgrp, ...) are numbers; the start time is field 22.
  const char* p = text.c_str() + close_paren + 3;
  for (int field = 4; field <= 22; ++field) {
    char* end = nullptr;
    const long long value = strtoll(p, &end, 10);
    if (end == p) return false;
    if (field == 4) out->ppid = static_cast<pid_t>(value);
    if (field == 5) out->pgrp = static_cast<pid_t>(value);
    if (field == 22) out->start_time = static_cast<uint64_t>(value);
    p = end;
  }
  return true;
}

namespace {

// The value in kB of the line "<name>:" of a /proc/PID/status text, or nullopt.
std::optional<uint64_t> StatusKb(const std::string& text, const char* name) {
  const std::string label = std::string("\n") + name + ":";
  const size_t at = text.find(label);
  if (at == std::string::npos) return std::nullopt;
  const char* digits = text.c_str() + at + label.size();
  char* end = nullptr;
  const unsigned long long kb = strtoull(digits, &end, 10);
  if (end == digits) return std::nullopt;
  return static_cast<uint64_t>(kb);
}

// The memory one process holds: its resident anonymous and shared-memory pages (RssAnon +
// RssShmem of /proc/PID/status), else, on kernels without those lines (before Linux 4.5), its
// whole resident set (the second field of /proc/PID/statm, in pages). nullopt when neither can be
// read.
std::optional<uint64_t> ProcessBytes(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::string text;
  if (ReadProcFile(dir + "/status", &text)) {
    const std::optional<uint64_t> anon = StatusKb(text, "RssAnon");
    const std::optional<uint64_t> shmem = StatusKb(text, "RssShmem");
    if (anon && shmem) return (*anon + *shmem) * 1024;
  }
  if (!ReadProcFile(dir + "/statm", &text)) return std::nullopt;
  char* end = nullptr;
  (void)strtoull(text.c_str(), &end, 10);  // the total program size
  const char* resident = end;
  const unsigned long long pages = strtoull(resident, &end, 10);
  if (end == resident) return std::nullopt;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// Appends the pids listed in a children file's text ("12 34 ").
void AppendPids(const std::string& text, std::vector<pid_t>* out) {
  const char* p = text.c_str();
  for (;;) {
    char* end = nullptr;
    const long child = strtol(p, &end, 10);
    if (end == p) return;
    if (child > 0) out->push_back(static_cast<pid_t>(child));
    p = end;
  }
}

}  // namespace

std::optional<std::vector<pid_t>> ChildPids(pid_t pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) {  // gone, or no /proc at all
    if (access("/proc/self/task", F_OK) != 0) return std::nullopt;
    return std::vector<pid_t>();
  }
  std::vector<pid_t> out;
  bool listed = false;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::string text;
    if (!ReadProcFile(tasks + "/" + entry->d_name + "/children", &text)) continue;
    listed = true;
    AppendPids(text, &out);
  }
  closedir(dir);
  // No thread's list could be read: the kernel keeps none, unless the process ended meanwhile.
  if (!listed && access(tasks.c_str(), F_OK) == 0) return std::nullopt;
  return out;
}

std::optional<uint64_t> ResidentTreeBytes(pid_t pid) {
  const std::optional<uint64_t> root = ProcessBytes(pid);
  if (!root) return std::nullopt;
  uint64_t total = *root;
  std::set<pid_t> seen{pid};
  std::optional<std::vector<pid_t>> pending = ChildPids(pid);
  if (!pending) return std::nullopt;
  while (!pending->empty() && seen.size() < static_cast<size_t>(kMaxProcessesInTree)) {
    const pid_t next = pending->back();
    pending->pop_back();
    if (!seen.insert(next).second) continue;
    const std::optional<uint64_t> bytes = ProcessBytes(next);
    if (!bytes) continue;  // it has ended
    total += *bytes;
    const std::optional<std::vector<pid_t>> children = ChildPids(next);
    if (!children) return std::nullopt;
    pending->insert(pending->end(), children->begin(), children->end());
  }
  return total;
}

}  // namespace ckptspec
