// The adapter harness's temporary directories, named after the process that owns them, so that
// those a ckptspec left behind (SIGKILL gives it no moment to remove them) are reclaimed by the
// next one that starts.
//
// Contracts:
//  - MakeOwnedTempDir(root, &path) creates a fresh directory (mkdtemp, mode 0700) under `root`
//    named "ckptspec-adapter-<pid>-<start>-<pidns>-XXXXXX": the pid of this process, its start
//    time (field 22 of /proc/PID/stat, in clock ticks after boot: a pid used again by a later
//    process has another), and the inode of its PID namespace (/proc/self/ns/pid: a pid means
//    something only there). Where /proc cannot tell these, the name is
//    "ckptspec-adapter-<pid>-XXXXXX", which is never reclaimed. An IOError names the pattern.
//  - ReclaimAbandonedTempDirs(root) removes each entry of `root` that has exactly the first form,
//    is a directory (lstat: a symbolic link is left alone, not followed), belongs to this user,
//    was made in this PID namespace, and whose owner is gone: no process has that pid, or the one
//    that has it started at another time. The removal never follows a symbolic link
//    (PosixRemoveTreeAt). Nothing else is touched: other names, live owners, other namespaces,
//    owners that cannot be judged (a process that exists but whose /proc entry does not read).
//    Returns the names removed. Best effort: an entry that cannot be removed is left.
//  - Limits: a directory on a file system shared with another host is judged by this host's
//    processes (so its namespace should not be the other host's: do not point $TMPDIR or
//    $CKPTSPEC_SCRATCH_DIR of two hosts at one shared directory); an owner that is a zombie
//    (ended, not yet reaped) counts as alive until it is reaped.
#pragma once

#include <string>
#include <vector>

#include "model/status.h"

namespace ckptspec {

Status MakeOwnedTempDir(const std::string& root, std::string* path);

std::vector<std::string> ReclaimAbandonedTempDirs(const std::string& root);

}  // namespace ckptspec
