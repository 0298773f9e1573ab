// The crash-state builder (crash/crash_states.h) on recordings of a DCP-like save at 2 and 8
// ranks: every crash point enumerated, 6 of them (CrashStateOptions::only_after_ops, as P13 draws
// them), and one state built as files.
//
// The save, after iteration 1 (the initial tree: iter_0000001/ with each rank's __r_0.distcp and
// .metadata, and latest_checkpointed_iteration.txt saying "1"): mkdir iter_0000002; per rank,
// create __r_0.distcp, 4 writes of 4-16 KiB, fsync; .metadata.tmp created, written, fsynced and
// renamed to .metadata; the tracker written to a temporary file, fsynced, renamed over the old
// one, and the root fsynced. No fsync of iter_0000002 itself (DCP makes none). fsync:0 is the same
// save without any fsync, the worst case for posix-weak: every operation stays non-durable.
//
//   BM_EnumerateAllPoints/ranks:R/fsync:F  EnumerateCrashStates at every after_ops, 0..n
//   BM_EnumerateSixPoints/ranks:R/fsync:F  the same at 6 points spread evenly over 1..n
//   BM_BuildOneState/ranks:R/fsync:F       BuildCrashState after the whole save, ordered: every
//                                          write's data in the tree, the largest state
//
// Counters: ops (the recording's length); for the enumerations candidates (states replayed and
// digested before deduplication), candidates_per_s and distinct_states; for BuildCrashState
// states_per_s (trees built per second, the recording checked again each time), files (the
// tree's entries) and tree_bytes. After the runs: each recording's enumeration of every point over its
// 6-point enumeration, and the save without fsync over the save with it (ratios of times).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_ratios.h"
#include "crash/crash_states.h"

namespace ckptspec {
namespace {

constexpr size_t kPointsDrawn = 6;  // P13's crash points per case
const char kTracker[] = "latest_checkpointed_iteration.txt";

// A recording and the tree it starts from, its files named by inode as the interposer names them.
class SaveRecording {
 public:
  explicit SaveRecording(bool with_fsync) : with_fsync_(with_fsync) { initial_.root = kRoot; }

  const InitialTree& initial() const { return initial_; }
  const std::vector<FsOp>& ops() const { return ops_; }

  // An entry of the tree before the save.
  FileId Existing(const std::string& path, bool is_dir, std::string content) {
    const FileId id = NextInode();
    initial_.entries.push_back(InitialEntry{path, id, is_dir, std::move(content)});
    return id;
  }

  // kCreate or kMkdir of `name` in `dir` (at `dir_path`, "" for the root): the new inode.
  FileId Make(FsOpKind kind, FileId dir, const std::string& dir_path, const std::string& name) {
    FsOp op = Op(kind, NextInode(), dir_path.empty() ? name : dir_path + "/" + name);
    op.dir = dir;
    op.name = name;
    Append(op);
    return op.file;
  }

  void Write(FileId file, const std::string& path, uint64_t offset, std::string data) {
    FsOp op = Op(FsOpKind::kWrite, file, path);
    op.offset = offset;
    op.data = std::move(data);
    Append(std::move(op));
  }

  // An fsync of `file`, recorded only by a save that syncs.
  void Fsync(FileId file, const std::string& path) {
    if (with_fsync_) Append(Op(FsOpKind::kFsync, file, path));
  }

  // `name` of `dir` (inode `file`) renamed to `new_name` of the same directory, over `replaced`.
  void Rename(FileId file, FileId dir, const std::string& dir_path, const std::string& name,
              const std::string& new_name, FileId replaced) {
    const std::string prefix = dir_path.empty() ? "" : dir_path + "/";
    FsOp op = Op(FsOpKind::kRename, file, prefix + name);
    op.dir = op.dir2 = dir;
    op.name = name;
    op.name2 = new_name;
    op.path2 = prefix + new_name;
    op.replaced = replaced;
    Append(std::move(op));
  }

  static constexpr FileId kRoot{1, 1};

 private:
  FileId NextInode() { return FileId{1, ++last_inode_}; }
  static FsOp Op(FsOpKind kind, FileId file, std::string path) {
    FsOp op;
    op.kind = kind;
    op.file = file;
    op.path = std::move(path);
    return op;
  }
  void Append(FsOp op) {
    op.seq = ops_.size();
    op.pid = 1000;
    ops_.push_back(std::move(op));
  }

  const bool with_fsync_;
  InitialTree initial_;
  std::vector<FsOp> ops_;
  uint64_t last_inode_ = 1;
};

std::string Bytes(std::mt19937_64* rng, size_t size) {
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>((*rng)() & 0xff);
  return bytes;
}

std::string ShardName(int64_t rank) { return "__" + std::to_string(rank) + "_0.distcp"; }

// The DCP-like save of iteration 2 by `ranks` ranks over iteration 1's files (see the top).
SaveRecording DcpLikeSave(int64_t ranks, bool with_fsync) {
  std::mt19937_64 rng(static_cast<uint64_t>(ranks));
  SaveRecording rec(with_fsync);
  const FileId root = SaveRecording::kRoot;
  rec.Existing("iter_0000001", /*is_dir=*/true, "");
  rec.Existing("iter_0000001/.metadata", false, Bytes(&rng, 2048));
  for (int64_t r = 0; r < ranks; ++r) {
    rec.Existing("iter_0000001/" + ShardName(r), false, Bytes(&rng, 40 << 10));
  }
  const FileId old_tracker = rec.Existing(kTracker, false, "1");

  const std::string dir_path = "iter_0000002";
  const FileId dir = rec.Make(FsOpKind::kMkdir, root, "", dir_path);
  std::uniform_int_distribution<size_t> write_size(4 << 10, 16 << 10);
  for (int64_t r = 0; r < ranks; ++r) {
    const std::string path = dir_path + "/" + ShardName(r);
    const FileId shard = rec.Make(FsOpKind::kCreate, dir, dir_path, ShardName(r));
    uint64_t offset = 0;
    for (int w = 0; w < 4; ++w) {
      std::string data = Bytes(&rng, write_size(rng));
      const uint64_t size = data.size();
      rec.Write(shard, path, offset, std::move(data));
      offset += size;
    }
    rec.Fsync(shard, path);
  }
  const FileId metadata = rec.Make(FsOpKind::kCreate, dir, dir_path, ".metadata.tmp");
  rec.Write(metadata, dir_path + "/.metadata.tmp", 0, Bytes(&rng, 4096));
  rec.Fsync(metadata, dir_path + "/.metadata.tmp");
  rec.Rename(metadata, dir, dir_path, ".metadata.tmp", ".metadata", FileId{});

  const std::string tracker_tmp = std::string(kTracker) + ".tmp";
  const FileId tracker = rec.Make(FsOpKind::kCreate, root, "", tracker_tmp);
  rec.Write(tracker, tracker_tmp, 0, "2");
  rec.Fsync(tracker, tracker_tmp);
  rec.Rename(tracker, root, "", tracker_tmp, kTracker, old_tracker);
  rec.Fsync(root, "");
  return rec;
}

std::string RunName(const char* benchmark, int64_t ranks, bool with_fsync) {
  return std::string(benchmark) + "/ranks:" + std::to_string(ranks) +
         "/fsync:" + (with_fsync ? "1" : "0");
}

// Runs `body` (returning false on an error, which it reports) once per iteration and records the
// seconds per iteration under the run's name: those seconds, or nothing when the body failed.
template <typename Body>
std::optional<double> TimeRuns(benchmark::State& state, const char* name, Body body) {
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    if (!body()) return std::nullopt;
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double seconds = total / static_cast<double>(state.iterations());
  BenchSeconds()[RunName(name, state.range(0), state.range(1) != 0)] = seconds;
  return seconds;
}

// EnumerateCrashStates at `only_after_ops` (every point when empty).
void Enumerate(benchmark::State& state, const char* name, bool six_points) {
  const SaveRecording rec = DcpLikeSave(state.range(0), state.range(1) != 0);
  const size_t n = rec.ops().size();
  CrashStateOptions options;
  options.max_states = uint64_t{1} << 20;
  for (size_t i = 1; six_points && i <= kPointsDrawn; ++i) {
    options.only_after_ops.push_back(i * n / kPointsDrawn);
  }
  CrashStates states;
  const std::optional<double> seconds = TimeRuns(state, name, [&] {
    const Status s = EnumerateCrashStates(rec.initial(), rec.ops(), options, &states);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    return s.ok();
  });
  if (!seconds) return;
  state.counters["ops"] = static_cast<double>(n);
  state.counters["candidates"] = static_cast<double>(states.candidates);
  state.counters["distinct_states"] = static_cast<double>(states.distinct.size());
  state.counters["candidates_per_s"] = static_cast<double>(states.candidates) / *seconds;
}

void BM_EnumerateAllPoints(benchmark::State& state) {
  Enumerate(state, "BM_EnumerateAllPoints", /*six_points=*/false);
}

void BM_EnumerateSixPoints(benchmark::State& state) {
  Enumerate(state, "BM_EnumerateSixPoints", /*six_points=*/true);
}

void BM_BuildOneState(benchmark::State& state) {
  const SaveRecording rec = DcpLikeSave(state.range(0), state.range(1) != 0);
  CrashPoint point;
  point.model = PersistenceModel::kOrdered;
  point.after_ops = rec.ops().size();
  FileTree tree;
  const std::optional<double> seconds = TimeRuns(state, "BM_BuildOneState", [&] {
    const Status s = BuildCrashState(rec.initial(), rec.ops(), point, &tree);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    return s.ok();
  });
  if (!seconds) return;
  state.counters["ops"] = static_cast<double>(rec.ops().size());
  state.counters["files"] = static_cast<double>(tree.size());
  size_t bytes = 0;
  for (const auto& entry : tree) bytes += entry.second.size();
  state.counters["tree_bytes"] = static_cast<double>(bytes);
  state.counters["states_per_s"] = 1 / *seconds;
}

void Recordings(benchmark::internal::Benchmark* b) {
  b->ArgNames({"ranks", "fsync"});
  for (int64_t ranks : {2, 8}) {
    for (int64_t fsync : {1, 0}) b->Args({ranks, fsync});
  }
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_EnumerateAllPoints)->Apply(Recordings);
BENCHMARK(BM_EnumerateSixPoints)->Apply(Recordings);
BENCHMARK(BM_BuildOneState)->Apply(Recordings);

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  using ckptspec::RunName;
  for (int64_t ranks : {2, 8}) {
    for (bool with_fsync : {true, false}) {
      const std::string what = "every point over 6 points, " + std::to_string(ranks) + " ranks, " +
                               (with_fsync ? "with" : "without") + " fsync";
      ckptspec::PrintRatio(what.c_str(),
                           RunName("BM_EnumerateSixPoints", ranks, with_fsync).c_str(),
                           RunName("BM_EnumerateAllPoints", ranks, with_fsync).c_str());
    }
    const std::string what =
        "without fsync over with fsync, every point, " + std::to_string(ranks) + " ranks";
    ckptspec::PrintRatio(what.c_str(), RunName("BM_EnumerateAllPoints", ranks, true).c_str(),
                         RunName("BM_EnumerateAllPoints", ranks, false).c_str());
  }
  return 0;
}
