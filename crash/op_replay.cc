#include "crash/op_replay.h"

#include <algorithm>
#include <cstring>

#include "crash/fs_op_describe.h"
#include "model/content.h"

namespace ckptspec {

namespace {

// A streaming 128-bit digest: two independent multiply-mix lanes over 8-byte words.
class ReplayDigester {
 public:
  void AddBytes(const char* data, size_t size) {
    AddWord(size);
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
      uint64_t word;
      std::memcpy(&word, data + i, 8);
      AddWord(word);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, data + i, size - i);
    AddWord(tail);
  }
  void AddString(const std::string& s) { AddBytes(s.data(), s.size()); }
  void AddWord(uint64_t word) {
    a_ = (a_ ^ word) * 0x9E3779B97F4A7C15ull;
    a_ = (a_ << 29) | (a_ >> 35);
    b_ = (b_ + word) * 0xD6E8FEB86659FD93ull;
    b_ ^= b_ >> 31;
  }
  TreeDigest Finish() const { return TreeDigest{Mix64(a_ ^ 0x5851F42D4C957F2Dull), Mix64(b_)}; }

 private:
  uint64_t a_ = 0x243F6A8885A308D3ull;
  uint64_t b_ = 0x13198A2E03707344ull;
};

bool IsEntryOp(FsOpKind kind) {
  switch (kind) {
    case FsOpKind::kCreate:
    case FsOpKind::kMkdir:
    case FsOpKind::kRename:
    case FsOpKind::kLink:
    case FsOpKind::kUnlink:
    case FsOpKind::kRmdir:
      return true;
    default:
      return false;
  }
}

std::string OpInWords(const std::vector<FsOp>& ops, size_t i) {
  return "op " + std::to_string(i) + " (seq " + std::to_string(ops[i].seq) + ", pid " +
         std::to_string(ops[i].pid) + ": " + DescribeFsOp(ops[i]) + ")";
}

std::string InodeInWords(const FileId& id) {
  return "inode " + std::to_string(id.dev) + ":" + std::to_string(id.ino);
}

// What the trees of a replay can hold (op_replay.h's tree bound), gathered per file node.
class TreeBound {
 public:
  void AddNode() {
    largest_.push_back(0);
    names_.push_back(0);
    largest_by_.push_back(kSnapshot);
  }
  void AddInput(uint64_t bytes) { input_ = SaturatingAdd(input_, bytes); }
  void AddName(uint32_t node) { ++names_[node]; }
  void Grow(uint32_t node, uint64_t size, size_t op) {
    if (size <= largest_[node]) return;
    largest_[node] = size;
    largest_by_[node] = op;
  }
  Status Check(const std::vector<FsOp>& ops) const {
    uint64_t total = 0, worst = 0;
    size_t worst_node = 0;
    for (size_t node = 0; node < largest_.size(); ++node) {
      const uint64_t bytes = SaturatingMultiply(largest_[node], names_[node]);
      total = SaturatingAdd(total, bytes);
      if (bytes > worst) worst = bytes, worst_node = node;
    }
    const uint64_t bound =
        SaturatingAdd(SaturatingMultiply(input_, kReplayGrowthFactor), kReplaySlackBytes);
    if (total <= bound) return Status::OK();
    const size_t by = largest_by_[worst_node];
    return Status::NotSupported(
        "the crash states could hold " + std::to_string(total) + " bytes (every file's largest " +
        "size times its names), more than the " + std::to_string(bound) + " a replay builds (" +
        std::to_string(kReplayGrowthFactor) + " times the " + std::to_string(input_) +
        " bytes of the snapshot and the recorded writes, plus " +
        std::to_string(kReplaySlackBytes) +
        "); the largest: " + std::to_string(largest_[worst_node]) + " bytes under " +
        std::to_string(names_[worst_node]) + " names, its size from " +
        (by == kSnapshot ? std::string("the snapshot") : OpInWords(ops, by)));
  }

 private:
  static constexpr size_t kSnapshot = SIZE_MAX;  // Grow's `op` for a snapshot entry
  std::vector<uint64_t> largest_, names_;
  std::vector<size_t> largest_by_;  // the op that set largest_ (kSnapshot: the snapshot)
  uint64_t input_ = 0;
};

// The first index in `sorted` above `after`, or `none`.
size_t FirstAfter(const std::vector<size_t>& sorted, size_t after, size_t none) {
  auto it = std::upper_bound(sorted.begin(), sorted.end(), after);
  return it == sorted.end() ? none : *it;
}

}  // namespace

// Build's bookkeeping while it binds the snapshot's entries and the ops' inodes to nodes: the node
// each inode is bound to now, the snapshot's directories by path, and what the trees can hold.
class OpReplay::Builder {
 public:
  explicit Builder(OpReplay* out) : out_(out) {}

  // Adds the root and every snapshot entry; InvalidArgument on an entry before its parent's.
  Status AddSnapshot(const InitialTree& initial) {
    out_->root_ = NewNode(true);
    bound_[initial.root] = out_->root_;
    dir_at_path_[""] = out_->root_;
    for (const InitialEntry& entry : initial.entries) {
      CKPTSPEC_RETURN_IF_ERROR(AddSnapshotEntry(entry));
    }
    return Status::OK();
  }

  // Resolves the inodes every successful op names; errs on an incomplete recording or a bad inode.
  Status ResolveOps(const std::vector<FsOp>& ops) {
    out_->resolved_.resize(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      const FsOp& op = ops[i];
      if (op.kind == FsOpKind::kUnseen) {
        return Status::FailedPrecondition(OpInWords(ops, i) + ": the recording is incomplete (" +
                                          op.detail + "), so no crash state can be built from it");
      }
      if (op.err != 0) continue;
      CKPTSPEC_RETURN_IF_ERROR(ResolveOp(ops, i));
      ResolvedOp& r = out_->resolved_[i];
      r.changes = IsEntryOp(op.kind) || r.data_position != kNoPosition;
    }
    return Status::OK();
  }

  // NotSupported when the replayed trees could hold more than op_replay.h's tree bound.
  Status CheckTreeBound(const std::vector<FsOp>& ops) const { return tree_bound_.Check(ops); }

 private:
  // A new node, a directory or a file, in no directory yet.
  uint32_t NewNode(bool is_dir) {
    tree_bound_.AddNode();
    out_->nodes_.push_back(Node{is_dir, nullptr, {}});
    out_->initial_dirs_.children.emplace_back();
    out_->initial_dirs_.parent.push_back(kNoNode);
    out_->initial_dirs_.name.emplace_back();
    return static_cast<uint32_t>(out_->nodes_.size() - 1);
  }

  // Binds one snapshot entry under its parent; InvalidArgument where the snapshot is inconsistent.
  Status AddSnapshotEntry(const InitialEntry& entry) {
    const size_t slash = entry.path.rfind('/');
    const std::string parent_path = slash == std::string::npos ? "" : entry.path.substr(0, slash);
    const std::string name = slash == std::string::npos ? entry.path : entry.path.substr(slash + 1);
    auto parent = dir_at_path_.find(parent_path);
    if (name.empty() || parent == dir_at_path_.end()) {
      return Status::InvalidArgument("the snapshot entry '" + entry.path +
                                     "' does not follow its parent directory");
    }
    auto existing = bound_.find(entry.id);
    uint32_t node;
    if (existing != bound_.end()) {
      node = existing->second;
      if (entry.is_dir || out_->nodes_[node].is_dir) {
        return Status::InvalidArgument("the snapshot names " + InodeInWords(entry.id) +
                                       " twice ('" + entry.path + "'), as a directory");
      }
    } else {
      node = NewNode(entry.is_dir);
      bound_[entry.id] = node;
      if (!entry.is_dir) out_->nodes_[node].initial = &entry.content;
    }
    out_->initial_dirs_.children[parent->second][name] = node;
    tree_bound_.AddInput(entry.content.size());
    tree_bound_.AddName(node);
    tree_bound_.Grow(node, entry.content.size(), SIZE_MAX);
    if (entry.is_dir) {
      out_->initial_dirs_.parent[node] = parent->second;
      out_->initial_dirs_.name[node] = name;
      dir_at_path_[entry.path] = node;
    }
    return Status::OK();
  }

  // The node `id` is bound to, checking it exists and is (want_dir 1) or is not (0) a directory.
  Status Resolve(const std::vector<FsOp>& ops, size_t i, const FileId& id, const char* role,
                 int want_dir, uint32_t* node) const {
    auto it = bound_.find(id);
    if (it == bound_.end()) {
      return Status::InvalidArgument(OpInWords(ops, i) + " names " + InodeInWords(id) + " (" +
                                     role +
                                     "), which neither the snapshot nor an earlier operation "
                                     "created");
    }
    const bool is_dir = out_->nodes_[it->second].is_dir;
    if (want_dir >= 0 && is_dir != (want_dir == 1)) {
      return Status::InvalidArgument(OpInWords(ops, i) + " names " + InodeInWords(id) + " (" +
                                     role + ") as a " + (want_dir ? "directory" : "regular file") +
                                     ", but it is a " + (is_dir ? "directory" : "regular file"));
    }
    *node = it->second;
    return Status::OK();
  }

  // Resolves the nodes successful op i names into resolved_[i], binding the inode it creates.
  Status ResolveOp(const std::vector<FsOp>& ops, size_t i) {
    const FsOp& op = ops[i];
    ResolvedOp& r = out_->resolved_[i];
    switch (op.kind) {
      case FsOpKind::kCreate:
      case FsOpKind::kMkdir:
        CKPTSPEC_RETURN_IF_ERROR(Resolve(ops, i, op.dir, "its directory", 1, &r.dir));
        r.file = NewNode(op.kind == FsOpKind::kMkdir);
        bound_[op.file] = r.file;
        tree_bound_.AddName(r.file);
        break;
      case FsOpKind::kWrite:
      case FsOpKind::kTruncate: {
        CKPTSPEC_RETURN_IF_ERROR(Resolve(ops, i, op.file, "the file", 0, &r.file));
        const uint64_t end = op.kind == FsOpKind::kWrite ? op.offset + op.data.size() : op.length;
        if (end > kMaxReplayedFileBytes || (op.kind == FsOpKind::kWrite && end < op.offset)) {
          return Status::NotSupported(OpInWords(ops, i) + " makes the file larger than the " +
                                      std::to_string(kMaxReplayedFileBytes) +
                                      " bytes a replay builds");
        }
        tree_bound_.AddInput(op.data.size());
        tree_bound_.Grow(r.file, end, i);
        r.data_position = static_cast<uint32_t>(out_->nodes_[r.file].data_ops.size());
        out_->nodes_[r.file].data_ops.push_back(i);
        break;
      }
      case FsOpKind::kFsync:
      case FsOpKind::kFdatasync:
        CKPTSPEC_RETURN_IF_ERROR(Resolve(ops, i, op.file, "the file", -1, &r.file));
        break;
      case FsOpKind::kRename:
        CKPTSPEC_RETURN_IF_ERROR(Resolve(ops, i, op.file, "the entry", -1, &r.file));
        CKPTSPEC_RETURN_IF_ERROR(Resolve(ops, i, op.dir, "its source directory", 1, &r.dir));
        CKPTSPEC_RETURN_IF_ERROR(Resolve(ops, i, op.dir2, "its destination directory", 1, &r.dir2));
        break;
      case FsOpKind::kLink:
        CKPTSPEC_RETURN_IF_ERROR(Resolve(ops, i, op.file, "the file", 0, &r.file));
        CKPTSPEC_RETURN_IF_ERROR(Resolve(ops, i, op.dir2, "its new directory", 1, &r.dir2));
        tree_bound_.AddName(r.file);
        break;
      case FsOpKind::kUnlink:
      case FsOpKind::kRmdir:
        CKPTSPEC_RETURN_IF_ERROR(
            Resolve(ops, i, op.file, "the entry", op.kind == FsOpKind::kRmdir, &r.file));
        CKPTSPEC_RETURN_IF_ERROR(Resolve(ops, i, op.dir, "its directory", 1, &r.dir));
        break;
      case FsOpKind::kSyncAll:
      case FsOpKind::kUnseen:
        break;
    }
    return Status::OK();
  }

  OpReplay* out_;
  std::map<FileId, uint32_t> bound_;  // inode -> its current node
  std::map<std::string, uint32_t> dir_at_path_;
  TreeBound tree_bound_;
};

Status OpReplay::Build(const InitialTree& initial, const std::vector<FsOp>& ops, OpReplay* out) {
  *out = OpReplay();
  out->ops_ = &ops;
  Builder builder(out);
  CKPTSPEC_RETURN_IF_ERROR(builder.AddSnapshot(initial));
  CKPTSPEC_RETURN_IF_ERROR(builder.ResolveOps(ops));
  CKPTSPEC_RETURN_IF_ERROR(builder.CheckTreeBound(ops));
  out->SetDurableBy();
  return Status::OK();
}

void OpReplay::SetDurableBy() {
  // Durability: the first later sync, fsync (or, for data, fdatasync) that covers each op.
  const std::vector<FsOp>& ops = *ops_;
  const size_t n = ops.size();
  std::vector<std::vector<size_t>> fsyncs(nodes_.size()), datasyncs(nodes_.size());
  std::vector<size_t> syncs;
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].err != 0) continue;
    if (ops[i].kind == FsOpKind::kSyncAll) syncs.push_back(i);
    if (ops[i].kind == FsOpKind::kFsync) fsyncs[resolved_[i].file].push_back(i);
    if (ops[i].kind == FsOpKind::kFsync || ops[i].kind == FsOpKind::kFdatasync) {
      datasyncs[resolved_[i].file].push_back(i);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    ResolvedOp& r = resolved_[i];
    size_t by = FirstAfter(syncs, i, n);
    if (r.changes && r.data_position != kNoPosition) {
      by = std::min(by, FirstAfter(datasyncs[r.file], i, n));
    } else if (r.changes) {
      const FsOpKind kind = ops[i].kind;
      const uint32_t first = kind == FsOpKind::kLink ? r.dir2 : r.dir;
      size_t entry_by = FirstAfter(fsyncs[first], i, n);
      if (kind == FsOpKind::kRename)
        entry_by = std::max(entry_by, FirstAfter(fsyncs[r.dir2], i, n));
      by = std::min(by, entry_by);
    }
    r.durable_by = by;
  }
}

std::vector<size_t> OpReplay::NonDurable(size_t k) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < k; ++i) {
    if (resolved_[i].changes && resolved_[i].durable_by >= k) out.push_back(i);
  }
  return out;
}

void OpReplay::CloseLost(size_t k, size_t torn, LostFlags* lost) const {
  for (const Node& node : nodes_) {
    bool cut = false;
    for (size_t i : node.data_ops) {
      if (i >= k) break;
      if (cut) (*lost)[i] = 1;
      if ((*lost)[i] || i == torn) cut = true;
    }
  }
}

Status OpReplay::CheckPoint(size_t k, const std::vector<size_t>& lost, const size_t* torn,
                            uint64_t torn_bytes) const {
  const std::vector<FsOp>& ops = *ops_;
  if (k > ops.size()) {
    return Status::InvalidArgument("the crash point comes after " + std::to_string(k) +
                                   " operations, but the recording has " +
                                   std::to_string(ops.size()));
  }
  LostFlags flags(ops.size(), 0);
  auto check_droppable = [&](size_t i, const char* what) -> Status {
    if (i >= k) {
      return Status::InvalidArgument(std::string("the ") + what + " operation " +
                                     std::to_string(i) + " did not complete before the crash (" +
                                     std::to_string(k) + " operations did)");
    }
    if (!resolved_[i].changes) {
      return Status::InvalidArgument(std::string("the ") + what + " " + OpInWords(ops, i) +
                                     " changes nothing that a crash could lose");
    }
    if (resolved_[i].durable_by < k) {
      return Status::InvalidArgument(std::string("the ") + what + " " + OpInWords(ops, i) +
                                     " was made durable by " +
                                     OpInWords(ops, resolved_[i].durable_by));
    }
    return Status::OK();
  };
  for (size_t i : lost) {
    CKPTSPEC_RETURN_IF_ERROR(check_droppable(i, "lost"));
    flags[i] = 1;
  }
  size_t torn_index = ops.size();
  if (torn != nullptr) {
    CKPTSPEC_RETURN_IF_ERROR(check_droppable(*torn, "torn"));
    if (ops[*torn].kind != FsOpKind::kWrite || flags[*torn] ||
        torn_bytes > ops[*torn].data.size()) {
      return Status::InvalidArgument("the torn " + OpInWords(ops, *torn) +
                                     " is not a write that persisted " +
                                     std::to_string(torn_bytes) + " of its bytes");
    }
    torn_index = *torn;
  }
  LostFlags closed = flags;
  CloseLost(k, torn_index, &closed);
  if (closed != flags) {
    const size_t i = static_cast<size_t>(
        std::mismatch(closed.begin(), closed.end(), flags.begin()).first - closed.begin());
    return Status::InvalidArgument(OpInWords(ops, i) +
                                   " persisted after an earlier write or truncate of its file "
                                   "was lost or torn: one file's data persists in order");
  }
  return Status::OK();
}

void OpReplay::ReplayEntries(size_t k, const LostFlags& lost, Dirs* dirs) const {
  *dirs = initial_dirs_;
  auto detach_dir = [&](uint32_t node) {
    const uint32_t parent = dirs->parent[node];
    if (parent == kNoNode) return;
    auto it = dirs->children[parent].find(dirs->name[node]);
    if (it != dirs->children[parent].end() && it->second == node) dirs->children[parent].erase(it);
    dirs->parent[node] = kNoNode;
  };
  auto remove = [&](uint32_t dir, const std::string& name, uint32_t node) {
    auto it = dirs->children[dir].find(name);
    if (it == dirs->children[dir].end() || it->second != node) return;
    dirs->children[dir].erase(it);
    if (nodes_[node].is_dir) dirs->parent[node] = kNoNode;
  };
  auto attach = [&](uint32_t dir, const std::string& name, uint32_t node) {
    auto it = dirs->children[dir].find(name);
    if (it != dirs->children[dir].end() && nodes_[it->second].is_dir) {
      dirs->parent[it->second] = kNoNode;
    }
    if (nodes_[node].is_dir) {
      detach_dir(node);
      dirs->parent[node] = dir;
      dirs->name[node] = name;
    }
    dirs->children[dir][name] = node;
  };
  const std::vector<FsOp>& ops = *ops_;
  for (size_t i = 0; i < k; ++i) {
    const ResolvedOp& r = resolved_[i];
    if (!r.changes || lost[i] || r.data_position != kNoPosition) continue;
    const FsOp& op = ops[i];
    switch (op.kind) {
      case FsOpKind::kCreate:
      case FsOpKind::kMkdir:
        attach(r.dir, op.name, r.file);
        break;
      case FsOpKind::kLink:
        attach(r.dir2, op.name2, r.file);
        break;
      case FsOpKind::kRename: {
        // POSIX: a rename onto a name of the same inode does nothing.
        auto dest = dirs->children[r.dir2].find(op.name2);
        if (dest != dirs->children[r.dir2].end() && dest->second == r.file) break;
        if (nodes_[r.file].is_dir) {
          detach_dir(r.file);
        } else {
          remove(r.dir, op.name, r.file);
        }
        attach(r.dir2, op.name2, r.file);
        break;
      }
      case FsOpKind::kUnlink:
      case FsOpKind::kRmdir:
        remove(r.dir, op.name, r.file);
        break;
      default:
        break;
    }
  }
}

void OpReplay::CutData(size_t k, const LostFlags& lost, size_t torn,
                       std::vector<DataCut>* cuts) const {
  cuts->assign(nodes_.size(), DataCut());
  for (size_t node = 0; node < nodes_.size(); ++node) {
    DataCut& cut = (*cuts)[node];
    for (size_t i : nodes_[node].data_ops) {
      if (i >= k || lost[i]) break;
      if (i == torn) {
        cut.torn = true;
        break;
      }
      ++cut.persisted;
    }
  }
}

std::string OpReplay::ContentOf(uint32_t node, DataCut cut, uint64_t torn_bytes) const {
  const Node& n = nodes_[node];
  std::string content = n.initial != nullptr ? *n.initial : std::string();
  const uint32_t applied = cut.persisted + (cut.torn ? 1 : 0);
  for (uint32_t p = 0; p < applied; ++p) {
    const FsOp& op = (*ops_)[n.data_ops[p]];
    if (op.kind == FsOpKind::kTruncate) {
      content.resize(op.length, '\0');
      continue;
    }
    const uint64_t end = op.offset + op.data.size();
    if (content.size() < end) content.resize(end, '\0');
    const bool is_torn = cut.torn && p + 1 == applied;
    const size_t kept = is_torn ? static_cast<size_t>(torn_bytes) : op.data.size();
    std::memcpy(&content[op.offset], op.data.data(), kept);
  }
  return content;
}

void OpReplay::Reachable(const Dirs& dirs,
                         std::vector<std::pair<std::string, uint32_t>>* out) const {
  out->clear();
  std::vector<char> on_path(nodes_.size(), 0);
  struct Frame {
    uint32_t dir;
    std::string prefix;
    std::map<std::string, uint32_t>::const_iterator next;
  };
  std::vector<Frame> stack;
  stack.push_back(Frame{root_, "", dirs.children[root_].begin()});
  on_path[root_] = 1;
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next == dirs.children[top.dir].end()) {
      on_path[top.dir] = 0;
      stack.pop_back();
      continue;
    }
    const std::string& name = top.next->first;
    const uint32_t node = top.next->second;
    ++top.next;
    if (!nodes_[node].is_dir) {
      out->emplace_back(top.prefix + name, node);
      continue;
    }
    if (on_path[node]) continue;  // a cycle left by a dropped rename
    std::string prefix = top.prefix + name + "/";
    if (dirs.children[node].empty()) {
      out->emplace_back(std::move(prefix), kNoNode);
      continue;
    }
    on_path[node] = 1;
    stack.push_back(Frame{node, std::move(prefix), dirs.children[node].begin()});
  }
}

void OpReplay::Layout(size_t k, const LostFlags& lost, size_t torn, std::vector<DataCut>* cuts,
                      std::vector<std::pair<std::string, uint32_t>>* reachable) const {
  Dirs dirs;
  ReplayEntries(k, lost, &dirs);
  CutData(k, lost, torn, cuts);
  Reachable(dirs, reachable);
}

void OpReplay::BuildTree(size_t k, const LostFlags& lost, size_t torn, uint64_t torn_bytes,
                         std::map<std::string, std::string>* tree) const {
  std::vector<DataCut> cuts;
  std::vector<std::pair<std::string, uint32_t>> reachable;
  Layout(k, lost, torn, &cuts, &reachable);
  tree->clear();
  for (auto& [path, node] : reachable) {
    (*tree)[path] = node == kNoNode ? std::string() : ContentOf(node, cuts[node], torn_bytes);
  }
}

TreeDigest OpReplay::DigestTree(size_t k, const LostFlags& lost, size_t torn, uint64_t torn_bytes) {
  std::vector<DataCut> cuts;
  std::vector<std::pair<std::string, uint32_t>> reachable;
  Layout(k, lost, torn, &cuts, &reachable);
  ReplayDigester tree;
  for (const auto& [path, node] : reachable) {
    tree.AddString(path);
    if (node == kNoNode) continue;
    const DataCut cut = cuts[node];
    const auto key = std::make_tuple(node, cut.persisted, cut.torn ? torn_bytes + 1 : 0);
    auto it = content_digests_.find(key);
    if (it == content_digests_.end()) {
      ReplayDigester content;
      content.AddString(ContentOf(node, cut, torn_bytes));
      it = content_digests_.emplace(key, content.Finish()).first;
    }
    tree.AddWord(it->second.a);
    tree.AddWord(it->second.b);
  }
  return tree.Finish();
}

}  // namespace ckptspec
