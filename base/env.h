// Env: every file operation of a target goes through this interface (LevelDB's Env pattern), so
// that tests can run a save against an in-memory file system that crashes, drops unsynced data,
// corrupts reads or fails writes (mem_env.h), and benchmarks against the real disk (PosixEnv).
// The faults are a wrapper over any Env (fault_injection_env.h), so they reach the real disk too.
//
// Paths are '/'-separated strings. Contracts common to every implementation:
//  - Every method returns a Status; none throws or aborts. IOError for environment failures,
//    NotFound for a path that does not exist.
//  - NewWritableFile creates or truncates. Appended data is durable only after Sync(); a file's
//    directory entry (creation, rename, removal) is durable only after SyncDir() of its parent.
//  - RenameFile(src, dst) is atomic. It replaces an existing dst file; a directory may be renamed
//    onto a path that does not exist (or an empty directory).
//  - CreateDir succeeds when the directory already exists; it does not create parents.
//  - GetChildren lists names (no "." or ".."), sorted.
//  - Implementations are safe to call from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/status.h"

namespace ckptspec {

class WritableFile {
 public:
  WritableFile() = default;
  WritableFile(const WritableFile&) = delete;  // a polymorphic base: never copied
  WritableFile& operator=(const WritableFile&) = delete;
  virtual ~WritableFile() = default;
  virtual Status Append(const void* data, size_t size) = 0;
  // Makes everything appended so far durable.
  virtual Status Sync() = 0;
  // Releases the file; later calls fail. Does not sync. Idempotent.
  virtual Status Close() = 0;
};

class RandomAccessFile {
 public:
  RandomAccessFile() = default;
  RandomAccessFile(const RandomAccessFile&) = delete;  // a polymorphic base: never copied
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;
  virtual ~RandomAccessFile() = default;
  // Reads up to `size` bytes at `offset` into `out`; *bytes_read < size only at the end of file.
  virtual Status Read(uint64_t offset, size_t size, void* out, size_t* bytes_read) const = 0;
};

class Env {
 public:
  Env() = default;
  Env(const Env&) = delete;  // a polymorphic base: never copied
  Env& operator=(const Env&) = delete;
  virtual ~Env() = default;

  // The process-wide POSIX environment (never deleted).
  static Env* Posix();

  virtual Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) = 0;
  virtual Status NewRandomAccessFile(const std::string& path,
                                     std::unique_ptr<RandomAccessFile>* out) = 0;
  virtual Status GetFileSize(const std::string& path, uint64_t* size) = 0;
  // OK when `path` exists (file or directory), NotFound when it does not.
  virtual Status FileExists(const std::string& path) = 0;
  virtual Status IsDirectory(const std::string& path, bool* is_dir) = 0;
  virtual Status GetChildren(const std::string& dir, std::vector<std::string>* names) = 0;
  virtual Status CreateDir(const std::string& dir) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Removes an empty directory.
  virtual Status RemoveDir(const std::string& dir) = 0;
  virtual Status RenameFile(const std::string& src, const std::string& dst) = 0;
  // Makes the directory's entries (creations, renames, removals in it) durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  // Removes a file, or a directory with everything under it. Never follows a symbolic link: a
  // link (at `path` or anywhere below it) is removed itself, whatever it points to, so nothing
  // outside `path` is ever touched. NotFound when `path` does not exist. The default works
  // through the methods above and suits an Env without links; PosixEnv overrides it with
  // descriptor-relative calls that no concurrent rename or link swap can redirect.
  virtual Status RemoveTree(const std::string& path);
  // Bytes the file occupies in storage: its allocated blocks where files may be sparse (POSIX),
  // its size where they cannot (the default). A 64 GiB sparse file may occupy 100 KB.
  virtual Status GetFileStoredSize(const std::string& path, uint64_t* size);
  // A view of this Env confined to the tree under `root`, for reading untrusted checkpoints
  // (docs/SECURITY.md, "Containment"; confined_view.h has the whole contract): no path below
  // `root` is resolved through a symbolic link (a link is refused, Corruption naming it), only
  // regular files are opened or sized (a FIFO, a device or a socket is refused before it is
  // opened), paths outside `root` are refused, and writes pass to this Env unchanged. `root`
  // itself is opened as given. The view refers to this Env, which must outlive it. The default
  // checks paths lexically and suits an Env without links or special files (MemEnv); PosixEnv
  // overrides it with descriptor-relative, no-follow opens.
  virtual Status NewConfinedView(const std::string& root, std::unique_ptr<Env>* out);
};

// "a/b" from ("a", "b"); no normalisation.
std::string JoinPath(const std::string& dir, const std::string& name);
// The parent of "a/b/c" is "a/b"; of "/a" is "/"; of "a" is ".".
std::string ParentDir(const std::string& path);

// Creates (or truncates) `path`, appends `data`, syncs and closes it. Does not sync the directory.
Status WriteFileSynced(Env* env, const std::string& path, const std::string& data);
// Atomically replaces `path` with `data`: writes "<path>.tmp", syncs it, renames it over `path`
// and syncs the parent directory. After a crash `path` holds either the old or the new content.
Status ReplaceFileAtomically(Env* env, const std::string& path, const std::string& data);
// Reads a whole file whose size must not exceed `max_size` (checked before allocating).
Status ReadFileToString(Env* env, const std::string& path, uint64_t max_size, std::string* out);
// Reads exactly `size` bytes at `offset`; a short read is a Corruption naming the file.
Status ReadExactly(const RandomAccessFile& file, const std::string& path, uint64_t offset,
                   size_t size, void* out);
// RemoveTree's step for a directory: RemoveTree of each of `dir`'s children, then RemoveDir(dir),
// each through `env`. For an Env whose RemoveTree walks the tree through its own calls.
Status RemoveDirContentsAndDir(Env* env, const std::string& dir);
// Creates `dir` and its missing parents (without syncing).
Status CreateDirs(Env* env, const std::string& dir);

}  // namespace ckptspec
