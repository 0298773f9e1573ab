#include "targets/process/owned_temp_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "base/env.h"
#include "base/posix_remove_tree.h"
#include "targets/process/process_tree.h"

namespace ckptspec {
namespace {

constexpr std::string_view kOwnedPrefix = "ckptspec-adapter-";
constexpr size_t kMkdtempSuffix = 6;  // the XXXXXX mkdtemp replaces by letters and digits

// What a directory's name records of the process that made it.
struct DirOwner {
  pid_t pid = 0;
  uint64_t start_time = 0;
  uint64_t pid_namespace = 0;
};

// This process, or nullopt where /proc cannot tell its start time or PID namespace.
std::optional<DirOwner> ThisProcessAsOwner() {
  ProcStat stat;
  struct stat ns {};
  if (!ReadProcStat(getpid(), &stat) || ::stat("/proc/self/ns/pid", &ns) != 0) return std::nullopt;
  return DirOwner{getpid(), stat.start_time, static_cast<uint64_t>(ns.st_ino)};
}

// Reads "<decimal>-" off the front of `rest`: 1 to 19 digits, no leading zero.
bool TakeNumber(std::string_view* rest, uint64_t* value) {
  size_t digits = 0;
  while (digits < rest->size() && (*rest)[digits] >= '0' && (*rest)[digits] <= '9') ++digits;
  if (digits == 0 || digits > 19 || digits == rest->size() || (*rest)[digits] != '-') return false;
  if ((*rest)[0] == '0' && digits > 1) return false;
  *value = 0;
  for (size_t i = 0; i < digits; ++i)
    *value = *value * 10 + static_cast<uint64_t>((*rest)[i] - '0');
  rest->remove_prefix(digits + 1);
  return true;
}

// The owner `name` records, or nullopt when it is not exactly of MakeOwnedTempDir's form.
std::optional<DirOwner> OwnerNamedBy(std::string_view name) {
  if (name.substr(0, kOwnedPrefix.size()) != kOwnedPrefix) return std::nullopt;
  std::string_view rest = name.substr(kOwnedPrefix.size());
  uint64_t pid = 0;
  DirOwner owner;
  if (!TakeNumber(&rest, &pid) || pid < 1 || pid > INT_MAX ||
      !TakeNumber(&rest, &owner.start_time) || !TakeNumber(&rest, &owner.pid_namespace) ||
      rest.size() != kMkdtempSuffix) {
    return std::nullopt;
  }
  for (char c : rest) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum) return std::nullopt;
  }
  owner.pid = static_cast<pid_t>(pid);
  return owner;
}

// True only when the process `owner` names has certainly ended (in this PID namespace).
bool OwnerIsGone(const DirOwner& owner) {
  ProcStat stat;
  if (ReadProcStat(owner.pid, &stat)) return stat.start_time != owner.start_time;
  return kill(owner.pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

Status MakeOwnedTempDir(const std::string& root, std::string* path) {
  std::string name = std::string(kOwnedPrefix) + std::to_string(getpid()) + "-";
  if (const std::optional<DirOwner> self = ThisProcessAsOwner()) {
    name += std::to_string(self->start_time) + "-" + std::to_string(self->pid_namespace) + "-";
  }
  std::string pattern = JoinPath(root, name + "XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status::IOError("cannot create a temporary directory like " + pattern + ": " +
                           std::strerror(errno));
  }
  *path = pattern;
  return Status::OK();
}

std::vector<std::string> ReclaimAbandonedTempDirs(const std::string& root) {
  std::vector<std::string> removed;
  const std::optional<DirOwner> self = ThisProcessAsOwner();
  if (!self) return removed;  // no /proc: no owner can be judged
  const int dir = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return removed;
  std::vector<std::string> candidates;
  const int listing = dup(dir);
  if (DIR* entries = listing >= 0 ? fdopendir(listing) : nullptr) {
    while (const dirent* entry = readdir(entries)) {
      const std::optional<DirOwner> owner = OwnerNamedBy(entry->d_name);
      if (owner && owner->pid_namespace == self->pid_namespace) {
        candidates.push_back(entry->d_name);
      }
    }
    closedir(entries);
  } else if (listing >= 0) {
    close(listing);
  }
  for (const std::string& name : candidates) {
    struct stat st {};
    if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid() || !OwnerIsGone(*OwnerNamedBy(name))) {
      continue;
    }
    if (PosixRemoveTreeAt(dir, root, name).ok()) removed.push_back(name);
  }
  close(dir);
  return removed;
}

}  // namespace ckptspec
