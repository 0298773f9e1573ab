// Removal of a directory tree on the local file system that never follows a symbolic link
// (PosixEnv::RemoveTree; see Env::RemoveTree for the contract).
//
// Every step is relative to a descriptor of the directory being emptied (openat with O_NOFOLLOW,
// unlinkat), so a link met anywhere, or a directory swapped for a link while the removal runs, is
// unlinked itself and never entered: nothing outside `path` is removed.
#pragma once

#include <string>

#include "model/status.h"

namespace ckptspec {

Status PosixRemoveTree(const std::string& path);

// The same for entry `name` of the directory open at `parent_fd`, whose path `parent_path` is
// used only in messages.
Status PosixRemoveTreeAt(int parent_fd, const std::string& parent_path, const std::string& name);

}  // namespace ckptspec
