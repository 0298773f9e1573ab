// The coordinator's side of the file-system recorder: a control file shared with the interposer
// (crash/fs_interposer.c, protocol and record format in crash/fs_control.h) that every process
// started with ChildEnvironment() maps, to record what it does under a checkpoint root and to
// have storage faults injected there.
//
// Contracts:
//  - One FsRecorder per control file; its methods are called from one thread. The processes it
//    records may be many, with threads and children (forked or started afresh) of their own.
//  - The recording is complete only once every recorded process has finished its calls: a
//    process still inside a call (or killed inside one) leaves a sequence number without its
//    record, which ReadRecording reports as an error.
//  - What the interposer cannot see is listed in crash/fs_control.h; what it sees but cannot
//    follow is recorded as FsOpKind::kUnseen (and counted by unseen_events()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "crash/fs_op.h"
#include "model/status.h"

struct CkptspecFsControl;

namespace ckptspec {

enum class DiskFaultKind : uint8_t { kNone, kNoSpace, kIoError, kShortWrite, kFsyncFails };

// "none", "ENOSPC on write", "EIO on write", "short write", "EIO from fsync".
const char* DiskFaultKindName(DiskFaultKind kind);

// A storage fault: the `nth` (1-based) of the kind's counted operations under the root, across
// every recorded process, fails (and, when `sticky`, every later one). Counted operations: the
// write family (write, pwrite, writev, pwritev...; for kShortWrite only those of 2 bytes or more,
// which write half the bytes, rounded down, and return that count) or, for kFsyncFails, fsync and
// fdatasync.
struct DiskFault {
  DiskFaultKind kind = DiskFaultKind::kNone;
  uint64_t nth = 1;
  bool sticky = false;
};

// "ENOSPC on the 3rd write under the root (and every later one)", "no fault".
std::string DescribeDiskFault(const DiskFault& fault);

// The interposer's path: $CKPTSPEC_FS_INTERPOSER when set (an error when it names no file), else
// the one this build made, else libckptspec_fs_interposer.so beside the running executable; an
// error naming what was tried when none exists.
Status FsInterposerPath(std::string* path);

class FsRecorder {
 public:
  // Creates the control file inside `dir` (an existing directory the caller owns). Recording off,
  // no fault. Fails when no interposer is found (FsInterposerPath) or the file cannot be made.
  static Status Create(const std::string& dir, std::unique_ptr<FsRecorder>* out);
  ~FsRecorder();  // unmaps; the file is left to the owner of `dir`
  FsRecorder(const FsRecorder&) = delete;
  FsRecorder& operator=(const FsRecorder&) = delete;

  // The environment entries a recorded process needs ("LD_PRELOAD=...",
  // "CKPTSPEC_FSREC_CONTROL=..."); an LD_PRELOAD already in this process's environment is kept
  // after ours.
  std::vector<std::string> ChildEnvironment() const;

  // Records every operation under `root` (an existing directory; canonicalised) into `log_dir`
  // (created empty; it must not exist, its parent must). The fault set stays armed; its counter
  // and faults_injected() restart, and so do operations_so_far() and unseen_events().
  Status Start(const std::string& root, const std::string& log_dir);
  // No more recording (processes keep running; an armed fault stays armed under the last root).
  Status Stop();
  // Armed from now; its counter and faults_injected() restart. Faults are injected under the
  // root of the last Start, recording or not.
  void SetFault(const DiskFault& fault);
  void ClearFault();
  uint64_t faults_injected() const;
  uint64_t unseen_events() const;
  // Operations completed so far in this recording (the next seq): a caller notes it when a save
  // reports success.
  uint64_t operations_so_far() const;

  // What was recorded since Start, sorted by seq (0, 1, ... operations_so_far() - 1), paths
  // relative to the root. Errors name the log file and what is malformed (bounded reads: a
  // record claiming more bytes than the file holds is an error, not an allocation), and a
  // sequence number no log holds (a record lost) or two records hold.
  Status ReadRecording(std::vector<FsOp>* ops) const;

  const std::string& control_path() const { return control_path_; }

 private:
  FsRecorder(std::string control_path, std::string interposer, CkptspecFsControl* control)
      : control_path_(std::move(control_path)),
        interposer_(std::move(interposer)),
        control_(control) {}
  // Runs `change` on the control's fields under its sequence lock (generation odd meanwhile).
  template <typename Change>
  void Update(Change change);

  std::string control_path_;
  std::string interposer_;
  CkptspecFsControl* control_;
  std::string log_dir_;  // of the last Start; empty before
};

}  // namespace ckptspec
