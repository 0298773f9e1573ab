#include "model/json_util.h"

#include <utility>
#include <vector>

namespace ckptspec {
namespace {

void AppendPreview(const nlohmann::json& value, int depth, size_t budget, std::string* out) {
  if (out->size() > budget) return;
  if (value.is_array() || value.is_object()) {
    const bool array = value.is_array();
    if (value.empty()) {
      *out += array ? "[]" : "{}";
      return;
    }
    if (depth >= 3) {
      *out += array ? "[...]" : "{...}";
      return;
    }
    *out += array ? '[' : '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first) *out += ", ";
      first = false;
      if (out->size() > budget) {
        *out += "...";
        break;
      }
      if (!array) *out += nlohmann::json(it.key()).dump() + ": ";
      AppendPreview(*it, depth + 1, budget, out);
    }
    *out += array ? ']' : '}';
    return;
  }
  if (value.is_binary()) {
    *out += "<binary>";
    return;
  }
  if (value.is_discarded()) {
    *out += "<discarded>";
    return;
  }
  // Scalars: dump() does not recurse here. Long strings are cut below.
  *out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string JsonPreview(const nlohmann::json& value, size_t max_chars) {
  std::string out;
  AppendPreview(value, 0, max_chars, &out);
  if (out.size() > max_chars + 3) {
    out.resize(max_chars);
    out += "...";
  }
  return out;
}

const char* JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "integer";
    case nlohmann::json::value_t::number_float: return "float";
    case nlohmann::json::value_t::string: return "string";
    case nlohmann::json::value_t::array: return "array";
    case nlohmann::json::value_t::object: return "object";
    case nlohmann::json::value_t::binary: return "binary";
    case nlohmann::json::value_t::discarded: return "discarded";
  }
  return "unknown";
}

bool JsonDeeperThan(const nlohmann::json& value, int max_depth) {
  std::vector<std::pair<const nlohmann::json*, int>> stack;
  stack.emplace_back(&value, 0);
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_array() && !node->is_object()) continue;
    if (node->empty()) continue;
    if (depth + 1 > max_depth) return true;
    for (const auto& child : *node) {
      if (child.is_array() || child.is_object()) stack.emplace_back(&child, depth + 1);
    }
  }
  return false;
}

std::string JsonPointerToken(const std::string& name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace ckptspec
