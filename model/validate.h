// Validators over the signatures of all ranks of one save: sharding integrity (P4), key
// injectivity (P5), constant structure (P6) and common-state invariance (P11) of docs/DESIGN.md §5.
//
// Contract: every function here takes any GlobalSignature, however malformed, and RETURNS what is
// wrong; none asserts, throws or crashes. Each Violation names the property, the kind, the key,
// the box (when one applies), the ranks involved (sorted, deduplicated) and a sentence a person can
// act on. Results are deterministic (keys in order of first appearance, rank by rank).
//
// Cost: linear in the number of entries up to sorting within one key (n log n), never per element
// of a tensor and never quadratic in the number of replicas of one chunk; the sweep over an
// irregular grid is O(n log n) for tensors of up to two axes (box_overlap.h has the bound beyond). The number of reported
// violations per key and kind is capped (kMaxReportsPerKey), with one summary violation for the
// rest, so a badly broken 16k-rank save yields a readable report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/box.h"
#include "model/sharded.h"

namespace ckptspec {

enum class ViolationKind {
  kInvalidEntry,            // P4: an entry fails ValidateTensorSpec / ValidateObjectSpec
  kDtypeMismatch,           // P4: entries of one tensor key disagree on dtype
  kGlobalShapeMismatch,     // P4: entries of one key disagree on the global shape
  kGridMismatch,            // P4: regular vs irregular grid, or different axis_fragmentations
  kLocalShapeMismatch,      // P4: different local shapes on one regular grid
  kOverlap,                 // P4: elements of a tensor covered by more than one main replica
  kGap,                     // P4: elements of a tensor covered by no main replica
  kDuplicateMain,           // P4: a ShardedObject unique key with more than one main replica
  kMissingObject,           // P4: a ShardedObject shard of the global shape with no main replica
  kExtraObject,             // P4: a ShardedObject offset outside its global shape
  kKeyCollision,            // P5: distinct state (origins, or main contents) under one key
  kReplicaContentMismatch,  // P5: replicas of one chunk hold different contents
  kCommonStateDivergence,   // P11: a rank's common state differs from the lowest rank's
  kAdded,                   // P6: a key only in the second signature
  kRemoved,                 // P6: a key only in the first signature
  kReshaped,                // P6: dtype, global shape or a rank's chunks changed
  kReReplicated,            // P6: same chunks, different replica ids
};

// "invalid_entry", "dtype_mismatch", ..., "re_replicated".
const char* ViolationKindName(ViolationKind kind);

struct Violation {
  std::string property;  // "P4", "P5", "P6", "P11"
  ViolationKind kind = ViolationKind::kInvalidEntry;
  // The tensor or object key; for P11 the JSON pointer of the first difference ("/optimizer/lr").
  std::string key;
  std::optional<Box> box;      // the cell, chunk, gap or object shard concerned, if any
  std::vector<int64_t> ranks;  // sorted, deduplicated
  std::string message;         // names the key, the box and the ranks

  // "P4 overlap: <message>".
  std::string ToString() const;
};

// At most this many violations of one kind are reported per key; one more summarizes the rest.
inline constexpr int kMaxReportsPerKey = 16;
// Irregular grids: gaps in n-D tensors (n >= 2) are located on the grid of all chunk boundaries
// when it has at most this many cells; otherwise only the missing volume is reported.
inline constexpr int64_t kMaxCompressedCells = 1000000;

// P4, sharding integrity (Megatron's validate_sharding_integrity, made exact):
// - Tensors: all entries of a key agree on dtype, global shape and grid kind (and fragmentations
//   and local shape on a regular grid); then exactly one MAIN replica (IsMainReplica) covers every
//   element. Regular grid: main replicas are counted per cell; a cell with none is a kGap, with
//   several a kOverlap (each reported with the cell's box and the ranks). Irregular grid: main
//   chunks are swept along the axis with the most distinct offsets; every intersecting pair is a
//   kOverlap (box = the intersection). Gaps are located exactly in 1-D; in n-D on the compressed
//   grid of chunk boundaries when small (kMaxCompressedCells), else reported as a missing volume;
//   with an overlap present in n-D the gap check is skipped (the overlap is reported).
// - Objects: entries of a key agree on the global shape; every unique key has at most one main
//   replica (kDuplicateMain) and every offset of the global shape has one (kMissingObject, the
//   offsets listed up to the cap); offsets outside the shape are kExtraObject. A rank-local key
//   (IsRankLocal: no sharding declared) needs no coverage: each rank holds it at most once
//   (kDuplicateMain otherwise), and a key rank-local on some ranks and sharded on others is a
//   kGlobalShapeMismatch.
// - Entries failing validation are kInvalidEntry and take no further part.
// Ranks named for a gap or a missing object are those holding non-main replicas of it.
std::vector<Violation> CheckShardingIntegrity(const GlobalSignature& signature);

// One chunk of a tensor as an index records it: its box, and the rank that wrote it.
struct WrittenChunk {
  Box box;
  int64_t rank = 0;
};

// P4's coverage check for the chunks of one tensor on an irregular grid, every chunk a main
// replica (a PyTorch DCP index): the overlap and gap violations CheckShardingIntegrity reports for
// such a key, without a GlobalSignature, so that the key is held once and not copied per chunk.
// Precondition: every box has the axes of `global_shape` and lies inside it (the caller validated
// the index).
std::vector<Violation> CheckChunkTiling(std::string_view key, const Dims& global_shape,
                                        const std::vector<WrittenChunk>& chunks);

// P5, key injectivity: distinct state never shares a key.
// - kKeyCollision: entries of one key with different non-empty origins (each origin named with its
//   ranks); a key used both for a ShardedTensor and a ShardedObject; main replicas of one chunk
//   (same key and box) whose digests differ (distinct state at one offset, docs/BUGS.md B08).
//   Rank-local objects are each rank's own: their digests are not compared.
// - kReplicaContentMismatch: replicas of one chunk whose digests are both present and differ,
//   where the main replicas agree among themselves.
// Entries are taken as they are (malformed ones are P4's to report).
std::vector<Violation> CheckKeyInjectivity(const GlobalSignature& signature);

// P11: every rank with a non-null `common` holds the identical tree. Ranks are grouped by their
// serialized tree; each group that differs from the lowest such rank's yields one
// kCommonStateDivergence naming the first differing JSON pointer (object members in sorted order,
// arrays by index; type changes, missing and unexpected members and array lengths named), both
// values and the group's ranks. Integers and floats are different types (1 vs 1.0 differ).
// A tree deeper than kMaxCommonDepth is reported as kInvalidEntry instead of being compared.
std::vector<Violation> CheckCommonState(const GlobalSignature& signature);

// P6: how the structure of a save changed. Structure is, per rank and key, the set of (global
// shape, chunk box, dtype, replica id); digests, origins, common state and data do not count.
struct StructureChange {
  ViolationKind kind = ViolationKind::kAdded;  // kAdded, kRemoved, kReshaped or kReReplicated
  bool is_object = false;                      // ShardedObject rather than ShardedTensor
  std::string key;
  std::vector<int64_t> ranks;  // ranks whose entries of the key were added, removed or changed
  std::string detail;          // e.g. "rank 3: chunks [0:4] -> [0:2]"
};

struct StructureDiff {
  std::vector<StructureChange> changes;

  bool empty() const { return changes.empty(); }
  // One "P6" violation per change.
  std::vector<Violation> ToViolations() const;
};

StructureDiff DiffStructure(const GlobalSignature& before, const GlobalSignature& after);

// One line per violation ("P4 overlap: ..."), preceded by a count; "no violations" when empty.
std::string FormatViolations(const std::vector<Violation>& violations);

}  // namespace ckptspec
