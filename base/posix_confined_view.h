// PosixEnv's confined view (contract: confined_view.h).
//
// Every read opens the root as given, then walks the components below it one at a time with
// openat(O_DIRECTORY | O_NOFOLLOW), each relative to the descriptor of the one before, so no
// link below the root is ever resolved, and a directory swapped for a link during the walk is
// refused rather than followed. A file is looked at with fstatat(AT_SYMLINK_NOFOLLOW) first (a
// link, a FIFO or a device is refused without being opened), then opened with O_NOFOLLOW |
// O_NONBLOCK | O_NOCTTY and checked again with fstat: it must be the same regular file.
// GetFileStoredSize is the file's allocated blocks (st_blocks * 512).
#pragma once

#include <memory>
#include <string>

#include "base/env.h"

namespace ckptspec {

// `base` (the POSIX Env) receives the writes; it must outlive the view.
Status NewPosixConfinedView(Env* base, const std::string& root, std::unique_ptr<Env>* out);

}  // namespace ckptspec
