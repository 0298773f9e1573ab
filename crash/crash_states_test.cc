// Crash states of hand-written recordings of the classic checkpoint patterns (atomic replace,
// rename before fsync, create without a directory fsync, a tracker before its data), the bounds
// and errors, and MaterializeTree.
#include "crash/crash_states.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "crash/fs_op_describe.h"
#include "crash/initial_tree.h"
#include "base/env.h"

namespace ckptspec {
namespace {

// Builds a recording by path, the way the interposer names things: by inode.
class Recording {
 public:
  Recording() { ids_[""] = root(); }
  FileId root() const { return FileId{1, 1}; }

  // A file or directory that exists before the save, with its content.
  void Existing(const std::string& path, const std::string& content, bool is_dir = false) {
    const FileId id = NewId();
    ids_[path] = id;
    initial_.entries.push_back(InitialEntry{path, id, is_dir, content});
  }
  InitialTree initial() const {
    InitialTree tree = initial_;
    tree.root = root();
    return tree;
  }
  const std::vector<FsOp>& ops() const { return ops_; }

  void Create(const std::string& path) { AddEntry(FsOpKind::kCreate, path); }
  void Mkdir(const std::string& path) { AddEntry(FsOpKind::kMkdir, path); }
  void Write(const std::string& path, uint64_t offset, const std::string& data) {
    FsOp op = On(FsOpKind::kWrite, path);
    op.offset = offset;
    op.data = data;
    Add(op);
  }
  void Truncate(const std::string& path, uint64_t length) {
    FsOp op = On(FsOpKind::kTruncate, path);
    op.length = length;
    Add(op);
  }
  void Fsync(const std::string& path) { Add(On(FsOpKind::kFsync, path)); }
  void Fdatasync(const std::string& path) { Add(On(FsOpKind::kFdatasync, path)); }
  void Sync() {
    FsOp op;
    op.pid = 1;
    op.kind = FsOpKind::kSyncAll;
    Add(op);
  }
  void Rename(const std::string& from, const std::string& to) {
    FsOp op = On(FsOpKind::kRename, from);
    op.dir = ids_.at(Parent(from));
    op.name = Base(from);
    op.dir2 = ids_.at(Parent(to));
    op.name2 = Base(to);
    op.path2 = to;
    if (ids_.count(to)) op.replaced = ids_.at(to);
    // Everything under `from` moves with it.
    std::map<std::string, FileId> moved;
    for (auto it = ids_.begin(); it != ids_.end();) {
      if (it->first == from || it->first.rfind(from + "/", 0) == 0) {
        moved[to + it->first.substr(from.size())] = it->second;
        it = ids_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [p, id] : moved) ids_[p] = id;
    Add(op);
  }
  void Unlink(const std::string& path) {
    FsOp op = On(FsOpKind::kUnlink, path);
    op.dir = ids_.at(Parent(path));
    op.name = Base(path);
    ids_.erase(path);
    Add(op);
  }
  void Unseen(const std::string& detail) {
    FsOp op;
    op.kind = FsOpKind::kUnseen;
    op.detail = detail;
    Add(op);
  }
  void Raw(const FsOp& op) { Add(op); }
  FileId IdOf(const std::string& path) const { return ids_.at(path); }

 private:
  static std::string Parent(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? "" : path.substr(0, slash);
  }
  static std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }
  FileId NewId() { return FileId{1, next_ino_++}; }
  FsOp On(FsOpKind kind, const std::string& path) {
    FsOp op;
    op.kind = kind;
    op.file = ids_.at(path);
    op.path = path;
    return op;
  }
  void AddEntry(FsOpKind kind, const std::string& path) {
    FsOp op;
    op.kind = kind;
    op.file = NewId();
    op.dir = ids_.at(Parent(path));
    op.name = Base(path);
    op.path = path;
    ids_[path] = op.file;
    Add(op);
  }
  void Add(FsOp op) {
    op.seq = ops_.size();
    op.pid = 1;
    ops_.push_back(op);
  }

  InitialTree initial_;
  std::vector<FsOp> ops_;
  std::map<std::string, FileId> ids_;
  uint64_t next_ino_ = 2;
};

struct BuiltState {
  CrashPoint point;
  FileTree tree;
};

// Every distinct state of the recording, built.
std::vector<BuiltState> AllStates(const Recording& rec, CrashStateOptions options = {}) {
  CrashStates states;
  const Status st = EnumerateCrashStates(rec.initial(), rec.ops(), options, &states);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<BuiltState> out;
  for (const CrashPoint& point : states.distinct) {
    BuiltState built{point, {}};
    const Status b = BuildCrashState(rec.initial(), rec.ops(), point, &built.tree);
    EXPECT_TRUE(b.ok()) << b.ToString();
    out.push_back(std::move(built));
  }
  return out;
}

CrashPoint WeakPoint(uint64_t after_ops, std::vector<size_t> lost) {
  CrashPoint point;
  point.model = PersistenceModel::kPosixWeak;
  point.after_ops = after_ops;
  point.lost = std::move(lost);
  return point;
}

// The tree of `point`, which must be reachable.
FileTree TreeAt(const Recording& rec, const CrashPoint& point) {
  FileTree tree;
  const Status st = BuildCrashState(rec.initial(), rec.ops(), point, &tree);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return tree;
}

std::string Show(const BuiltState& s, const Recording& rec) {
  std::string out = s.point.Describe(rec.ops()) + ":";
  for (const auto& [path, content] : s.tree) out += " " + path + "='" + content + "'";
  return out;
}

TEST(CrashStates, AtomicReplaceLeavesOldOrNewNeverEmpty) {
  Recording rec;
  rec.Existing("meta", "old");
  rec.Create("meta.tmp");
  rec.Write("meta.tmp", 0, "new!");
  rec.Fsync("meta.tmp");
  rec.Rename("meta.tmp", "meta");
  rec.Fsync("");
  std::set<std::string> seen;
  for (const BuiltState& s : AllStates(rec)) {
    ASSERT_TRUE(s.tree.count("meta")) << Show(s, rec);
    const std::string& meta = s.tree.at("meta");
    EXPECT_TRUE(meta == "old" || meta == "new!") << Show(s, rec);
    seen.insert(meta);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"old", "new!"}));
}

TEST(CrashStates, RenameBeforeFsyncGivesAnEmptyFileUnderTheNewName) {
  Recording rec;
  rec.Existing("meta", "old");
  rec.Create("meta.tmp");
  rec.Write("meta.tmp", 0, "new!");
  rec.Rename("meta.tmp", "meta");
  rec.Fsync("");
  bool empty_weak = false;
  for (const BuiltState& s : AllStates(rec)) {
    const bool empty = s.tree.count("meta") && s.tree.at("meta").empty();
    if (s.point.model == PersistenceModel::kOrdered) {
      EXPECT_FALSE(empty) << Show(s, rec);
    }
    if (empty) empty_weak = true;
  }
  EXPECT_TRUE(empty_weak) << "no weak state with an empty 'meta'";
  // Still there after the directory fsync: the rename is durable, the write is not.
  EXPECT_EQ(TreeAt(rec, WeakPoint(rec.ops().size(), {1})), (FileTree{{"meta", ""}}));
}

TEST(CrashStates, CreateWithoutDirectoryFsyncMayVanish) {
  Recording rec;
  rec.Create("f");
  rec.Write("f", 0, "data");
  rec.Fsync("f");
  CrashPoint vanished = WeakPoint(rec.ops().size(), {0});
  EXPECT_TRUE(TreeAt(rec, vanished).empty());
  // The data was made durable: whenever f is there after the fsync, it holds it.
  for (const BuiltState& s : AllStates(rec)) {
    if (s.point.after_ops == rec.ops().size() && s.tree.count("f")) {
      EXPECT_EQ(s.tree.at("f"), "data") << Show(s, rec);
    }
  }

  rec.Fsync("");
  vanished.after_ops = rec.ops().size();
  FileTree tree;
  EXPECT_EQ(BuildCrashState(rec.initial(), rec.ops(), vanished, &tree).code(),
            Status::Code::kInvalidArgument);
  for (const BuiltState& s : AllStates(rec)) {
    if (s.point.after_ops == rec.ops().size()) {
      ASSERT_TRUE(s.tree.count("f")) << Show(s, rec);
      EXPECT_EQ(s.tree.at("f"), "data") << Show(s, rec);
    }
  }
}

TEST(CrashStates, TrackerWrittenBeforeItsDataIsSyncedCanPointAtMissingData) {
  Recording rec;
  rec.Mkdir("iter_1");
  rec.Create("iter_1/weights");
  rec.Write("iter_1/weights", 0, "WEIGHTS");
  rec.Create("latest");
  rec.Write("latest", 0, "1");
  rec.Fsync("latest");
  rec.Fsync("");
  bool dangling = false;
  for (const BuiltState& s : AllStates(rec)) {
    const bool tracker_new = s.tree.count("latest") && s.tree.at("latest") == "1";
    const bool data_whole =
        s.tree.count("iter_1/weights") && s.tree.at("iter_1/weights") == "WEIGHTS";
    if (s.point.model == PersistenceModel::kOrdered && tracker_new) {
      EXPECT_TRUE(data_whole) << Show(s, rec);
    }
    if (tracker_new && !data_whole) dangling = true;
  }
  EXPECT_TRUE(dangling);

  // Syncing the data and its directories first closes the hole.
  Recording fixed;
  fixed.Mkdir("iter_1");
  fixed.Create("iter_1/weights");
  fixed.Write("iter_1/weights", 0, "WEIGHTS");
  fixed.Fsync("iter_1/weights");
  fixed.Fsync("iter_1");
  fixed.Fsync("");
  fixed.Create("latest");
  fixed.Write("latest", 0, "1");
  fixed.Fsync("latest");
  fixed.Fsync("");
  for (const BuiltState& s : AllStates(fixed)) {
    if (s.tree.count("latest") && s.tree.at("latest") == "1") {
      ASSERT_TRUE(s.tree.count("iter_1/weights")) << Show(s, fixed);
      EXPECT_EQ(s.tree.at("iter_1/weights"), "WEIGHTS") << Show(s, fixed);
    }
  }
}

TEST(CrashStates, TornWriteKeepsAPrefixAndZerosUpToItsEnd) {
  Recording rec;
  rec.Existing("f", "abcdefgh");
  rec.Write("f", 6, "XXXXXXXX");
  std::set<std::string> contents;
  for (const BuiltState& s : AllStates(rec)) contents.insert(s.tree.at("f"));
  EXPECT_EQ(contents, (std::set<std::string>{"abcdefgh", "abcdefXXXXXXXX",
                                             std::string("abcdefXXXX") + std::string(4, '\0')}));
}

TEST(CrashStates, DataOfOneFilePersistsInOrder) {
  Recording rec;
  rec.Existing("f", "");
  rec.Write("f", 0, "aa");
  rec.Write("f", 2, "bb");
  rec.Write("f", 4, "cc");
  CrashStateOptions options;
  options.max_variants_per_point = 64;
  std::set<std::string> contents;
  for (const BuiltState& s : AllStates(rec, options)) contents.insert(s.tree.at("f"));
  // Never "aa" + zeros + "cc": a later write does not persist without the earlier ones.
  for (const std::string& c : contents) {
    EXPECT_TRUE(std::string("aabbcc").compare(0, c.size(), c) == 0 ||
                c.find('\0') != std::string::npos)
        << c;
    EXPECT_NE(c, std::string("aa\0\0cc", 6));
  }
  EXPECT_TRUE(contents.count("aa") && contents.count("aabb") && contents.count("aabbcc"));
}

TEST(CrashStates, WritesFollowTheInodeThroughRenamesOfFilesAndDirectories) {
  Recording rec;
  rec.Mkdir("a");
  rec.Create("a/x");
  rec.Rename("a", "b");
  rec.Write("b/x", 0, "late");  // by inode: the descriptor opened as a/x
  rec.Unlink("b/x");
  rec.Create("b/y");  // reuses no content even if the inode number came back
  FileTree tree;
  CrashPoint point;
  point.after_ops = 4;
  ASSERT_TRUE(BuildCrashState(rec.initial(), rec.ops(), point, &tree).ok());
  EXPECT_EQ(tree, (FileTree{{"b/x", "late"}}));
  point.after_ops = rec.ops().size();
  ASSERT_TRUE(BuildCrashState(rec.initial(), rec.ops(), point, &tree).ok());
  EXPECT_EQ(tree, (FileTree{{"b/y", ""}}));

  // An inode number used again by a later create names a new, empty file.
  Recording reuse;
  reuse.Existing("old", "content");
  FsOp unlink;
  unlink.kind = FsOpKind::kUnlink;
  unlink.file = reuse.IdOf("old");
  unlink.dir = reuse.root();
  unlink.name = "old";
  reuse.Raw(unlink);
  FsOp create = unlink;
  create.kind = FsOpKind::kCreate;
  create.name = "new";
  reuse.Raw(create);
  point.after_ops = 2;
  ASSERT_TRUE(BuildCrashState(reuse.initial(), reuse.ops(), point, &tree).ok());
  EXPECT_EQ(tree, (FileTree{{"new", ""}}));
}

TEST(CrashStates, AnEntryInADirectoryWhoseMkdirWasLostIsAbsent) {
  Recording rec;
  rec.Mkdir("d");
  rec.Create("d/f");
  rec.Fsync("d");
  CrashPoint point = WeakPoint(3, {0});
  EXPECT_TRUE(TreeAt(rec, point).empty());
  FileTree tree;
  point.lost = {1};  // d/f's create was made durable by the fsync of d
  const Status st = BuildCrashState(rec.initial(), rec.ops(), point, &tree);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("made durable by op 2"), std::string::npos) << st.ToString();
}

TEST(CrashStates, FailedOperationsChangeNothingAndFailedFsyncsSyncNothing) {
  Recording rec;
  rec.Create("f");
  rec.Write("f", 0, "data");
  rec.Fsync("");
  FsOp failed_fsync;
  failed_fsync.kind = FsOpKind::kFsync;
  failed_fsync.file = rec.IdOf("f");
  failed_fsync.err = 5;
  rec.Raw(failed_fsync);
  FsOp failed_write = failed_fsync;
  failed_write.kind = FsOpKind::kWrite;
  failed_write.data = "zzzz";
  rec.Raw(failed_write);
  for (const BuiltState& s : AllStates(rec)) {
    if (s.point.after_ops < 3) continue;
    ASSERT_TRUE(s.tree.count("f")) << Show(s, rec);
    EXPECT_NE(s.tree.at("f"), "zzzz") << Show(s, rec);
  }
  // The data may still be lost at the end: the failed fsync made nothing durable.
  EXPECT_EQ(TreeAt(rec, WeakPoint(rec.ops().size(), {1})), (FileTree{{"f", ""}}));
}

TEST(CrashStates, SyncMakesEverythingBeforeItDurable) {
  Recording rec;
  rec.Mkdir("d");
  rec.Create("d/f");
  rec.Write("d/f", 0, "data");
  rec.Sync();
  rec.Write("d/f", 4, "more");
  for (const BuiltState& s : AllStates(rec)) {
    if (s.point.after_ops < 4) continue;
    ASSERT_TRUE(s.tree.count("d/f")) << Show(s, rec);
    EXPECT_EQ(s.tree.at("d/f").substr(0, 4), "data") << Show(s, rec);
  }
}

TEST(CrashStates, BuildRejectsPointsTheModelCannotReach) {
  Recording rec;
  rec.Create("f");
  rec.Write("f", 0, "aa");
  rec.Write("f", 2, "bb");
  FileTree tree;
  CrashPoint point;
  point.after_ops = 3;
  point.lost = {1};
  EXPECT_EQ(BuildCrashState(rec.initial(), rec.ops(), point, &tree).code(),
            Status::Code::kInvalidArgument);  // ordered loses nothing
  point.model = PersistenceModel::kPosixWeak;
  const Status order = BuildCrashState(rec.initial(), rec.ops(), point, &tree);
  EXPECT_NE(order.message().find("persists in order"), std::string::npos) << order.ToString();
  point.lost = {1, 2};
  EXPECT_TRUE(BuildCrashState(rec.initial(), rec.ops(), point, &tree).ok());
  EXPECT_EQ(tree, (FileTree{{"f", ""}}));
  point.lost = {3};
  EXPECT_FALSE(BuildCrashState(rec.initial(), rec.ops(), point, &tree).ok());
  point.lost = {};
  point.torn = 1;
  point.torn_bytes = 3;
  EXPECT_FALSE(BuildCrashState(rec.initial(), rec.ops(), point, &tree).ok());  // past its size
  point.after_ops = 4;
  point.torn_bytes = 1;
  EXPECT_FALSE(BuildCrashState(rec.initial(), rec.ops(), point, &tree).ok());  // past the end
}

TEST(CrashStates, UnseenOperationsAndUnknownInodesAreNamed) {
  Recording rec;
  rec.Create("f");
  rec.Unseen("mmap of f");
  CrashStates states;
  Status st = EnumerateCrashStates(rec.initial(), rec.ops(), {}, &states);
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("mmap of f"), std::string::npos) << st.ToString();

  Recording unknown;
  FsOp write;
  write.kind = FsOpKind::kWrite;
  write.file = FileId{7, 99};
  write.path = "ghost";
  write.data = "x";
  unknown.Raw(write);
  st = EnumerateCrashStates(unknown.initial(), unknown.ops(), {}, &states);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("inode 7:99"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("write of ghost"), std::string::npos) << st.ToString();
  FileTree tree;
  EXPECT_EQ(BuildCrashState(unknown.initial(), unknown.ops(), CrashPoint(), &tree).code(),
            Status::Code::kInvalidArgument);
}

// A few records naming far offsets, long truncates or many links would make every tree cost
// gigabytes: op_replay.h's tree bound refuses them, naming what set the largest file's size.
TEST(CrashStates, HolesAndLinksBeyondTheTreeBoundAreRefused) {
  auto refused = [](const Recording& rec, const std::string& what) {
    CrashStates states;
    const Status st = EnumerateCrashStates(rec.initial(), rec.ops(), {}, &states);
    EXPECT_EQ(st.code(), Status::Code::kNotSupported) << st.ToString();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.ToString();
    FileTree tree;
    EXPECT_EQ(BuildCrashState(rec.initial(), rec.ops(), CrashPoint(), &tree).code(),
              Status::Code::kNotSupported);
  };
  Recording truncated;
  truncated.Existing("g", "0123456789");
  truncated.Truncate("g", uint64_t{64} << 20);
  refused(truncated, "the largest: 67108864 bytes under 1 names, its size from op 0");
  Recording far_write;
  far_write.Create("f");
  far_write.Write("f", uint64_t{512} << 20, "x");
  refused(far_write, "write of f");
  Recording linked;
  linked.Create("f");
  linked.Write("f", 0, std::string(uint64_t{1} << 20, 'x'));
  for (int i = 0; i < 8; ++i) {
    FsOp link;
    link.kind = FsOpKind::kLink;
    link.file = linked.IdOf("f");
    link.dir2 = linked.root();
    link.name2 = "l" + std::to_string(i);
    linked.Raw(link);
  }
  refused(linked, "under 9 names");

  // Within the bound: a file preallocated by a truncate and then written, a small hole.
  Recording preallocated;
  preallocated.Create("f");
  preallocated.Truncate("f", uint64_t{4} << 20);
  for (int i = 0; i < 4; ++i) {
    preallocated.Write("f", uint64_t(i) << 20, std::string(uint64_t{1} << 20, 'x'));
  }
  preallocated.Create("hole");
  preallocated.Truncate("hole", uint64_t{512} << 10);
  CrashStates states;
  CrashStateOptions options;
  options.only_after_ops = {preallocated.ops().size()};
  const Status st =
      EnumerateCrashStates(preallocated.initial(), preallocated.ops(), options, &states);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(CrashStates, MaxStatesIsHonoured) {
  Recording rec;
  for (int i = 0; i < 6; ++i) {
    rec.Create("f" + std::to_string(i));
    rec.Write("f" + std::to_string(i), 0, "data");
  }
  CrashStates states;
  CrashStateOptions options;
  ASSERT_TRUE(EnumerateCrashStates(rec.initial(), rec.ops(), options, &states).ok());
  const size_t all = states.distinct.size();
  EXPECT_GT(all, rec.ops().size() + 1);
  EXPECT_GE(states.candidates, all);
  EXPECT_GE(states.weak_combinations, uint64_t{1} << 12);
  options.max_states = all;
  EXPECT_TRUE(EnumerateCrashStates(rec.initial(), rec.ops(), options, &states).ok());
  options.max_states = all - 1;
  const Status st = EnumerateCrashStates(rec.initial(), rec.ops(), options, &states);
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("max_states = " + std::to_string(all - 1)), std::string::npos)
      << st.ToString();
}

TEST(CrashStates, StatesAreDistinctAndTheOrderedOnesComeFirst) {
  Recording rec;
  rec.Existing("meta", "old");
  rec.Create("meta.tmp");
  rec.Write("meta.tmp", 0, "new content");
  rec.Rename("meta.tmp", "meta");
  const std::vector<BuiltState> states = AllStates(rec);
  std::set<FileTree> trees;
  bool weak_seen = false;
  for (const BuiltState& s : states) {
    EXPECT_TRUE(trees.insert(s.tree).second) << "a duplicate: " << Show(s, rec);
    if (s.point.model == PersistenceModel::kPosixWeak) weak_seen = true;
    if (weak_seen) {
      EXPECT_EQ(s.point.model, PersistenceModel::kPosixWeak);
    }
  }
  EXPECT_TRUE(weak_seen);
}

// only_after_ops enumerates those points alone, and finds there every tree the whole enumeration
// finds there (the whole one may have kept an equal tree at an earlier point instead).
TEST(CrashStates, OnlyTheDrawnPointsAreEnumeratedWhenAsked) {
  Recording rec;
  rec.Existing("meta", "old");
  rec.Create("meta.tmp");
  rec.Write("meta.tmp", 0, "new content");
  rec.Rename("meta.tmp", "meta");
  rec.Create("data");
  rec.Write("data", 0, "payload");
  std::set<FileTree> everywhere;
  for (const BuiltState& s : AllStates(rec)) everywhere.insert(s.tree);
  CrashStateOptions only;
  only.only_after_ops = {4, 2, 4, 99};  // repeated and past the end: ignored
  const std::vector<BuiltState> states = AllStates(rec, only);
  std::set<uint64_t> points;
  for (const BuiltState& s : states) {
    points.insert(s.point.after_ops);
    EXPECT_TRUE(everywhere.count(s.tree)) << Show(s, rec);
  }
  EXPECT_EQ(points, (std::set<uint64_t>{2, 4}));
  // At point 4 the rename may be lost under posix-weak: both the old and the new meta are there.
  std::set<std::string> metas;
  for (const BuiltState& s : states) {
    if (s.point.after_ops == 4 && s.tree.count("meta")) metas.insert(s.tree.at("meta"));
  }
  EXPECT_TRUE(metas.count("old") && metas.count("new content"));
}

TEST(CrashStates, DescribeNamesThePointAndWhatWasLost) {
  Recording rec;
  rec.Create("x");
  rec.Write("x", 0, std::string(4096, 'a'));
  rec.Create("y");
  rec.Rename("y", "z");
  CrashPoint point;
  point.model = PersistenceModel::kPosixWeak;
  point.after_ops = 4;
  point.lost = {1, 2};
  EXPECT_EQ(point.Describe(rec.ops()),
            "after op 4 of 4 (rename y -> z) under posix-weak, lost: write of x (4096 bytes at "
            "0), create of y");
  point.lost = {};
  point.torn = 1;
  point.torn_bytes = 2048;
  EXPECT_EQ(point.Describe(rec.ops()),
            "after op 4 of 4 (rename y -> z) under posix-weak; torn: write of x (4096 bytes at "
            "0) kept 2048 bytes");
  EXPECT_EQ(CrashPoint().Describe(rec.ops()), "before op 1 of 4 (create of x) under ordered");
}

// ---- The oracle: random calls applied to a real directory, recorded as the interposer would.

// A real directory and the FsOps of the calls made in it, with its tree after each one.
class RealDirectoryRecorder {
 public:
  explicit RealDirectoryRecorder(const std::string& root) : root_(root) {
    after_.push_back(ReadBack());
  }
  ~RealDirectoryRecorder() {
    for (const OpenFile& f : open_) close(f.fd);
  }
  const std::vector<FsOp>& ops() const { return ops_; }
  const std::vector<FileTree>& after() const { return after_; }

  // One call chosen by `choice` (see the cases), recorded, or none where it has no target.
  void Step(int choice) {
    const int a = choice / 13 % 16;
    const int b = choice / 208 % 64;
    const int len = 1 + choice / 13312 % 32;
    std::vector<std::string> dirs = {""}, files, entries;
    List("", &dirs, &files);
    entries = files;
    entries.insert(entries.end(), dirs.begin() + 1, dirs.end());
    switch (choice % 13) {
      case 0:
      case 1:
        return Create(Join(dirs[a % dirs.size()], "f" + std::to_string(b % 4)));
      case 2:
        return MakeDir(Join(dirs[a % dirs.size()], "d" + std::to_string(b % 3)));
      case 3:
      case 4:
        if (open_.empty()) return;
        return Write(open_[a % open_.size()], b, std::string(len, static_cast<char>('A' + b % 26)));
      case 5:
        if (open_.empty()) return;
        return Truncate(open_[a % open_.size()], b + len);
      case 6:
      case 7:
        if (entries.empty()) return;
        return Rename(entries[a % entries.size()],
                      Join(dirs[b % dirs.size()], (len % 2 ? "d" : "f") + std::to_string(len % 4)));
      case 8:
        if (files.empty()) return;
        return RemoveEntry(FsOpKind::kUnlink, files[a % files.size()]);
      case 9:
        if (dirs.size() < 2) return;
        return RemoveEntry(FsOpKind::kRmdir, dirs[1 + a % (dirs.size() - 1)]);
      case 10:
        return SyncDirectory(dirs[a % dirs.size()]);
      case 11:
        if (open_.empty()) return;
        return SyncFile(open_[a % open_.size()], b % 2 ? FsOpKind::kFdatasync : FsOpKind::kFsync);
      default:
        if (b % 4 != 0 || files.empty()) return SyncAll();
        return Link(files[a % files.size()],
                    Join(dirs[b % dirs.size()], "f" + std::to_string(len % 4)));
    }
  }

  std::string Script() const {
    std::string out;
    for (size_t i = 0; i < ops_.size(); ++i) {
      out += "  op " + std::to_string(i + 1) + ": " + DescribeFsOp(ops_[i]) + "\n";
    }
    return out;
  }

 private:
  struct OpenFile {
    int fd;
    FileId id;
    std::string path;  // where it was created
  };

  static std::string Join(const std::string& dir, const std::string& name) {
    return dir.empty() ? name : dir + "/" + name;
  }
  static std::string ParentOf(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? "" : path.substr(0, slash);
  }
  static std::string BaseOf(const std::string& path) { return path.substr(path.rfind('/') + 1); }
  std::string Full(const std::string& path) const {
    return path.empty() ? root_ : root_ + "/" + path;
  }
  FileId IdAt(const std::string& path) const {
    struct stat st {};
    if (lstat(Full(path).c_str(), &st) != 0) return FileId();
    return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  }
  void List(const std::string& dir, std::vector<std::string>* dirs,
            std::vector<std::string>* files) const {
    std::vector<std::string> names;
    if (!Env::Posix()->GetChildren(Full(dir), &names).ok()) return;
    for (const std::string& name : names) {
      const std::string path = Join(dir, name);
      struct stat st {};
      lstat(Full(path).c_str(), &st);
      if (S_ISDIR(st.st_mode)) {
        dirs->push_back(path);
        List(path, dirs, files);
      } else {
        files->push_back(path);
      }
    }
  }
  FileTree ReadBack() const {
    FileTree tree;
    std::vector<std::string> dirs, files;
    List("", &dirs, &files);
    for (const std::string& f : files) {
      (void)ReadFileToString(Env::Posix(), Full(f), 1 << 20, &tree[f]);
    }
    for (const std::string& d : dirs) {  // an empty directory: nothing below it
      bool has_child = false;
      for (const auto& [path, content] : tree) has_child |= path.rfind(d + "/", 0) == 0;
      for (const std::string& other : dirs) has_child |= other.rfind(d + "/", 0) == 0;
      if (!has_child) tree[d + "/"] = "";
    }
    return tree;
  }
  void Record(FsOp op, int rc) {
    op.seq = ops_.size();
    op.pid = 1;
    op.err = rc < 0 ? errno : 0;
    ops_.push_back(op);
    after_.push_back(ReadBack());
  }
  FsOp EntryOp(FsOpKind kind, const std::string& path) const {
    FsOp op;
    op.kind = kind;
    op.dir = IdAt(ParentOf(path));
    op.name = BaseOf(path);
    op.path = path;
    return op;
  }
  void Create(const std::string& path) {
    FsOp op = EntryOp(FsOpKind::kCreate, path);
    const int fd = open(Full(path).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    op.file = IdAt(path);
    if (fd >= 0) open_.push_back(OpenFile{fd, op.file, path});
    Record(op, fd);
  }
  void MakeDir(const std::string& path) {
    FsOp op = EntryOp(FsOpKind::kMkdir, path);
    const int rc = mkdir(Full(path).c_str(), 0700);
    op.file = IdAt(path);
    Record(op, rc);
  }
  void Write(const OpenFile& f, uint64_t offset, const std::string& data) {
    FsOp op;
    op.kind = FsOpKind::kWrite;
    op.file = f.id;
    op.path = f.path;
    op.offset = offset;
    op.data = data;
    Record(op, pwrite(f.fd, data.data(), data.size(), offset) == static_cast<ssize_t>(data.size())
                   ? 0
                   : -1);
  }
  void Truncate(const OpenFile& f, uint64_t length) {
    FsOp op;
    op.kind = FsOpKind::kTruncate;
    op.file = f.id;
    op.path = f.path;
    op.length = length;
    Record(op, ftruncate(f.fd, length));
  }
  void Rename(const std::string& from, const std::string& to) {
    FsOp op = EntryOp(FsOpKind::kRename, from);
    op.file = IdAt(from);
    op.dir2 = IdAt(ParentOf(to));
    op.name2 = BaseOf(to);
    op.path2 = to;
    op.replaced = IdAt(to);
    Record(op, rename(Full(from).c_str(), Full(to).c_str()));
  }
  void Link(const std::string& from, const std::string& to) {
    FsOp op;
    op.kind = FsOpKind::kLink;
    op.file = IdAt(from);
    op.path = from;
    op.dir2 = IdAt(ParentOf(to));
    op.name2 = BaseOf(to);
    op.path2 = to;
    Record(op, link(Full(from).c_str(), Full(to).c_str()));
  }
  void RemoveEntry(FsOpKind kind, const std::string& path) {
    FsOp op = EntryOp(kind, path);
    op.file = IdAt(path);
    Record(op, kind == FsOpKind::kRmdir ? rmdir(Full(path).c_str()) : unlink(Full(path).c_str()));
  }
  void SyncDirectory(const std::string& dir) {
    FsOp op;
    op.kind = FsOpKind::kFsync;
    op.file = IdAt(dir);
    op.path = dir;
    const int fd = open(Full(dir).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int rc = fd < 0 ? -1 : fsync(fd);
    if (fd >= 0) close(fd);
    Record(op, rc);
  }
  void SyncFile(const OpenFile& f, FsOpKind kind) {
    FsOp op;
    op.kind = kind;
    op.file = f.id;
    op.path = f.path;
    Record(op, kind == FsOpKind::kFsync ? fsync(f.fd) : fdatasync(f.fd));
  }
  void SyncAll() {
    FsOp op;
    op.kind = FsOpKind::kSyncAll;
    const int fd = open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int rc = fd < 0 ? -1 : syncfs(fd);
    if (fd >= 0) close(fd);
    Record(op, rc);
  }

  const std::string root_;
  std::vector<OpenFile> open_;
  std::vector<FsOp> ops_;
  std::vector<FileTree> after_;
};

// The durability rule, written again from crash/persistence_model.h: whether op i was made
// durable by an op that completed before op k. An inode number created again ends its old file.
bool DurableByReference(const std::vector<FsOp>& ops, size_t i, size_t k) {
  const FsOp& op = ops[i];
  const bool data = op.kind == FsOpKind::kWrite || op.kind == FsOpKind::kTruncate;
  FileId first = data ? op.file : op.kind == FsOpKind::kLink ? op.dir2 : op.dir;
  bool need_second = op.kind == FsOpKind::kRename;
  bool first_done = false, second_done = false, first_alive = true, second_alive = true;
  for (size_t j = i + 1; j < k; ++j) {
    const FsOp& o = ops[j];
    if (o.err != 0) continue;
    if (o.kind == FsOpKind::kSyncAll) return true;
    if (o.kind == FsOpKind::kCreate || o.kind == FsOpKind::kMkdir) {
      first_alive &= o.file != first;
      second_alive &= o.file != op.dir2;
    }
    const bool syncs = o.kind == FsOpKind::kFsync || (data && o.kind == FsOpKind::kFdatasync);
    if (syncs && first_alive && o.file == first) first_done = true;
    if (syncs && second_alive && need_second && o.file == op.dir2) second_done = true;
    if (first_done && (!need_second || second_done)) return true;
  }
  return false;
}

class OracleDirectory {
 public:
  OracleDirectory() {
    const std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string tmpl = base + "/ckptspec-crash-oracle-XXXXXX";
    if (mkdtemp(&tmpl[0]) != nullptr) path_ = tmpl;
  }
  ~OracleDirectory() {
    if (!path_.empty()) (void)Env::Posix()->RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Records a random script in a fresh directory (that holds a file and a directory already).
void RecordRandomScript(const OracleDirectory& dir, InitialTree* initial,
                        std::unique_ptr<RealDirectoryRecorder>* recorder) {
  RC_ASSERT(!dir.path().empty());
  RC_ASSERT(mkdir((dir.path() + "/d0").c_str(), 0700) == 0);
  RC_ASSERT(WriteFileSynced(Env::Posix(), dir.path() + "/f0", "initial").ok());
  RC_ASSERT(SnapshotDirectory(dir.path(), 1 << 20, initial).ok());
  *recorder = std::make_unique<RealDirectoryRecorder>(dir.path());
  const auto choices = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 13312 * 32));
  for (int choice : choices) (*recorder)->Step(choice);
  RC_LOG() << "recorded script:\n" << (*recorder)->Script();
}

RC_GTEST_PROP(CrashStatesOracle, OrderedStatesAreTheRealDirectoryAfterEachOp, ()) {
  OracleDirectory dir;
  InitialTree initial;
  std::unique_ptr<RealDirectoryRecorder> rec;
  RecordRandomScript(dir, &initial, &rec);
  for (size_t k = 0; k <= rec->ops().size(); ++k) {
    CrashPoint point;
    point.after_ops = k;
    FileTree tree;
    const Status st = BuildCrashState(initial, rec->ops(), point, &tree);
    RC_LOG() << "after " << k << " ops: " << st.ToString() << "\n";
    RC_ASSERT(st.ok());
    RC_ASSERT(tree == rec->after()[k]);
    // With nothing lost, a weak state is the ordered one.
    point.model = PersistenceModel::kPosixWeak;
    RC_ASSERT(BuildCrashState(initial, rec->ops(), point, &tree).ok());
    RC_ASSERT(tree == rec->after()[k]);
  }
}

RC_GTEST_PROP(CrashStatesOracle, WeakStatesKeepEveryDurableOpAndAreDistinct, ()) {
  OracleDirectory dir;
  InitialTree initial;
  std::unique_ptr<RealDirectoryRecorder> rec;
  RecordRandomScript(dir, &initial, &rec);
  const std::vector<FsOp>& ops = rec->ops();
  CrashStates states;
  CrashStateOptions options;
  options.seed = *rc::gen::arbitrary<uint64_t>();
  options.max_states = 1 << 20;
  const Status st = EnumerateCrashStates(initial, ops, options, &states);
  RC_LOG() << st.ToString() << "\n";
  RC_ASSERT(st.ok());
  std::set<FileTree> trees;
  for (const CrashPoint& point : states.distinct) {
    RC_LOG() << "state: " << point.Describe(ops) << "\n";
    for (size_t i : point.lost) RC_ASSERT(!DurableByReference(ops, i, point.after_ops));
    if (point.torn) RC_ASSERT(!DurableByReference(ops, *point.torn, point.after_ops));
    FileTree tree;
    RC_ASSERT(BuildCrashState(initial, ops, point, &tree).ok());
    RC_ASSERT(trees.insert(tree).second);
  }
  // Losing a durable op is refused.
  for (size_t k = 0; k <= ops.size(); ++k) {
    for (size_t i = 0; i < k; ++i) {
      const bool changes = ops[i].err == 0 && ops[i].kind != FsOpKind::kFsync &&
                           ops[i].kind != FsOpKind::kFdatasync && ops[i].kind != FsOpKind::kSyncAll;
      if (!changes || !DurableByReference(ops, i, k)) continue;
      FileTree tree;
      CrashPoint point = WeakPoint(k, {i});
      RC_LOG() << "refused? " << point.Describe(ops) << "\n";
      RC_ASSERT(BuildCrashState(initial, ops, point, &tree).code() ==
                Status::Code::kInvalidArgument);
    }
  }
}

class MaterializeTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ckptspec-materialize-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { (void)Env::Posix()->RemoveTree(root_); }
  std::string root_;
};

TEST_F(MaterializeTreeTest, RoundTripsThroughSnapshotDirectory) {
  ASSERT_TRUE(WriteFileSynced(Env::Posix(), root_ + "/stale", "gone").ok());
  const FileTree tree = {
      {"a/b/c", "deep"}, {"a/e/", ""}, {"top", std::string("x\0y", 3)}, {"empty", ""}};
  ASSERT_TRUE(MaterializeTree(tree, root_).ok());
  InitialTree snapshot;
  ASSERT_TRUE(SnapshotDirectory(root_, 1 << 20, &snapshot).ok());
  FileTree back;
  for (const InitialEntry& e : snapshot.entries) {
    if (!e.is_dir) back[e.path] = e.content;
  }
  for (const InitialEntry& e : snapshot.entries) {
    bool has_child = false;
    for (const InitialEntry& other : snapshot.entries) {
      if (other.path.rfind(e.path + "/", 0) == 0) has_child = true;
    }
    if (e.is_dir && !has_child) back[e.path + "/"] = "";
  }
  EXPECT_EQ(back, tree);

  // A recorded replay of the snapshot with nothing done gives the tree back.
  FileTree replayed;
  ASSERT_TRUE(BuildCrashState(snapshot, {}, CrashPoint(), &replayed).ok());
  EXPECT_EQ(replayed, tree);
}

TEST_F(MaterializeTreeTest, RefusesPathsThatLeaveTheRootAndTouchesNothing) {
  ASSERT_TRUE(WriteFileSynced(Env::Posix(), root_ + "/keep", "kept").ok());
  for (const std::string bad : {"../escape", "/abs", "a/../../b", "a//b", "./x", ""}) {
    const Status st = MaterializeTree(FileTree{{bad, "x"}}, root_);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("'" + bad + "'"), std::string::npos) << st.ToString();
  }
  std::string kept;
  ASSERT_TRUE(ReadFileToString(Env::Posix(), root_ + "/keep", 100, &kept).ok());
  EXPECT_EQ(kept, "kept");
  EXPECT_FALSE(MaterializeTree(FileTree{}, root_ + "/keep").ok());
}

}  // namespace
}  // namespace ckptspec
