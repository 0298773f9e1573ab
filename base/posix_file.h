// Pieces of the POSIX Env that its confined view (posix_confined_view.h) shares.
#pragma once

#include <dirent.h>

#include <memory>
#include <string>
#include <vector>

#include "base/env.h"

namespace ckptspec {

// "<context>: <strerror>": NotFound for ENOENT, IOError otherwise.
Status PosixError(const std::string& context, int err);

// Appends the entries of the open directory `dir` (without "." and "..") to *names, sorted,
// and closes it.
void ReadDirectoryNames(DIR* dir, std::vector<std::string>* names);

// A RandomAccessFile reading the open descriptor `fd` with pread (it takes the descriptor and
// closes it); `path` names it in errors.
std::unique_ptr<RandomAccessFile> AdoptPosixReadableFile(std::string path, int fd);

}  // namespace ckptspec
