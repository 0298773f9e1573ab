// Internals shared by the validators (validate.h): grouping entries by key without copying them,
// and the pieces of violation sentences. Not part of the public API.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/box.h"
#include "model/sharded.h"
#include "model/validate.h"

namespace ckptspec {
namespace validate_internal {

// One entry of one rank, by reference into the signature (which must outlive it).
template <typename Spec>
struct EntryRef {
  const Spec* spec;
  int64_t rank;
};
using TensorRef = EntryRef<TensorSpec>;
using ObjectRef = EntryRef<ObjectSpec>;

template <typename Spec>
struct KeyGroup {
  std::string_view key;
  std::vector<EntryRef<Spec>> entries;  // in rank order, then in the rank's entry order
};

// Entries grouped by key, groups in order of the key's first appearance (rank by rank).
std::vector<KeyGroup<TensorSpec>> GroupTensorsByKey(const GlobalSignature& signature);
std::vector<KeyGroup<ObjectSpec>> GroupObjectsByKey(const GlobalSignature& signature);

// Sorts and deduplicates.
void SortUnique(std::vector<int64_t>* ranks);

// The ranks that hold an entry of `group`, ascending, each once.
template <typename Spec>
std::vector<int64_t> RanksOf(const KeyGroup<Spec>& group) {
  std::vector<int64_t> ranks;
  for (const auto& e : group.entries) ranks.push_back(e.rank);
  SortUnique(&ranks);
  return ranks;
}

// "rank 3", "ranks 0-3, 8, 10-15"; long lists end with "... (N ranks)". Expects sorted unique.
std::string RanksToString(const std::vector<int64_t>& ranks);

// The box of an object shard: its offset with extent 1 on every axis.
Box ObjectShardBox(const ObjectSpec& spec);

// Extent of a tensor chunk along global axis a (1 on a prepended axis), without building a Box.
// Safe on malformed specs (an axis the local shape lacks reads as -1).
inline int64_t ChunkExtent(const TensorSpec& spec, size_t axis) {
  const size_t prepend = spec.prepend_axis_num > 0 ? static_cast<size_t>(spec.prepend_axis_num) : 0;
  if (axis < prepend) return 1;
  return axis - prepend < spec.local_shape.size() ? spec.local_shape[axis - prepend] : -1;
}

// Lexicographic comparison of two chunks by (offset, extents); both valid and of equal rank.
int CompareChunks(const TensorSpec& a, const TensorSpec& b);
bool SameChunk(const TensorSpec& a, const TensorSpec& b);

Violation MakeViolation(const char* property, ViolationKind kind, std::string_view key,
                        std::optional<Box> box, std::vector<int64_t> ranks, std::string message);

// Quoted key for sentences: 'decoder.weight'.
std::string Quoted(std::string_view key);

}  // namespace validate_internal
}  // namespace ckptspec
