// InMemoryEnv: an Env whose files live in memory, with the durability model of a disk that can
// lose power. It counts nothing and injects no fault: FaultInjectionEnv (fault_injection_env.h)
// does that over any Env, and MemEnv (mem_env.h) puts one over an InMemoryEnv. Its messages call
// it "MemEnv", the name tests and reports know it by.
//
// Durability model (what survives SimulatePowerLoss()):
//  - A file's content survives up to the size it had at its last Sync(); the unsynced tail is lost.
//  - Each directory keeps two entry tables: live (what calls see) and durable (what survives).
//    SyncDir(d) copies d's live table to its durable one. So a file or directory created, renamed
//    into or removed from d since d's last SyncDir is undone by a power loss: a renamed entry may
//    end up in both directories or in neither, as on a real file system without a journal.
//  - The root "/" always exists.
//  - A file opened for writing before a power loss is dead: Append, Sync and Close fail with
//    IOError "<path>: file died in a crash". A file opened for reading reads what is stored now.
//
// Paths are absolute; a "." or ".." component is InvalidArgument. There are no links and no
// special files. Every call is atomic: the Env is safe to call from several threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/env.h"

namespace ckptspec {

class InMemoryEnv : public Env {
 public:
  InMemoryEnv();
  ~InMemoryEnv() override;

  Status NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status NewRandomAccessFile(const std::string& path,
                             std::unique_ptr<RandomAccessFile>* out) override;
  Status GetFileSize(const std::string& path, uint64_t* size) override;
  Status FileExists(const std::string& path) override;
  Status IsDirectory(const std::string& path, bool* is_dir) override;
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override;
  Status CreateDir(const std::string& dir) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& dir) override;
  Status RenameFile(const std::string& src, const std::string& dst) override;
  Status SyncDir(const std::string& dir) override;

  // Drops what the durability model above does not keep.
  void SimulatePowerLoss();
  // Change what is stored (live and durable), as a disk's decay would; reads see the change.
  Status CorruptStoredByte(const std::string& path, uint64_t offset, uint8_t xor_mask);
  Status TruncateStored(const std::string& path, uint64_t size);
  // Total bytes held in files reachable from the live tree.
  uint64_t LiveBytes() const;

 private:
  struct FileNode;
  struct Entry {
    bool is_dir = false;
    int64_t id = 0;
    bool operator==(const Entry& o) const { return is_dir == o.is_dir && id == o.id; }
  };
  struct DirNode {  // looked up by views of a path's parts
    std::map<std::string, Entry, std::less<>> live;
    std::map<std::string, Entry, std::less<>> durable;
  };
  class MemWritableFile;
  class MemRandomAccessFile;

  // Splits and checks a path into views of `path`; "." and ".." components are rejected.
  static Status SplitPath(const std::string& path, std::vector<std::string_view>* parts);
  // Resolves the directory holding `path`'s last component. Caller holds mu_.
  Status ResolveParent(const std::string& path, int64_t* dir_id, std::string* name);
  Status Resolve(const std::string& path, Entry* entry);
  void CollectGarbage();

  mutable std::mutex mu_;
  std::unordered_map<int64_t, std::shared_ptr<FileNode>> files_;
  std::unordered_map<int64_t, DirNode> dirs_;
  int64_t next_id_ = 1;
  int64_t generation_ = 0;  // bumped by SimulatePowerLoss: older writable files are dead
};

}  // namespace ckptspec
