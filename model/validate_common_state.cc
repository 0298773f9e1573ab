// P11, common-state invariance: CheckCommonState (contract in validate.h).
#include <algorithm>
#include <unordered_map>
#include <utility>

#include "model/json_util.h"
#include "model/signature_json.h"
#include "model/validate.h"
#include "model/validate_util.h"

namespace ckptspec {
namespace {

using nlohmann::json;
using validate_internal::MakeViolation;
using validate_internal::RanksToString;

struct Difference {
  std::string path;  // JSON pointer; "" is the whole tree
  std::string what;  // e.g. "0.001 on rank 0, 0.002 on ranks 3, 7"
};

bool IsInteger(const json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

// Integers signed or unsigned are one type; integers and floats are two.
bool SameType(const json& a, const json& b) {
  if (IsInteger(a) && IsInteger(b)) return true;
  return a.type() == b.type();
}

// First difference between a (the reference) and b in depth-first order, object members in sorted
// order. Both trees are at most kMaxCommonDepth deep (checked by the caller), so recursion is
// bounded. `a_name` / `b_name` name the ranks for the sentence.
bool FirstDifference(const json& a, const json& b, const std::string& path,
                     const std::string& a_name, const std::string& b_name, Difference* out) {
  auto values = [&](const std::string& va, const std::string& vb) {
    return va + " on " + a_name + ", " + vb + " on " + b_name;
  };
  if (!SameType(a, b)) {
    *out = {path, "type " + std::string(JsonTypeName(a)) + " (" + JsonPreview(a) + ") on " +
                      a_name + ", " + JsonTypeName(b) + " (" + JsonPreview(b) + ") on " + b_name};
    return true;
  }
  if (a.is_object()) {
    // nlohmann's object is a sorted map: walk both member lists in order.
    auto ia = a.begin(), ib = b.begin();
    while (ia != a.end() || ib != b.end()) {
      if (ib == b.end() || (ia != a.end() && ia.key() < ib.key())) {
        *out = {
            path + "/" + JsonPointerToken(ia.key()),
            "member present on " + a_name + " (" + JsonPreview(*ia) + "), missing on " + b_name};
        return true;
      }
      if (ia == a.end() || ib.key() < ia.key()) {
        *out = {path + "/" + JsonPointerToken(ib.key()), "member missing on " + a_name +
                                                             ", present on " + b_name + " (" +
                                                             JsonPreview(*ib) + ")"};
        return true;
      }
      if (FirstDifference(*ia, *ib, path + "/" + JsonPointerToken(ia.key()), a_name, b_name, out)) {
        return true;
      }
      ++ia;
      ++ib;
    }
    return false;
  }
  if (a.is_array()) {
    const size_t n = std::min(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
      if (FirstDifference(a[i], b[i], path + "/" + std::to_string(i), a_name, b_name, out)) {
        return true;
      }
    }
    if (a.size() != b.size()) {
      *out = {path, values("array of " + std::to_string(a.size()),
                           "array of " + std::to_string(b.size()) + " elements")};
      return true;
    }
    return false;
  }
  // Scalars: compare as serialized, consistently with the grouping by serialized tree.
  const std::string da = a.dump(-1, ' ', false, json::error_handler_t::replace);
  const std::string db = b.dump(-1, ' ', false, json::error_handler_t::replace);
  if (da == db) return false;
  *out = {path, values(JsonPreview(a), JsonPreview(b))};
  return true;
}

}  // namespace

std::vector<Violation> CheckCommonState(const GlobalSignature& signature) {
  std::vector<Violation> out;
  // Ranks grouped by serialized tree, groups in order of their lowest rank.
  std::unordered_map<std::string, size_t> index;
  // Ranks that share one tree (SharedJson) take its first rank's outcome without a new dump: the
  // group's index, or kTooDeep.
  constexpr size_t kTooDeep = static_cast<size_t>(-1);
  std::unordered_map<const json*, size_t> by_tree;
  struct Group {
    const json* tree;
    std::vector<int64_t> ranks;
  };
  std::vector<Group> groups;
  std::vector<const RankSignature*> ordered;
  for (const RankSignature& r : signature.ranks) ordered.push_back(&r);
  std::stable_sort(
      ordered.begin(), ordered.end(),
      [](const RankSignature* a, const RankSignature* b) { return a->rank < b->rank; });
  for (const RankSignature* r : ordered) {
    const json& tree = r->common.get();
    if (tree.is_null()) continue;
    auto [known, first] = by_tree.emplace(&tree, kTooDeep);
    if (first) {
      if (!JsonDeeperThan(tree, kMaxCommonDepth)) {
        auto [it, inserted] =
            index.emplace(tree.dump(-1, ' ', false, json::error_handler_t::replace), groups.size());
        if (inserted) groups.push_back(Group{&tree, {}});
        known->second = it->second;
      }
    }
    if (known->second == kTooDeep) {
      out.push_back(MakeViolation("P11", ViolationKind::kInvalidEntry, "", std::nullopt, {r->rank},
                                  "common state on rank " + std::to_string(r->rank) +
                                      " nests deeper than " + std::to_string(kMaxCommonDepth) +
                                      " levels; not compared"));
      continue;
    }
    groups[known->second].ranks.push_back(r->rank);
  }
  if (groups.size() < 2) return out;
  const Group& reference = groups[0];
  const std::string reference_name = "rank " + std::to_string(reference.ranks[0]);
  for (size_t g = 1; g < groups.size(); ++g) {
    std::vector<int64_t> ranks = groups[g].ranks;
    validate_internal::SortUnique(&ranks);
    const std::string name = RanksToString(ranks);
    Difference diff;
    if (!FirstDifference(*reference.tree, *groups[g].tree, "", reference_name, name, &diff)) {
      diff = {"", "trees serialize differently on " + reference_name + " and " + name};
    }
    const std::string where = diff.path.empty() ? "at the root" : "at " + diff.path;
    out.push_back(MakeViolation("P11", ViolationKind::kCommonStateDivergence, diff.path,
                                std::nullopt, ranks,
                                "common state on " + name + " differs from " + reference_name +
                                    " " + where + ": " + diff.what));
  }
  return out;
}

}  // namespace ckptspec
