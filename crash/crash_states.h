// The states a crash could leave a checkpoint root in, built from its state before a save
// (crash/initial_tree.h) and what the save did to it (crash/fs_op.h), under a persistence model
// (crash/persistence_model.h states the exact rules); and one of them written out as files.
//
// Contracts:
//  - Operations are replayed on an abstract file system of inodes (crash/op_replay.h): writes land
//    in inodes, so a file renamed while open, or a renamed directory, carries its data along.
//  - A crash point is the number of completed operations (after_ops) and, under posix-weak, which
//    non-durable operations did not persist (`lost`) and which write persisted torn.
//  - EnumerateCrashStates builds these candidates, in this order:
//      * ordered: every prefix, after_ops = 0..n;
//      * posix-weak, at every after_ops = k in 0..n, with the non-durable operations below k:
//        all of them lost; each one lost alone (ALICE's single-op exploration); each non-durable
//        write torn at half its bytes (rounded down) with everything else persisted; and
//        `max_variants_per_point` random subsets (each non-durable op lost with probability 1/2,
//        a generator seeded by `seed`, so a seed gives the same states every time).
//    Every candidate's lost set is closed under the data-order rule: losing a write or truncate of
//    a file loses that file's later non-durable ones too, and they are listed in `lost`.
//    Candidates are deduplicated by a 128-bit digest of their tree (trees are never kept: memory
//    is the recording plus one digest per distinct state and per distinct file content); the first
//    point giving each tree is kept, so `distinct` lists ordered points first, then weak ones.
//  - Errors: an FsOpKind::kUnseen operation (FailedPrecondition naming its detail: the recording
//    is incomplete), an operation naming an inode neither the snapshot nor an earlier operation
//    created (InvalidArgument naming the op and the inode), a file larger than
//    kMaxReplayedFileBytes or trees beyond op_replay.h's tree bound (NotSupported, naming what set
//    the largest file's size), more than `max_states` distinct states
//    (FailedPrecondition naming the bound and the point that crossed it).
//  - Cost: (n + 1) * (2 + non-durable ops + non-durable writes + max_variants_per_point)
//    candidates at most, each a replay of its entry operations and a walk of its tree; each
//    distinct (file, persisted data ops) content is built once.
//  - BuildCrashState checks the point (lost and torn ops non-durable below after_ops, the
//    data-order rule; ordered points lose nothing) and returns its tree.
//  - MaterializeTree replaces everything under `root` (an existing directory, not a symbolic
//    link) by `tree`: every path is checked first (relative, no "." or ".." or empty component:
//    an InvalidArgument names it, and nothing is touched), then root's entries are removed
//    (never following a link), then files are written and synced and directories synced.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crash/fs_op.h"
#include "crash/initial_tree.h"
#include "crash/persistence_model.h"
#include "model/status.h"

namespace ckptspec {

// Relative path -> bytes; an empty directory is "dir/" -> "" (directories are implied by their
// files: the convention of ckptspec's StorageTree).
using FileTree = std::map<std::string, std::string>;

struct CrashPoint {
  PersistenceModel model = PersistenceModel::kOrdered;
  uint64_t after_ops = 0;      // the crash came after the first after_ops operations completed
  std::vector<size_t> lost;    // indexes (< after_ops) of completed ops that did not persist
  std::optional<size_t> torn;  // a write that persisted partially (posix-weak) ...
  uint64_t torn_bytes = 0;     // ... its first torn_bytes bytes
  // "after op 12 of 40 (rename a/.tmp -> a/meta) under posix-weak, lost: write of x (4096 bytes
  // at 0), create of y; torn: write of z (10 bytes at 0) kept 5 bytes". Op numbers count from 1.
  std::string Describe(const std::vector<FsOp>& ops) const;
};

struct CrashStateOptions {
  size_t max_variants_per_point = 8;  // random weak subsets per crash point
  uint64_t seed = 0;
  uint64_t max_states = 4096;  // more distinct states is an error
  // Not empty: only these crash points (after_ops values; those past the recording are ignored)
  // are enumerated, for a caller that draws the points first. A save that makes no fsync has on
  // the order of n^2 weak candidates in all, n of them at each point.
  std::vector<uint64_t> only_after_ops;
};

struct CrashStates {
  std::vector<CrashPoint> distinct;  // one point per distinct tree, ordered model first
  uint64_t candidates = 0;           // crash points x variants built before deduplication
  uint64_t weak_combinations = 0;    // sum over points of 2^(non-durable ops), saturating
};

Status EnumerateCrashStates(const InitialTree& initial, const std::vector<FsOp>& ops,
                            const CrashStateOptions& options, CrashStates* out);

// The tree the disk holds in crash point `point`.
Status BuildCrashState(const InitialTree& initial, const std::vector<FsOp>& ops,
                       const CrashPoint& point, FileTree* out);

// Replaces everything under `root` by `tree`, files written and synced.
Status MaterializeTree(const FileTree& tree, const std::string& root);

}  // namespace ckptspec
