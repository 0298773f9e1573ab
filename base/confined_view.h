// Env::NewConfinedView: an Env that reads only inside one directory tree, for checkpoints nobody
// vouches for (`ckptspec verify`, the reference loader).
//
// Contract of every view (the default one here, PosixEnv's in posix_confined_view.h):
//  - A path is accepted when it is `root` or below it ("root/a/b"); empty and "." components are
//    skipped. Any other path, or one with a ".." component, is InvalidArgument
//    "<path> is outside the checkpoint root <root>".
//  - Reading (NewRandomAccessFile, GetFileSize, GetFileStoredSize, FileExists, IsDirectory,
//    GetChildren) never resolves a component below `root` through a symbolic link. A link met on
//    the way, or named by the path, is Corruption
//      "<root>/iter_0000003/shard_00001.bin is a symbolic link leaving the checkpoint root; links
//       are not followed"
//    ("... is a symbolic link inside the checkpoint root; links are not followed" when its target
//    names a place below the root). Links are refused either way: the reference never writes one,
//    and following one safely would mean resolving its target with the same care.
//  - NewRandomAccessFile, GetFileSize and GetFileStoredSize accept only regular files; anything
//    else (a FIFO, a character or block device, a socket, a directory) is Corruption
//    "<path> is a FIFO, not a regular file", refused before it is opened.
//  - `root` itself is the caller's choice and is opened as given, through links if it names one.
//  - Writes (NewWritableFile, CreateDir, RemoveFile, RemoveDir, RenameFile, SyncDir, RemoveTree)
//    pass to the underlying Env unchanged, paths outside the root included.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/env_wrapper.h"

namespace ckptspec {

// The components of `path` below `root` (empty for `root` itself); InvalidArgument as above.
Status SplitBelowRoot(const std::string& root, const std::string& path,
                      std::vector<std::string>* components);

// What an inode of mode `mode` is, for messages: "a FIFO", "a directory", "a socket", ...
const char* FileKindName(unsigned mode);

// The refusal of a link at `path` (below the root); `leaves_root` chooses the wording above.
Status LinkRefused(const std::string& path, bool leaves_root);
// The refusal of a file that is not regular: "<path> is <kind>, not a regular file".
Status NotRegularFile(const std::string& path, unsigned mode);

// The parts every view shares: the underlying Env, the root, and writes passed through.
class ConfinedView : public EnvWrapper {
 public:
  ConfinedView(Env* base, std::string root) : EnvWrapper(base), root_(std::move(root)) {}

  // Every read is confined: a view must implement each of them (none reaches the base as it is).
  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* out) override = 0;
  Status GetFileSize(const std::string& path, uint64_t* size) override = 0;
  Status GetFileStoredSize(const std::string& path, uint64_t* size) override = 0;
  Status FileExists(const std::string& path) override = 0;
  Status IsDirectory(const std::string& path, bool* is_dir) override = 0;
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override = 0;

 protected:
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

}  // namespace ckptspec
