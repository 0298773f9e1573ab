// The harness's side of the scratch files that carry entry bytes between it and an adapter
// (docs/PROTOCOL.md, "Entries"), built on the assumption that the adapter is hostile: it runs as
// the same user and may plant links, FIFOs or other files anywhere it can guess.
//
// Contracts:
//  - A ScratchSpace holds a descriptor of the work directory (opened without following a link)
//    for its whole life; every call directory is made and opened relative to it, with a fresh
//    unpredictable name, mode 0700. Renaming the work directory, or replacing it by a link, does
//    not move where the harness writes or reads.
//  - A ScratchDir writes each file it creates exclusively (O_CREAT|O_EXCL|O_NOFOLLOW, relative to
//    its descriptor): a planted file or link at that name is an error, never written through.
//  - Read() opens relative to the descriptor with O_NOFOLLOW|O_NONBLOCK, so it neither follows a
//    link nor waits for a FIFO's writer; anything that is not a regular file is kUnsafe with what
//    it is; a file larger than the caller's bound is refused before anything is allocated.
//  - The destructor removes the call directory and everything the adapter put in it, never
//    following a link (PosixRemoveTreeAt).
//  - Entry names are plain file names (no '/', not "." or ".."); another name is an error.
//  - Nothing throws; errors are Status values naming the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "model/status.h"

namespace ckptspec {

class ScratchDir {
 public:
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // The absolute path an adapter is given for entry `name` (a plain file name, no '/').
  std::string PathOf(const std::string& name) const;

  // Creates `name` exclusively and writes `size` bytes. IOError naming the path on failure
  // (AlreadyExists-like failures included: nothing is written through what was there).
  Status Write(const std::string& name, const void* data, size_t size);

  enum class ReadResult {
    kOk,
    kMissing,   // no file of that name
    kUnsafe,    // not a regular file: *what says what it is ("a symbolic link", "a FIFO", ...)
    kTooLarge,  // more than max_size bytes: *what gives the size
    kError,     // an I/O error: *what says which
  };
  ReadResult Read(const std::string& name, uint64_t max_size, std::string* out,
                  std::string* what) const;

 private:
  friend class ScratchSpace;
  ScratchDir(int parent_fd, std::string parent_path, std::string name, int fd);

  int parent_fd_;  // the ScratchSpace's (not owned)
  std::string parent_path_;
  std::string name_;
  int fd_;
};

class ScratchSpace {
 public:
  // Opens `work_dir`, which must be an existing directory (not a link to one).
  static Status Open(const std::string& work_dir, std::unique_ptr<ScratchSpace>* out);
  ~ScratchSpace();
  ScratchSpace(const ScratchSpace&) = delete;
  ScratchSpace& operator=(const ScratchSpace&) = delete;

  // A new, empty call directory "call-<16 random hex digits>".
  Status NewCallDir(std::unique_ptr<ScratchDir>* out);

 private:
  ScratchSpace(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;
};

}  // namespace ckptspec
