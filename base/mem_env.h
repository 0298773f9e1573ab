// MemEnv: an in-memory Env with deterministic fault injection, modelled on LevelDB's
// fault_injection_test.cc.
//
// Durability model (what survives SimulatePowerLoss()):
//  - A file's content survives up to the size it had at its last Sync(); the unsynced tail is lost.
//  - Each directory keeps two entry tables: live (what calls see) and durable (what survives).
//    SyncDir(d) copies d's live table to its durable one. So a file or directory created, renamed
//    into or removed from d since d's last SyncDir is undone by a power loss: a renamed entry may
//    end up in both directories or in neither, as on a real file system without a journal.
//  - The root "/" always exists.
//
// Operation counting: every call on the Env or on a file it handed out (Append, Sync, Close, Read)
// is one operation, numbered 0, 1, 2, ... in call order since the last ResetOpCount(). With a
// single thread the numbering is deterministic, so a test can run a save once, read op_count(),
// and then replay it crashing at every k in [0, op_count()).
//
// Faults:
//  - CrashAtOp(k): operation k and every later one fail with IOError ("crashed"); nothing they
//    would do happens. SimulatePowerLoss() then drops unsynced data and lets calls succeed again
//    (the machine restarted). Files opened before the crash stay dead.
//  - FailOp(k): operation k fails with IOError once; later operations run normally.
//  - FailWritesTo(substr): every Append to a path containing substr fails with IOError.
//  - AddReadFault: reads of a path see a flipped bit or a truncated file (the stored bytes stay).
//  - CorruptStoredByte / TruncateStored: change what is stored (live and durable).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/env.h"

namespace ckptspec {

struct ReadFault {
  enum class Kind { kFlipBit, kTruncate };
  std::string path;  // exact path
  Kind kind = Kind::kFlipBit;
  uint64_t offset = 0;  // kFlipBit: the byte whose bit flips; kTruncate: the size reads see
  int bit = 0;
};

class MemEnv : public Env {
 public:
  MemEnv();
  ~MemEnv() override;

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

  // --- fault injection and inspection (all thread-safe) ---
  int64_t op_count() const;
  void ResetOpCount();
  // One line per operation since ResetOpCount(): "17 Append /ckpt/iter_0000001.tmp/shard_00000.bin".
  std::vector<std::string> op_log() const;
  void CrashAtOp(int64_t k);
  bool crashed() const;
  void SimulatePowerLoss();
  void FailOp(int64_t k);
  void FailWritesTo(const std::string& path_substring);
  void AddReadFault(const ReadFault& fault);
  void ClearFaults();  // crash point, failing ops, failing writes and read faults
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
  // One operation of the log: its index, its name (a string literal) and its path, kept in
  // log_paths_ so that counting an operation costs no allocation of its own.
  struct OpRecord {
    int64_t index = 0;
    const char* name = "";
    size_t path_begin = 0;
    size_t path_size = 0;
  };
  class MemWritableFile;
  class MemRandomAccessFile;

  // Counts and logs one operation and applies crash/fail faults. `name` is a string literal.
  // Caller holds mu_.
  Status BeginOp(const char* name, const std::string& path);
  // Splits and checks a path into views of `path`; "." and ".." components are rejected.
  static Status SplitPath(const std::string& path, std::vector<std::string_view>* parts);
  // Resolves the directory holding `path`'s last component. Caller holds mu_.
  Status ResolveParent(const std::string& path, int64_t* dir_id, std::string* name);
  Status Resolve(const std::string& path, Entry* entry);
  void CollectGarbage();
  Status ReadLocked(const std::shared_ptr<FileNode>& file, const std::string& path, uint64_t offset,
                    size_t size, void* out, size_t* bytes_read);

  mutable std::mutex mu_;
  std::unordered_map<int64_t, std::shared_ptr<FileNode>> files_;
  std::unordered_map<int64_t, DirNode> dirs_;
  int64_t next_id_ = 1;
  int64_t generation_ = 0;  // bumped by SimulatePowerLoss: older handles are dead
  int64_t ops_ = 0;
  int64_t crash_at_ = -1;
  bool crashed_ = false;
  std::vector<int64_t> fail_ops_;
  std::vector<std::string> fail_writes_;
  std::vector<ReadFault> read_faults_;
  std::vector<OpRecord> log_;
  std::string log_paths_;  // the paths of log_, one after another
};

}  // namespace ckptspec
