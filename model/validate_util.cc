#include "model/validate_util.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace ckptspec {
namespace validate_internal {
namespace {

template <typename Spec, typename EntriesOf>
std::vector<KeyGroup<Spec>> GroupByKey(const GlobalSignature& signature, EntriesOf entries_of) {
  std::vector<KeyGroup<Spec>> groups;
  std::unordered_map<std::string_view, size_t> index;
  for (const RankSignature& rank : signature.ranks) {
    for (const Spec& spec : entries_of(rank)) {
      auto [it, inserted] = index.emplace(std::string_view(spec.key), groups.size());
      if (inserted) groups.push_back(KeyGroup<Spec>{spec.key, {}});
      groups[it->second].entries.push_back(EntryRef<Spec>{&spec, rank.rank});
    }
  }
  return groups;
}

}  // namespace

std::vector<KeyGroup<TensorSpec>> GroupTensorsByKey(const GlobalSignature& signature) {
  return GroupByKey<TensorSpec>(
      signature, [](const RankSignature& r) -> const auto& { return r.tensors; });
}

std::vector<KeyGroup<ObjectSpec>> GroupObjectsByKey(const GlobalSignature& signature) {
  return GroupByKey<ObjectSpec>(
      signature, [](const RankSignature& r) -> const auto& { return r.objects; });
}

void SortUnique(std::vector<int64_t>* ranks) {
  std::sort(ranks->begin(), ranks->end());
  ranks->erase(std::unique(ranks->begin(), ranks->end()), ranks->end());
}

std::string RanksToString(const std::vector<int64_t>& ranks) {
  if (ranks.empty()) return "no rank";
  if (ranks.size() == 1) return "rank " + std::to_string(ranks[0]);
  constexpr int kMaxRuns = 12;
  std::string s = "ranks ";
  int runs = 0;
  size_t i = 0;
  while (i < ranks.size()) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (j == i + 1) j = i;  // two in a row read better as "3, 4" than "3-4"
    if (runs == kMaxRuns) {
      s += ", ... (" + std::to_string(ranks.size()) + " ranks)";
      break;
    }
    if (runs) s += ", ";
    s += std::to_string(ranks[i]);
    if (j > i) s += "-" + std::to_string(ranks[j]);
    ++runs;
    i = j + 1;
  }
  return s;
}

Box ObjectShardBox(const ObjectSpec& spec) {
  Box box;
  box.offset = spec.global_offset;
  box.shape.assign(spec.global_offset.size(), 1);
  return box;
}

int CompareChunks(const TensorSpec& a, const TensorSpec& b) {
  const size_t rank = std::min(a.global_offset.size(), b.global_offset.size());
  for (size_t i = 0; i < rank; ++i) {
    if (a.global_offset[i] != b.global_offset[i])
      return a.global_offset[i] < b.global_offset[i] ? -1 : 1;
  }
  for (size_t i = 0; i < rank; ++i) {
    const int64_t ea = ChunkExtent(a, i), eb = ChunkExtent(b, i);
    if (ea != eb) return ea < eb ? -1 : 1;
  }
  if (a.global_offset.size() != b.global_offset.size()) {
    return a.global_offset.size() < b.global_offset.size() ? -1 : 1;
  }
  return 0;
}

bool SameChunk(const TensorSpec& a, const TensorSpec& b) { return CompareChunks(a, b) == 0; }

Violation MakeViolation(const char* property, ViolationKind kind, std::string_view key,
                        std::optional<Box> box, std::vector<int64_t> ranks, std::string message) {
  Violation v;
  v.property = property;
  v.kind = kind;
  v.key = std::string(key);
  v.box = std::move(box);
  SortUnique(&ranks);
  v.ranks = std::move(ranks);
  v.message = std::move(message);
  return v;
}

std::string Quoted(std::string_view key) { return "'" + std::string(key) + "'"; }

}  // namespace validate_internal
}  // namespace ckptspec
