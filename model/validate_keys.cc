// P5, key injectivity: CheckKeyInjectivity (contract in validate.h).
#include <algorithm>
#include <unordered_map>
#include <utility>

#include "model/validate.h"
#include "model/validate_util.h"

namespace ckptspec {
namespace {

using validate_internal::CompareChunks;
using validate_internal::EntryRef;
using validate_internal::GroupObjectsByKey;
using validate_internal::GroupTensorsByKey;
using validate_internal::KeyGroup;
using validate_internal::MakeViolation;
using validate_internal::ObjectRef;
using validate_internal::ObjectShardBox;
using validate_internal::Quoted;
using validate_internal::RanksToString;
using validate_internal::SortUnique;

constexpr const char* kP5 = "P5";

// The ranks holding each distinct value, values in order of first appearance.
template <typename Value>
struct ValueRanks {
  std::vector<std::pair<Value, std::vector<int64_t>>> values;
  std::unordered_map<Value, size_t> index;

  void Add(const Value& value, int64_t rank) {
    auto [it, inserted] = index.emplace(value, values.size());
    if (inserted) values.emplace_back(value, std::vector<int64_t>());
    values[it->second].second.push_back(rank);
  }
};

int CompareObjects(const ObjectSpec& a, const ObjectSpec& b) {
  if (a.global_offset != b.global_offset) return a.global_offset < b.global_offset ? -1 : 1;
  if (a.global_shape != b.global_shape) return a.global_shape < b.global_shape ? -1 : 1;
  return 0;
}

Box ChunkBoxOf(const TensorSpec& spec) { return spec.box(); }
Box ChunkBoxOf(const ObjectSpec& spec) { return ObjectShardBox(spec); }
int CompareEntries(const TensorSpec& a, const TensorSpec& b) { return CompareChunks(a, b); }
int CompareEntries(const ObjectSpec& a, const ObjectSpec& b) { return CompareObjects(a, b); }

template <typename Spec>
void CheckOrigins(const KeyGroup<Spec>& group, const char* noun, std::vector<Violation>* out) {
  // Distinct origins are few; a map keeps 16k ranks of one origin cheap.
  std::unordered_map<std::string_view, size_t> index;
  std::vector<std::pair<std::string_view, std::vector<int64_t>>> origins;
  for (const auto& e : group.entries) {
    if (e.spec->origin.empty()) continue;
    auto [it, inserted] = index.emplace(std::string_view(e.spec->origin), origins.size());
    if (inserted) origins.emplace_back(it->first, std::vector<int64_t>());
    origins[it->second].second.push_back(e.rank);
  }
  if (origins.size() < 2) return;
  std::vector<int64_t> ranks;
  std::string message = std::string(noun) + " key " + Quoted(group.key) + " is shared by " +
                        std::to_string(origins.size()) + " distinct states: ";
  constexpr size_t kMaxListed = 6;
  for (size_t i = 0; i < origins.size(); ++i) {
    SortUnique(&origins[i].second);
    ranks.insert(ranks.end(), origins[i].second.begin(), origins[i].second.end());
    if (i < kMaxListed) {
      if (i) message += "; ";
      message +=
          "origin \"" + std::string(origins[i].first) + "\" on " + RanksToString(origins[i].second);
    }
  }
  if (origins.size() > kMaxListed) message += "; ...";
  out->push_back(MakeViolation(kP5, ViolationKind::kKeyCollision, group.key, std::nullopt,
                               std::move(ranks), message));
}

template <typename Spec>
std::string DescribeDigests(const ValueRanks<uint64_t>& digests) {
  std::string s;
  for (size_t i = 0; i < digests.values.size(); ++i) {
    if (i == 4) return s + "; ... (" + std::to_string(digests.values.size()) + " digests)";
    if (i) s += "; ";
    std::vector<int64_t> ranks = digests.values[i].second;
    SortUnique(&ranks);
    s += "digest " + DigestHex(digests.values[i].first) + " on " + RanksToString(ranks);
  }
  return s;
}

// Groups the key's entries by chunk (same box) and compares the digests of each chunk's replicas.
template <typename Spec>
void CheckDigests(const KeyGroup<Spec>& group, const char* noun, std::vector<Violation>* out) {
  std::vector<EntryRef<Spec>> entries;
  for (const auto& e : group.entries) {
    if (e.spec->digest) entries.push_back(e);
  }
  if (entries.size() < 2) return;
  std::sort(entries.begin(), entries.end(), [](const EntryRef<Spec>& a, const EntryRef<Spec>& b) {
    const int c = CompareEntries(*a.spec, *b.spec);
    return c != 0 ? c < 0 : a.rank < b.rank;
  });
  int64_t collisions = 0, mismatches = 0;
  for (size_t i = 0; i < entries.size();) {
    size_t j = i + 1;
    while (j < entries.size() && CompareEntries(*entries[i].spec, *entries[j].spec) == 0) ++j;
    ValueRanks<uint64_t> all, mains;
    for (size_t k = i; k < j; ++k) {
      all.Add(*entries[k].spec->digest, entries[k].rank);
      if (IsMainReplica(entries[k].spec->replica_id))
        mains.Add(*entries[k].spec->digest, entries[k].rank);
    }
    if (all.values.size() > 1) {
      std::vector<int64_t> ranks;
      for (size_t k = i; k < j; ++k) ranks.push_back(entries[k].rank);
      const Box box = ChunkBoxOf(*entries[i].spec);
      if (mains.values.size() > 1) {
        if (collisions++ < kMaxReportsPerKey) {
          out->push_back(
              MakeViolation(kP5, ViolationKind::kKeyCollision, group.key, box, std::move(ranks),
                            "main replicas of " + std::string(noun) + " " + Quoted(group.key) +
                                " chunk " + BoxToString(box) + " hold different contents (" +
                                DescribeDigests<Spec>(mains) + "): distinct state shares the key"));
        }
      } else if (mismatches++ < kMaxReportsPerKey) {
        out->push_back(MakeViolation(
            kP5, ViolationKind::kReplicaContentMismatch, group.key, box, std::move(ranks),
            "replicas of " + std::string(noun) + " " + Quoted(group.key) + " chunk " +
                BoxToString(box) + " disagree: " + DescribeDigests<Spec>(all) +
                (mains.values.empty()
                     ? std::string("; no main replica carries a digest")
                     : "; the main replica's is " + DigestHex(mains.values[0].first))));
      }
    }
    i = j;
  }
  if (collisions > kMaxReportsPerKey) {
    out->push_back(MakeViolation(kP5, ViolationKind::kKeyCollision, group.key, std::nullopt, {},
                                 std::string(noun) + " " + Quoted(group.key) + ": " +
                                     std::to_string(collisions - kMaxReportsPerKey) +
                                     " more chunks whose main replicas differ"));
  }
  if (mismatches > kMaxReportsPerKey) {
    out->push_back(MakeViolation(
        kP5, ViolationKind::kReplicaContentMismatch, group.key, std::nullopt, {},
        std::string(noun) + " " + Quoted(group.key) + ": " +
            std::to_string(mismatches - kMaxReportsPerKey) + " more chunks whose replicas differ"));
  }
}

}  // namespace

std::vector<Violation> CheckKeyInjectivity(const GlobalSignature& signature) {
  std::vector<Violation> out;
  const auto tensors = GroupTensorsByKey(signature);
  const auto objects = GroupObjectsByKey(signature);
  std::unordered_map<std::string_view, size_t> object_index;
  for (size_t i = 0; i < objects.size(); ++i) object_index.emplace(objects[i].key, i);
  for (const auto& group : tensors) {
    auto it = object_index.find(group.key);
    if (it == object_index.end()) continue;
    const std::vector<int64_t> tensor_ranks = RanksOf(group);
    const std::vector<int64_t> object_ranks = RanksOf(objects[it->second]);
    std::vector<int64_t> ranks = tensor_ranks;
    ranks.insert(ranks.end(), object_ranks.begin(), object_ranks.end());
    out.push_back(MakeViolation(
        kP5, ViolationKind::kKeyCollision, group.key, std::nullopt, std::move(ranks),
        "key " + Quoted(group.key) + " names a ShardedTensor on " + RanksToString(tensor_ranks) +
            " and a ShardedObject on " + RanksToString(object_ranks)));
  }
  for (const auto& group : tensors) {
    CheckOrigins(group, "tensor", &out);
    CheckDigests(group, "tensor", &out);
  }
  for (const auto& group : objects) {
    CheckOrigins(group, "ShardedObject", &out);
    // Rank-local objects hold each rank's own value: their digests differ by design.
    KeyGroup<ObjectSpec> sharded{group.key, {}};
    for (const ObjectRef& e : group.entries) {
      if (!IsRankLocal(*e.spec)) sharded.entries.push_back(e);
    }
    CheckDigests(sharded, "ShardedObject", &out);
  }
  return out;
}

}  // namespace ckptspec
