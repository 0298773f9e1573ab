// The state of a checkpoint root before a recorded save: every file and directory under it, with
// its inode, so that the recorded operations (crash/fs_op.h, which name files by inode) can be
// replayed on it (crash/crash_states.h).
//
// Contracts:
//  - Paths are relative to the root, '/'-separated, without a leading or trailing slash; entries
//    come parents first (a directory before anything in it), names in byte order within a
//    directory. The root itself is not an entry; its inode is `root`.
//  - Only regular files and directories are allowed (lstat: a symbolic link is never followed);
//    a symbolic link, device, fifo or socket under the root is an InvalidArgument naming it.
//  - A file with several names (hard links) is listed under each, with the same id and content.
//  - More than `max_bytes` of file content in all (a hard-linked file counted once) is an
//    InvalidArgument naming the file that crossed the bound: a bound on memory.
//  - The tree is read as it is: a root that changes while it is read gives no consistent
//    snapshot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crash/fs_op.h"
#include "model/status.h"

namespace ckptspec {

struct InitialEntry {
  std::string path;  // relative to the root, '/'-separated
  FileId id;
  bool is_dir = false;
  std::string content;  // a regular file's bytes; empty for a directory
};

struct InitialTree {
  FileId root;
  std::vector<InitialEntry> entries;  // every file and directory under root, parents first
};

// The tree under `root` as it is now (lstat, so inodes are those the recorded ops will name).
Status SnapshotDirectory(const std::string& root, uint64_t max_bytes, InitialTree* out);

}  // namespace ckptspec
