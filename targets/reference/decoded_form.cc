// DecodedFormOf (format.h): the decoded index of a text the engine has just encoded, without
// parsing it back. The text is dump's spelling of the same values (metadata_encoder.cc), and
// the reader gives back every value dump writes except in its type: what differs is retyped here.
#include <cmath>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_util.h"
#include "targets/reference/format.h"

namespace ckptspec {
namespace {

// What the index holds besides the layout and the common state, in the reader's tree: the
// top-level object, its members and scalars, the empty placeholders of the streamed arrays.
constexpr uint64_t kTopLevelTreeBytes = 4096;
// The index's own nesting below its top level (tensors[i].chunks[j].offset); the layout and the
// common state sit one level below it.
constexpr int kIndexDepth = 6;

// Retypes `value` as the reader gives back its dump: an integer >= 0 unsigned, a non-finite
// number null. False on a value dump cannot spell as JSON the reader gives back (binary,
// discarded). Iterative: safe on any tree.
bool RetypeAsRead(nlohmann::json* value) {
  std::vector<nlohmann::json*> stack{value};
  while (!stack.empty()) {
    nlohmann::json* node = stack.back();
    stack.pop_back();
    switch (node->type()) {
      case nlohmann::json::value_t::number_integer: {
        const int64_t v = node->get<int64_t>();
        if (v >= 0) *node = static_cast<uint64_t>(v);
        break;
      }
      case nlohmann::json::value_t::number_float:
        if (!std::isfinite(node->get<double>())) *node = nullptr;
        break;
      case nlohmann::json::value_t::binary:
      case nlohmann::json::value_t::discarded:
        return false;
      case nlohmann::json::value_t::array:
      case nlohmann::json::value_t::object:
        for (auto& child : *node) stack.push_back(&child);
        break;
      default:
        break;
    }
  }
  return true;
}

}  // namespace

bool DecodedFormOf(const CheckpointMetadata& m, size_t text_size, const JsonLimits& limits,
                   CheckpointMetadata* out) {
  if (text_size > limits.max_bytes) return false;
  // JsonDeeperThan does not count an empty innermost container, the reader does: one level of
  // margin for it, one for the top level the values sit in.
  const int margin = 2;
  if (limits.max_depth < kIndexDepth + margin ||
      JsonDeeperThan(m.layout, limits.max_depth - margin) ||
      JsonDeeperThan(m.common, limits.max_depth - margin)) {
    return false;
  }
  const uint64_t kept = JsonTreeBytes(m.layout) + JsonTreeBytes(m.common) + kTopLevelTreeBytes;
  if (kept > MetadataTreeBound(limits, text_size)) return false;
  *out = m;
  return RetypeAsRead(&out->layout) && RetypeAsRead(out->common.Mutable());
}

}  // namespace ckptspec
