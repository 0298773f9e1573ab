#include "crash/crash_states.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <set>
#include <unordered_set>

#include "crash/fs_op_describe.h"
#include "crash/op_replay.h"
#include "base/env.h"
#include "base/posix_remove_tree.h"

namespace ckptspec {

namespace {

struct DigestHash {
  size_t operator()(const TreeDigest& d) const { return static_cast<size_t>(d.a ^ (d.b << 1)); }
};

uint64_t SaturatingPowerOfTwo(size_t exponent) {
  return exponent >= 64 ? UINT64_MAX : uint64_t{1} << exponent;
}

// Collects candidates, keeping the first point of each distinct tree.
class CrashStateCollector {
 public:
  CrashStateCollector(const std::vector<FsOp>& ops, OpReplay* replay, uint64_t max_states,
                      CrashStates* out)
      : ops_(ops), replay_(replay), max_states_(max_states), out_(out) {}

  Status Consider(PersistenceModel model, size_t k, const OpReplay::LostFlags& lost, size_t torn,
                  uint64_t torn_bytes) {
    ++out_->candidates;
    const TreeDigest digest = replay_->DigestTree(k, lost, torn, torn_bytes);
    if (!seen_.insert(digest).second) return Status::OK();
    CrashPoint point;
    point.model = model;
    point.after_ops = k;
    for (size_t i = 0; i < k; ++i) {
      if (lost[i]) point.lost.push_back(i);
    }
    if (torn < ops_.size()) {
      point.torn = torn;
      point.torn_bytes = torn_bytes;
    }
    if (out_->distinct.size() >= max_states_) {
      return Status::FailedPrecondition(
          "more than max_states = " + std::to_string(max_states_) +
          " distinct crash states (the next: " + point.Describe(ops_) + ")");
    }
    out_->distinct.push_back(std::move(point));
    return Status::OK();
  }

 private:
  const std::vector<FsOp>& ops_;
  OpReplay* replay_;
  const uint64_t max_states_;
  CrashStates* out_;
  std::unordered_set<TreeDigest, DigestHash> seen_;
};

// Every weak candidate of crash point k (see the header for the list).
Status ConsiderWeakPoint(const std::vector<FsOp>& ops, size_t k, const CrashStateOptions& options,
                         OpReplay* replay, std::mt19937_64* rng, CrashStateCollector* collector,
                         CrashStates* out) {
  const size_t n = ops.size();
  const std::vector<size_t> non_durable = replay->NonDurable(k);
  out->weak_combinations =
      SaturatingAdd(out->weak_combinations, SaturatingPowerOfTwo(non_durable.size()));
  auto consider = [&](OpReplay::LostFlags lost, size_t torn, uint64_t torn_bytes) {
    replay->CloseLost(k, torn, &lost);
    return collector->Consider(PersistenceModel::kPosixWeak, k, lost, torn, torn_bytes);
  };
  OpReplay::LostFlags none(n, 0);
  OpReplay::LostFlags all = none;
  for (size_t i : non_durable) all[i] = 1;
  CKPTSPEC_RETURN_IF_ERROR(consider(all, n, 0));
  for (size_t i : non_durable) {
    OpReplay::LostFlags one = none;
    one[i] = 1;
    CKPTSPEC_RETURN_IF_ERROR(consider(std::move(one), n, 0));
  }
  for (size_t i : non_durable) {
    if (ops[i].kind != FsOpKind::kWrite) continue;
    CKPTSPEC_RETURN_IF_ERROR(consider(none, i, ops[i].data.size() / 2));
  }
  for (size_t v = 0; v < options.max_variants_per_point && !non_durable.empty(); ++v) {
    OpReplay::LostFlags some = none;
    for (size_t i : non_durable) some[i] = static_cast<char>((*rng)() & 1);
    CKPTSPEC_RETURN_IF_ERROR(consider(std::move(some), n, 0));
  }
  return Status::OK();
}

Status CheckTreePath(const std::string& path) {
  const bool is_dir = !path.empty() && path.back() == '/';
  const std::string body = is_dir ? path.substr(0, path.size() - 1) : path;
  size_t start = 0;
  while (true) {
    const size_t slash = body.find('/', start);
    const std::string part = body.substr(start, slash == std::string::npos ? slash : slash - start);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string::npos) {
      return Status::InvalidArgument("the tree path '" + path +
                                     "' is not a relative path that stays under the root");
    }
    if (slash == std::string::npos) return Status::OK();
    start = slash + 1;
  }
}

}  // namespace

std::string CrashPoint::Describe(const std::vector<FsOp>& ops) const {
  std::string out;
  const std::string total = std::to_string(ops.size());
  if (after_ops == 0) {
    out = ops.empty() ? "before any operation (of 0)"
                      : "before op 1 of " + total + " (" + DescribeFsOp(ops[0]) + ")";
  } else if (after_ops <= ops.size()) {
    out = "after op " + std::to_string(after_ops) + " of " + total + " (" +
          DescribeFsOp(ops[after_ops - 1]) + ")";
  } else {
    out = "after op " + std::to_string(after_ops) + " of only " + total;
  }
  out += std::string(" under ") + PersistenceModelName(model);
  auto op_words = [&](size_t i) {
    return i < ops.size() ? DescribeFsOp(ops[i]) : "op " + std::to_string(i + 1) + " (unknown)";
  };
  for (size_t j = 0; j < lost.size(); ++j) out += (j == 0 ? ", lost: " : ", ") + op_words(lost[j]);
  if (torn) {
    out += "; torn: " + op_words(*torn) + " kept " + std::to_string(torn_bytes) + " bytes";
  }
  return out;
}

Status EnumerateCrashStates(const InitialTree& initial, const std::vector<FsOp>& ops,
                            const CrashStateOptions& options, CrashStates* out) {
  *out = CrashStates();
  OpReplay replay;
  CKPTSPEC_RETURN_IF_ERROR(OpReplay::Build(initial, ops, &replay));
  CrashStateCollector collector(ops, &replay, options.max_states, out);
  const size_t n = ops.size();
  std::vector<size_t> points;
  if (options.only_after_ops.empty()) {
    for (size_t k = 0; k <= n; ++k) points.push_back(k);
  } else {
    for (uint64_t k :
         std::set<uint64_t>(options.only_after_ops.begin(), options.only_after_ops.end())) {
      if (k <= n) points.push_back(static_cast<size_t>(k));
    }
  }
  const OpReplay::LostFlags nothing_lost(n, 0);
  for (size_t k : points) {
    CKPTSPEC_RETURN_IF_ERROR(collector.Consider(PersistenceModel::kOrdered, k, nothing_lost, n, 0));
  }
  std::mt19937_64 rng(options.seed);
  for (size_t k : points) {
    CKPTSPEC_RETURN_IF_ERROR(ConsiderWeakPoint(ops, k, options, &replay, &rng, &collector, out));
  }
  return Status::OK();
}

Status BuildCrashState(const InitialTree& initial, const std::vector<FsOp>& ops,
                       const CrashPoint& point, FileTree* out) {
  out->clear();
  OpReplay replay;
  CKPTSPEC_RETURN_IF_ERROR(OpReplay::Build(initial, ops, &replay));
  if (point.model == PersistenceModel::kOrdered && (!point.lost.empty() || point.torn)) {
    return Status::InvalidArgument("an ordered crash point loses nothing: " + point.Describe(ops));
  }
  if (point.after_ops > ops.size()) {
    return Status::InvalidArgument(
        "the crash point comes after " + std::to_string(point.after_ops) +
        " operations, but the recording has " + std::to_string(ops.size()));
  }
  const size_t k = static_cast<size_t>(point.after_ops);
  const size_t* torn = point.torn ? &*point.torn : nullptr;
  CKPTSPEC_RETURN_IF_ERROR(replay.CheckPoint(k, point.lost, torn, point.torn_bytes));
  OpReplay::LostFlags lost(ops.size(), 0);
  for (size_t i : point.lost) lost[i] = 1;
  replay.BuildTree(k, lost, torn ? *torn : ops.size(), point.torn_bytes, out);
  return Status::OK();
}

Status MaterializeTree(const FileTree& tree, const std::string& root) {
  for (const auto& entry : tree) CKPTSPEC_RETURN_IF_ERROR(CheckTreePath(entry.first));
  struct stat st {};
  if (lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("the tree's root '" + root + "' is not a directory");
  }
  Env* env = Env::Posix();
  std::vector<std::string> names;
  CKPTSPEC_RETURN_IF_ERROR(env->GetChildren(root, &names));
  const int root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root_fd < 0) return Status::IOError("cannot open '" + root + "': " + strerror(errno));
  for (const std::string& name : names) {
    const Status removed = PosixRemoveTreeAt(root_fd, root, name);
    if (!removed.ok()) {
      close(root_fd);
      return removed;
    }
  }
  close(root_fd);
  std::set<std::string> dirs;  // relative, every directory the tree names or implies
  for (const auto& [path, content] : tree) {
    for (size_t slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      dirs.insert(path.substr(0, slash));
    }
  }
  for (const std::string& dir : dirs) {  // parents sort before their children
    CKPTSPEC_RETURN_IF_ERROR(env->CreateDir(JoinPath(root, dir)));
  }
  for (const auto& [path, content] : tree) {
    if (path.back() == '/') continue;
    CKPTSPEC_RETURN_IF_ERROR(WriteFileSynced(env, JoinPath(root, path), content));
  }
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    CKPTSPEC_RETURN_IF_ERROR(env->SyncDir(JoinPath(root, *it)));
  }
  return env->SyncDir(root);
}

}  // namespace ckptspec
