#include "crash/fs_recorder.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "crash/fs_control.h"
#include "crash/recording_log.h"

namespace ckptspec {

static_assert(offsetof(CkptspecFsControl, root) == 72, "the control's layout is shared with C");
static_assert(offsetof(CkptspecFsControl, order_lock) == 72 + 2 * CKPTSPEC_FSREC_PATH_BYTES,
              "the control's layout is shared with C");

namespace {

constexpr char kInterposerFileName[] = "libckptspec_fs_interposer.so";
constexpr char kInterposerEnv[] = "CKPTSPEC_FS_INTERPOSER";

bool IsFile(const std::string& path) {
  struct stat st;
  return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Ordinal(uint64_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

uint32_t ControlFaultKind(DiskFaultKind kind) {
  switch (kind) {
    case DiskFaultKind::kNone:
      return CKPTSPEC_FSREC_FAULT_NONE;
    case DiskFaultKind::kNoSpace:
      return CKPTSPEC_FSREC_FAULT_ENOSPC;
    case DiskFaultKind::kIoError:
      return CKPTSPEC_FSREC_FAULT_EIO;
    case DiskFaultKind::kShortWrite:
      return CKPTSPEC_FSREC_FAULT_SHORT;
    case DiskFaultKind::kFsyncFails:
      return CKPTSPEC_FSREC_FAULT_FSYNC_EIO;
  }
  return CKPTSPEC_FSREC_FAULT_NONE;
}

Status ReadWholeFile(const std::string& path, std::string* bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return Status::IOError(path + ": cannot stat: " + std::strerror(errno));
  }
  bytes->assign(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes->size()) {
    ssize_t n = read(fd, &(*bytes)[done], bytes->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  bytes->resize(done);
  return Status::OK();
}

}  // namespace

const char* DiskFaultKindName(DiskFaultKind kind) {
  switch (kind) {
    case DiskFaultKind::kNone:
      return "none";
    case DiskFaultKind::kNoSpace:
      return "ENOSPC on write";
    case DiskFaultKind::kIoError:
      return "EIO on write";
    case DiskFaultKind::kShortWrite:
      return "short write";
    case DiskFaultKind::kFsyncFails:
      return "EIO from fsync";
  }
  return "?";
}

std::string DescribeDiskFault(const DiskFault& fault) {
  const std::string nth = Ordinal(fault.nth);
  std::string text;
  switch (fault.kind) {
    case DiskFaultKind::kNone:
      return "no fault";
    case DiskFaultKind::kNoSpace:
      text = "ENOSPC on the " + nth + " write under the root";
      break;
    case DiskFaultKind::kIoError:
      text = "EIO on the " + nth + " write under the root";
      break;
    case DiskFaultKind::kShortWrite:
      text = "a short write (half its bytes) on the " + nth +
             " write of 2 bytes or more under the root";
      break;
    case DiskFaultKind::kFsyncFails:
      text = "EIO from the " + nth + " fsync or fdatasync under the root";
      break;
  }
  return fault.sticky ? text + " (and every later one)" : text;
}

Status FsInterposerPath(std::string* path) {
  const char* from_env = std::getenv(kInterposerEnv);
  if (from_env != nullptr && from_env[0] != '\0') {
    if (!IsFile(from_env)) {
      return Status::NotFound(std::string("$") + kInterposerEnv + " names " + from_env +
                              ", which is not a file");
    }
    *path = from_env;
    return Status::OK();
  }
  std::string tried = std::string("$") + kInterposerEnv + " (unset)";
#ifdef CKPTSPEC_FS_INTERPOSER_BUILD_PATH
  if (IsFile(CKPTSPEC_FS_INTERPOSER_BUILD_PATH)) {
    *path = CKPTSPEC_FS_INTERPOSER_BUILD_PATH;
    return Status::OK();
  }
  tried += std::string(", ") + CKPTSPEC_FS_INTERPOSER_BUILD_PATH;
#endif
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string beside(exe, static_cast<size_t>(n));
    beside = beside.substr(0, beside.rfind('/') + 1) + kInterposerFileName;
    if (IsFile(beside)) {
      *path = beside;
      return Status::OK();
    }
    tried += ", " + beside;
  }
  return Status::NotFound("no file-system interposer (" + std::string(kInterposerFileName) +
                          "): tried " + tried);
}

Status FsRecorder::Create(const std::string& dir, std::unique_ptr<FsRecorder>* out) {
  std::string interposer;
  CKPTSPEC_RETURN_IF_ERROR(FsInterposerPath(&interposer));
  char canonical[PATH_MAX];
  if (realpath(dir.c_str(), canonical) == nullptr) {
    return Status::NotFound("the recorder's directory " + dir + ": " + std::strerror(errno));
  }
  const std::string path = std::string(canonical) + "/fsrec.control";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError(path + ": cannot create: " + std::strerror(errno));
  if (ftruncate(fd, sizeof(CkptspecFsControl)) != 0) {
    Status error = Status::IOError(path + ": cannot size: " + std::strerror(errno));
    close(fd);
    return error;
  }
  void* page = mmap(nullptr, sizeof(CkptspecFsControl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int mmap_errno = errno;
  close(fd);
  if (page == MAP_FAILED) {
    return Status::IOError(path + ": cannot map: " + std::strerror(mmap_errno));
  }
  auto* control = static_cast<CkptspecFsControl*>(page);
  pthread_mutexattr_t shared;
  pthread_mutexattr_init(&shared);
  pthread_mutexattr_setpshared(&shared, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&shared, PTHREAD_MUTEX_ROBUST);
  const int initialised = pthread_mutex_init(&control->order_lock, &shared);
  pthread_mutexattr_destroy(&shared);
  if (initialised != 0) {
    munmap(page, sizeof(CkptspecFsControl));
    return Status::IOError(path +
                           ": cannot initialise its order lock: " + std::strerror(initialised));
  }
  control->magic = CKPTSPEC_FSREC_MAGIC;
  control->version = CKPTSPEC_FSREC_VERSION;
  out->reset(new FsRecorder(path, interposer, control));
  return Status::OK();
}

FsRecorder::~FsRecorder() { munmap(control_, sizeof(CkptspecFsControl)); }

std::vector<std::string> FsRecorder::ChildEnvironment() const {
  std::string preload = "LD_PRELOAD=" + interposer_;
  const char* existing = std::getenv("LD_PRELOAD");
  if (existing != nullptr && existing[0] != '\0') preload += std::string(":") + existing;
  return {preload, std::string(CKPTSPEC_FSREC_CONTROL_ENV) + "=" + control_path_};
}

template <typename Change>
void FsRecorder::Update(Change change) {
  __atomic_add_fetch(&control_->generation, 1, __ATOMIC_ACQ_REL);  // odd: changing
  change(control_);
  __atomic_add_fetch(&control_->generation, 1, __ATOMIC_ACQ_REL);  // even: done
}

Status FsRecorder::Start(const std::string& root, const std::string& log_dir) {
  char canonical_root[PATH_MAX];
  struct stat st;
  if (realpath(root.c_str(), canonical_root) == nullptr || stat(canonical_root, &st) != 0 ||
      !S_ISDIR(st.st_mode)) {
    return Status::NotFound("the recording's root " + root + " is not an existing directory");
  }
  if (mkdir(log_dir.c_str(), 0755) != 0) {
    return Status::FailedPrecondition("the recording's log directory " + log_dir +
                                      " cannot be created empty: " + std::strerror(errno));
  }
  char canonical_log_dir[PATH_MAX];
  if (realpath(log_dir.c_str(), canonical_log_dir) == nullptr) {
    return Status::IOError("the recording's log directory " + log_dir + ": " +
                           std::strerror(errno));
  }
  const size_t limit = CKPTSPEC_FSREC_PATH_BYTES - 1;
  if (std::strlen(canonical_root) > limit || std::strlen(canonical_log_dir) > limit) {
    return Status::InvalidArgument("the recording's root or log directory is longer than " +
                                   std::to_string(limit) + " bytes");
  }
  log_dir_ = canonical_log_dir;
  Update([&](CkptspecFsControl* c) {
    std::memset(c->root, 0, sizeof(c->root));
    std::memset(c->log_dir, 0, sizeof(c->log_dir));
    std::memcpy(c->root, canonical_root, std::strlen(canonical_root));
    std::memcpy(c->log_dir, canonical_log_dir, std::strlen(canonical_log_dir));
    __atomic_store_n(&c->next_seq, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->unseen_events, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->fault_counter, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->faults_injected, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->recording, 1, __ATOMIC_RELEASE);
  });
  return Status::OK();
}

Status FsRecorder::Stop() {
  if (log_dir_.empty()) return Status::FailedPrecondition("no recording was started");
  Update([](CkptspecFsControl* c) { __atomic_store_n(&c->recording, 0, __ATOMIC_RELEASE); });
  return Status::OK();
}

void FsRecorder::SetFault(const DiskFault& fault) {
  Update([&](CkptspecFsControl* c) {
    __atomic_store_n(&c->fault_kind, ControlFaultKind(fault.kind), __ATOMIC_RELEASE);
    __atomic_store_n(&c->fault_nth, fault.nth, __ATOMIC_RELEASE);
    __atomic_store_n(&c->fault_sticky, fault.sticky ? 1u : 0u, __ATOMIC_RELEASE);
    __atomic_store_n(&c->fault_counter, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&c->faults_injected, 0, __ATOMIC_RELEASE);
  });
}

void FsRecorder::ClearFault() { SetFault(DiskFault()); }

uint64_t FsRecorder::faults_injected() const {
  return __atomic_load_n(&control_->faults_injected, __ATOMIC_ACQUIRE);
}

uint64_t FsRecorder::unseen_events() const {
  return __atomic_load_n(&control_->unseen_events, __ATOMIC_ACQUIRE);
}

uint64_t FsRecorder::operations_so_far() const {
  return __atomic_load_n(&control_->next_seq, __ATOMIC_ACQUIRE);
}

Status FsRecorder::ReadRecording(std::vector<FsOp>* ops) const {
  ops->clear();
  if (log_dir_.empty()) return Status::FailedPrecondition("no recording was started");
  DIR* dir = opendir(log_dir_.c_str());
  if (dir == nullptr) {
    return Status::IOError("the recording's log directory " + log_dir_ + ": " +
                           std::strerror(errno));
  }
  std::vector<std::string> logs;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind("rec.", 0) == 0 && name.size() > 8 && name.substr(name.size() - 4) == ".bin") {
      logs.push_back(log_dir_ + "/" + name);
    }
  }
  closedir(dir);
  std::sort(logs.begin(), logs.end());
  for (const std::string& log : logs) {
    std::string bytes;
    CKPTSPEC_RETURN_IF_ERROR(ReadWholeFile(log, &bytes));
    CKPTSPEC_RETURN_IF_ERROR(ParseRecordingLog(bytes, log, ops));
  }
  std::sort(ops->begin(), ops->end(), [](const FsOp& a, const FsOp& b) { return a.seq < b.seq; });
  const uint64_t taken = operations_so_far();
  for (size_t i = 0; i < ops->size(); ++i) {
    const uint64_t seq = (*ops)[i].seq;
    if (seq != i) {
      std::string what = seq < i ? "is in two records" : "has no record";
      const uint64_t named = seq < i ? seq : i;
      return Status::Corruption("the recording in " + log_dir_ + ": operation " +
                                std::to_string(named) + " " + what +
                                " (a process ended or was killed while recording it?)");
    }
  }
  if (ops->size() < taken) {
    return Status::Corruption("the recording in " + log_dir_ + ": operation " +
                              std::to_string(ops->size()) + " has no record (" +
                              std::to_string(taken) +
                              " were taken; a process ended or was killed while recording?)");
  }
  if (ops->size() > taken) {
    return Status::Corruption("the recording in " + log_dir_ + ": " + std::to_string(ops->size()) +
                              " records, but only " + std::to_string(taken) +
                              " operations were taken");
  }
  return Status::OK();
}

}  // namespace ckptspec
