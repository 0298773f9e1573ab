// P6, constant structure: DiffStructure (contract in validate.h).
#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "model/validate.h"
#include "model/validate_util.h"

namespace ckptspec {
namespace {

using validate_internal::EntryRef;
using validate_internal::GroupObjectsByKey;
using validate_internal::GroupTensorsByKey;
using validate_internal::KeyGroup;
using validate_internal::MakeViolation;
using validate_internal::ObjectShardBox;
using validate_internal::Quoted;
using validate_internal::RanksToString;
using validate_internal::SortUnique;

// The structural fields of an entry, replica id apart ("shape") and the replica id.
auto ShapeTie(const TensorSpec& s) {
  return std::tie(s.global_offset, s.local_shape, s.prepend_axis_num, s.dtype, s.global_shape);
}
auto ShapeTie(const ObjectSpec& s) { return std::tie(s.global_offset, s.global_shape); }

std::string Describe(const TensorSpec& s) {
  return BoxToString(s.box()) + " " + DTypeName(s.dtype) + " of " + DimsToString(s.global_shape);
}
std::string Describe(const ObjectSpec& s) {
  return BoxToString(ObjectShardBox(s)) + " of " + DimsToString(s.global_shape);
}

template <typename Spec>
std::string DescribeChunks(const std::vector<EntryRef<Spec>>& entries, size_t begin, size_t end) {
  if (begin == end) return "none";
  std::string s;
  constexpr size_t kMaxListed = 3;
  for (size_t i = begin; i < end && i < begin + kMaxListed; ++i) {
    if (i > begin) s += ", ";
    s += Describe(*entries[i].spec);
  }
  if (end - begin > kMaxListed) s += ", ... (" + std::to_string(end - begin) + " chunks)";
  return s;
}

template <typename Spec>
std::vector<EntryRef<Spec>> SortedByRank(const KeyGroup<Spec>& group) {
  std::vector<EntryRef<Spec>> entries = group.entries;
  std::sort(entries.begin(), entries.end(), [](const EntryRef<Spec>& a, const EntryRef<Spec>& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (ShapeTie(*a.spec) != ShapeTie(*b.spec)) return ShapeTie(*a.spec) < ShapeTie(*b.spec);
    return a.spec->replica_id < b.spec->replica_id;
  });
  return entries;
}

template <typename Spec>
void CompareKey(const KeyGroup<Spec>& before_group, const KeyGroup<Spec>& after_group,
                bool is_object, StructureDiff* diff) {
  const std::vector<EntryRef<Spec>> before = SortedByRank(before_group);
  const std::vector<EntryRef<Spec>> after = SortedByRank(after_group);
  std::vector<int64_t> reshaped, rereplicated;
  std::string reshaped_detail, rereplicated_detail;
  size_t i = 0, j = 0;
  while (i < before.size() || j < after.size()) {
    int64_t rank;
    if (j == after.size() || (i < before.size() && before[i].rank < after[j].rank)) {
      rank = before[i].rank;
    } else {
      rank = after[j].rank;
    }
    size_t i_end = i, j_end = j;
    while (i_end < before.size() && before[i_end].rank == rank) ++i_end;
    while (j_end < after.size() && after[j_end].rank == rank) ++j_end;
    bool same_shapes = (i_end - i) == (j_end - j);
    bool same_replicas = true;
    for (size_t k = 0; same_shapes && k < i_end - i; ++k) {
      const Spec& a = *before[i + k].spec;
      const Spec& b = *after[j + k].spec;
      if (ShapeTie(a) != ShapeTie(b)) {
        same_shapes = false;
      } else if (same_replicas && a.replica_id != b.replica_id) {
        same_replicas = false;
        if (rereplicated_detail.empty()) {
          rereplicated_detail = "rank " + std::to_string(rank) + ": chunk " + Describe(a) +
                                " replica id " + ReplicaIdToString(a.replica_id) + " -> " +
                                ReplicaIdToString(b.replica_id);
        }
      }
    }
    if (!same_shapes) {
      reshaped.push_back(rank);
      if (reshaped_detail.empty()) {
        reshaped_detail = "rank " + std::to_string(rank) + ": chunks " +
                          DescribeChunks(before, i, i_end) + " -> " +
                          DescribeChunks(after, j, j_end);
      }
    } else if (!same_replicas) {
      rereplicated.push_back(rank);
    }
    i = i_end;
    j = j_end;
  }
  const std::string key(after_group.key);
  if (!reshaped.empty()) {
    diff->changes.push_back(
        StructureChange{ViolationKind::kReshaped, is_object, key, reshaped, reshaped_detail});
  } else if (!rereplicated.empty()) {
    diff->changes.push_back(StructureChange{ViolationKind::kReReplicated, is_object, key,
                                            rereplicated, rereplicated_detail});
  }
}

template <typename Spec>
void DiffGroups(const std::vector<KeyGroup<Spec>>& before, const std::vector<KeyGroup<Spec>>& after,
                bool is_object, StructureDiff* diff) {
  std::unordered_map<std::string_view, size_t> before_index, after_index;
  for (size_t i = 0; i < before.size(); ++i) before_index.emplace(before[i].key, i);
  for (size_t i = 0; i < after.size(); ++i) after_index.emplace(after[i].key, i);
  for (const auto& group : after) {
    auto it = before_index.find(group.key);
    if (it == before_index.end()) {
      std::vector<int64_t> ranks = RanksOf(group);
      diff->changes.push_back(StructureChange{ViolationKind::kAdded, is_object,
                                              std::string(group.key), ranks,
                                              "on " + RanksToString(ranks)});
    } else {
      CompareKey(before[it->second], group, is_object, diff);
    }
  }
  for (const auto& group : before) {
    if (after_index.count(group.key)) continue;
    std::vector<int64_t> ranks = RanksOf(group);
    diff->changes.push_back(StructureChange{ViolationKind::kRemoved, is_object,
                                            std::string(group.key), ranks,
                                            "on " + RanksToString(ranks)});
  }
}

}  // namespace

StructureDiff DiffStructure(const GlobalSignature& before, const GlobalSignature& after) {
  StructureDiff diff;
  DiffGroups(GroupTensorsByKey(before), GroupTensorsByKey(after), /*is_object=*/false, &diff);
  DiffGroups(GroupObjectsByKey(before), GroupObjectsByKey(after), /*is_object=*/true, &diff);
  return diff;
}

std::vector<Violation> StructureDiff::ToViolations() const {
  std::vector<Violation> out;
  for (const StructureChange& c : changes) {
    const std::string what =
        std::string(c.is_object ? "ShardedObject " : "tensor ") + Quoted(c.key);
    std::string sentence;
    switch (c.kind) {
      case ViolationKind::kAdded:
        sentence = what + " is only in the second signature (" + c.detail +
                   "): the structure depends on state";
        break;
      case ViolationKind::kRemoved:
        sentence = what + " is only in the first signature (" + c.detail +
                   "): the structure depends on state";
        break;
      case ViolationKind::kReshaped:
        sentence =
            what + " changed its chunks on " + RanksToString(c.ranks) + "; first " + c.detail;
        break;
      default:
        sentence =
            what + " changed replica ids on " + RanksToString(c.ranks) + "; first " + c.detail;
        break;
    }
    out.push_back(MakeViolation("P6", c.kind, c.key, std::nullopt, c.ranks, sentence));
  }
  return out;
}

}  // namespace ckptspec
