// FaultInjectionEnv: an Env over any other that counts its operations and makes chosen ones fail,
// as LevelDB's fault-injection Env does, so that the same crashes and errors can be put into a
// save on the in-memory store (MemEnv) or on a real disk (Env::Posix()).
//
// Operation counting: every call on this Env or on a file it handed out (Append, Sync, Close,
// Read) is one operation, numbered 0, 1, 2, ... in call order since the last ResetOpCount(). A
// call is numbered and passed on to the base under one lock, so the numbering is also the order in
// which the calls reached the base; with a single thread it is deterministic, so a test can run a
// save once, read op_count(), and then replay it crashing at every k in [0, op_count()). Two
// exceptions: Close() of a file already closed is OK and counts nothing; RemoveTree is not one
// operation but Env's walk through the calls above (each counted), so a crash can fall inside it.
// A file's Append or Sync after its Close is FailedPrecondition "<path>: use after close".
//
// Faults (a failing operation is still numbered and logged; it does not reach the base):
//  - CrashAtOp(k): operation k and every later one fail with IOError
//    "<path>: <operation> after a simulated crash". Restart() lets calls succeed again (the
//    machine restarted); files opened before it stay dead: their Append, Sync and Close fail with
//    IOError "<path>: file died in a crash". What the base keeps of the writes is the base's
//    business (MemEnv::SimulatePowerLoss drops what was not synced, then calls Restart()).
//  - FailOp(k): operation k fails once with IOError
//    "<path>: injected I/O error in <operation> (operation <k>)"; later operations run normally.
//  - FailWritesTo(substr): every Append to a path containing substr fails with IOError
//    "<path>: injected write error".
//  - AddReadFault: Read and GetFileSize of a path see a flipped bit or a truncated file; the base's
//    bytes stay as they are.
// An operation's path is the one it was called with; RenameFile's is "<src> -> <dst>".
//
// The base is not owned and must outlive this Env and the files it handed out. NewConfinedView is
// Env's default, a lexical view through the counted calls: over an Env with symbolic links it does
// not refuse them, so it is no containment for trees nobody vouches for. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/env_wrapper.h"

namespace ckptspec {

struct ReadFault {
  enum class Kind { kFlipBit, kTruncate };
  std::string path;  // exact path
  Kind kind = Kind::kFlipBit;
  uint64_t offset = 0;  // kFlipBit: the byte whose bit flips; kTruncate: the size reads see
  int bit = 0;
};

class FaultInjectionEnv : public EnvWrapper {
 public:
  explicit FaultInjectionEnv(Env* base);
  ~FaultInjectionEnv() override;

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
  // Env's walk (IsDirectory, GetChildren, RemoveFile, RemoveDir through this Env), except that it
  // descends only into what the base's confined view of the parent calls a directory: a symbolic
  // link is removed itself, whatever it points to, as Env's contract asks.
  Status RemoveTree(const std::string& path) override;
  // One operation; a kTruncate read fault caps it as it caps GetFileSize.
  Status GetFileStoredSize(const std::string& path, uint64_t* size) override;

  int64_t op_count() const;
  void ResetOpCount();
  // One line per operation since ResetOpCount(): "17 Append /ckpt/iter_0000001.tmp/shard_00000.bin".
  std::vector<std::string> op_log() const;
  void CrashAtOp(int64_t k);
  bool crashed() const;
  // Calls succeed again; files opened before stay dead. The crash point is cleared, the other
  // faults stay.
  void Restart();
  void FailOp(int64_t k);
  void FailWritesTo(const std::string& path_substring);
  void AddReadFault(const ReadFault& fault);
  void ClearFaults();  // crash point, failing ops, failing writes and read faults

 private:
  // One operation of the log: its index, its name (a string literal) and its path, kept in
  // log_paths_ so that counting an operation costs no allocation of its own.
  struct OpRecord {
    int64_t index = 0;
    const char* name = "";
    size_t path_begin = 0;
    size_t path_size = 0;
  };
  class CountedWritableFile;
  class CountedRandomAccessFile;

  // Counts and logs one operation and applies crash/fail faults. `name` is a string literal.
  // Caller holds mu_.
  Status BeginOp(const char* name, const std::string& path);
  // `size` capped by the kTruncate read faults of `path`. Caller holds mu_.
  uint64_t VisibleSize(const std::string& path, uint64_t size) const;
  // Reads through `file` (opened on `path`) with the read faults applied. Caller holds mu_.
  Status ReadLocked(const RandomAccessFile& file, const std::string& path, uint64_t offset,
                    size_t size, void* out, size_t* bytes_read);

  mutable std::mutex mu_;
  int64_t generation_ = 0;  // bumped by Restart: older writable files are dead
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
