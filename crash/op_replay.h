// The replay of a recording (crash/fs_op.h) on an abstract file system of inodes, the engine of
// crash/crash_states.h: which operations a crash point keeps, and the tree that results.
//
// Contracts:
//  - OpReplay::Build checks the recording once: an FsOpKind::kUnseen operation (the recording is
//    incomplete) is a FailedPrecondition naming its detail; an operation naming an inode that
//    neither the snapshot nor an earlier successful create or mkdir made, or naming a file where a
//    directory is needed (or the reverse), is an InvalidArgument naming the operation and the
//    inode; a file that would grow past kMaxReplayedFileBytes is NotSupported, and so is a
//    recording whose trees could outgrow what it and the snapshot hold (the tree bound below).
//    Failed operations
//    (err != 0) are kept for messages and change nothing.
//  - Inodes are resolved when the recording is read: a create or mkdir starts a new file even if
//    the file system reused the number of one unlinked earlier, so a write lands in the file its
//    descriptor was opened on, wherever renames have moved it.
//  - Durability follows crash/persistence_model.h: DurableBy(i) is the index of the first
//    operation whose completion makes operation i durable (op_count() when none does), so op i
//    is durable in a crash after k operations exactly when DurableBy(i) < k.
//  - A crash point is the number of completed operations k and the set of state-changing
//    operations below k that did not persist (`lost`, one flag per operation), with at most one
//    write kept torn (its first `torn_bytes` bytes). Everything else below k persisted and is
//    applied in order: entry operations to the directories, data operations to the inodes.
//  - Entry operations apply as their outcome: create, mkdir and link make the name name the
//    inode; unlink and rmdir remove the name only if it still names the inode; rename removes the
//    source name if it still names the inode (a directory leaves wherever it was: a directory has
//    one name) and makes the destination name it; a rename onto a name that already names the
//    inode does nothing (POSIX: two links of one file). A directory whose entry did not persist, and
//    everything in it, is unreachable and absent from the tree.
//  - Trees are as crash/crash_states.h's FileTree: relative path -> bytes, an empty directory as
//    "dir/" -> "". Hard links appear under each name. A directory cycle (only possible when a
//    weak state drops a rename) is cut where it closes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "crash/fs_op.h"
#include "crash/initial_tree.h"
#include "model/status.h"

namespace ckptspec {

// The largest file a replay builds (a write's end or a truncate's length beyond it is refused).
inline constexpr uint64_t kMaxReplayedFileBytes = uint64_t{1} << 30;

// The tree bound: a replay's trees hold at most, over every file, its largest size (snapshot
// content, a write's end, a truncate's length) times the names it can have (snapshot entries,
// its create, links). A recording is not replayed when that exceeds kReplayGrowthFactor times
// the bytes it and the snapshot hold (every snapshot entry's content, every recorded write's data)
// plus kReplaySlackBytes: a log of a few records naming far offsets, long truncates or many links
// would otherwise cost gigabytes (holes and hard links are copied into every tree).
inline constexpr uint64_t kReplayGrowthFactor = 4;
inline constexpr uint64_t kReplaySlackBytes = uint64_t{1} << 20;

// Counts and byte totals a hostile recording could overflow stop at UINT64_MAX.
inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
inline uint64_t SaturatingMultiply(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

// A 128-bit digest of a tree: trees with equal digests are taken to be equal.
struct TreeDigest {
  uint64_t a = 0;
  uint64_t b = 0;
  bool operator==(const TreeDigest& o) const { return a == o.a && b == o.b; }
};

class OpReplay {
 public:
  // One flag per operation (index < op_count()): nonzero where it did not persist.
  using LostFlags = std::vector<char>;

  // Keeps pointers into `initial` and `ops`: both must outlive the replay.
  static Status Build(const InitialTree& initial, const std::vector<FsOp>& ops, OpReplay* out);

  size_t op_count() const { return ops_->size(); }
  // Whether operation i succeeded and changes the tree (not a sync of any kind).
  bool ChangesState(size_t i) const { return resolved_[i].changes; }
  bool IsDataOp(size_t i) const { return resolved_[i].data_position != kNoPosition; }
  size_t DurableBy(size_t i) const { return resolved_[i].durable_by; }

  // The state-changing operations below k that are not durable there, in order.
  std::vector<size_t> NonDurable(size_t k) const;

  // Marks lost every data operation below k of a file that follows one of its lost operations
  // or `torn` (the data operations of one file persist in order).
  void CloseLost(size_t k, size_t torn, LostFlags* lost) const;

  // Checks that a crash point can happen under the model: lost and torn operations below k,
  // state-changing and not durable there, torn a write with torn_bytes <= its size, and the data
  // operations of each file persisting in order. `lost` is a list of operation indexes.
  Status CheckPoint(size_t k, const std::vector<size_t>& lost, const size_t* torn,
                    uint64_t torn_bytes) const;

  // The tree of the crash point (k, lost, torn): torn is op_count() for none. The point is taken
  // as checked by CheckPoint or built by CloseLost.
  void BuildTree(size_t k, const LostFlags& lost, size_t torn, uint64_t torn_bytes,
                 std::map<std::string, std::string>* tree) const;

  // The digest of the same tree, without building it: file contents are digested once per
  // (file, persisted data operations) and remembered in this object.
  TreeDigest DigestTree(size_t k, const LostFlags& lost, size_t torn, uint64_t torn_bytes);

 private:
  static constexpr uint32_t kNoNode = UINT32_MAX;
  static constexpr uint32_t kNoPosition = UINT32_MAX;

  struct ResolvedOp {
    uint32_t file = kNoNode;
    uint32_t dir = kNoNode;
    uint32_t dir2 = kNoNode;
    bool changes = false;
    uint32_t data_position = kNoPosition;  // a data op: its place among its file's data ops
    size_t durable_by = 0;
  };
  struct Node {
    bool is_dir = false;
    const std::string* initial = nullptr;  // a snapshot file's content
    std::vector<size_t> data_ops;          // a file's successful writes and truncates, in order
  };
  // The directories of one replayed state.
  struct Dirs {
    std::vector<std::map<std::string, uint32_t>> children;  // by node; empty for files
    std::vector<uint32_t> parent;                           // a directory's parent (kNoNode)
    std::vector<std::string> name;                          // a directory's name in its parent
  };
  // Per file node: how many of its data ops persisted, and whether the next is torn.
  struct DataCut {
    uint32_t persisted = 0;
    bool torn = false;
  };

  // Build's steps: binds the snapshot's entries and the ops' inodes to nodes (op_replay.cc).
  class Builder;
  // Sets each op's durable_by: the first later sync or fsync (a data op: or fdatasync) covering it.
  void SetDurableBy();

  void ReplayEntries(size_t k, const LostFlags& lost, Dirs* dirs) const;
  void CutData(size_t k, const LostFlags& lost, size_t torn, std::vector<DataCut>* cuts) const;
  std::string ContentOf(uint32_t node, DataCut cut, uint64_t torn_bytes) const;
  // The files (node) and empty directories (kNoNode, path ending in '/') reachable from the root,
  // depth first, names in byte order within a directory.
  void Reachable(const Dirs& dirs, std::vector<std::pair<std::string, uint32_t>>* out) const;
  // The data cuts of the crash point and what is reachable in it.
  void Layout(size_t k, const LostFlags& lost, size_t torn, std::vector<DataCut>* cuts,
              std::vector<std::pair<std::string, uint32_t>>* reachable) const;

  const std::vector<FsOp>* ops_ = nullptr;
  std::vector<ResolvedOp> resolved_;
  std::vector<Node> nodes_;
  uint32_t root_ = 0;
  Dirs initial_dirs_;
  // (node, persisted data ops, torn bytes + 1 or 0) -> digest of the content and its size.
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, TreeDigest> content_digests_;
};

}  // namespace ckptspec
