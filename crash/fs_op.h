// What a recorded process did to the file system under a checkpoint root: the operations the
// interposer (crash/fs_interposer.c) sees, in the order they completed across every process of a
// recording, as crash/recording.h reads them back and crash/crash_states.h replays them.
//
// Contracts:
//  - Files and directories are named by their inode (FileId), never by a path: a write lands in
//    the file its descriptor was opened on, wherever a rename has moved it since.
//  - Only operations that succeeded change anything; a failed one (err != 0) is kept so that a
//    report can show it (an injected fault is marked `injected`).
//  - Paths (`path`, `path2`) are relative to the recording's root, for messages only.
#pragma once

#include <cstdint>
#include <string>

namespace ckptspec {

// An inode: its device and number.
struct FileId {
  uint64_t dev = 0;
  uint64_t ino = 0;
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
  bool operator!=(const FileId& o) const { return !(*this == o); }
  bool operator<(const FileId& o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
};

enum class FsOpKind : uint8_t {
  kCreate,     // a new regular file `file` named `name` in `dir` (open with O_CREAT, creat)
  kMkdir,      // a new directory `file` named `name` in `dir`
  kWrite,      // `data` written into `file` at `offset` (write, pwrite, writev, ...)
  kTruncate,   // `file` cut or extended to `length` (ftruncate, truncate, open with O_TRUNC)
  kFsync,      // fsync(2) of `file` (a regular file or a directory): its data and metadata
  kFdatasync,  // fdatasync(2) of `file`: its data (and its size)
  kSyncAll,    // sync(2) or syncfs(2): everything before it
  kRename,     // the entry `name` of `dir` (inode `file`) moved to `name2` of `dir2`, replacing
               // what `name2` named (`replaced`, when it named something)
  kLink,       // a new entry `name2` of `dir2` for the existing `file`
  kUnlink,     // the entry `name` of `dir` (inode `file`) removed (unlink, unlinkat)
  kRmdir,      // the empty directory `file`, entry `name` of `dir`, removed
  kUnseen,     // something the interposer cannot follow touched the root (`detail` says what):
               // the recording is incomplete and no crash state may be judged from it
};

const char* FsOpKindName(FsOpKind kind);

struct FsOp {
  uint64_t seq = 0;  // the global order of completion, across every recorded process
  int32_t pid = 0;   // the process that made the call
  FsOpKind kind = FsOpKind::kUnseen;
  FileId file;            // the inode the operation acts on
  FileId dir;             // entry operations: the directory holding `name`
  std::string name;       // entry operations: the entry's name (one path component)
  FileId dir2;            // kRename, kLink: the destination directory
  std::string name2;      // kRename, kLink: the destination name
  FileId replaced;        // kRename: the inode `name2` named before (dev 0 and ino 0: none)
  uint64_t offset = 0;    // kWrite: where the data went
  uint64_t length = 0;    // kTruncate: the new size
  std::string data;       // kWrite: the bytes written (as many as the call reported)
  int err = 0;            // the errno the call failed with; 0: it succeeded
  bool injected = false;  // the failure (or the short write) was injected
  std::string path;       // for messages: the (first) path, relative to the root
  std::string path2;      // for messages: kRename/kLink's destination, relative to the root
  std::string detail;     // kUnseen: what was not seen ("mmap of a file under the root", ...)
};

}  // namespace ckptspec
