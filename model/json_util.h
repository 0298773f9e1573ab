// Small helpers over nlohmann::json that stay safe on hostile input: bounded previews for error
// messages and an iterative depth check (nlohmann's dump() recurses, so deep trees are checked
// before anything serializes them).
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace ckptspec {

// A short rendering of `value` for messages: scalars as JSON (strings quoted), containers up to a
// few levels and members, the whole cut to about `max_chars` characters with "..." when shortened.
// Never recurses deeper than 3 levels, so it is safe on any tree.
std::string JsonPreview(const nlohmann::json& value, size_t max_chars = 64);

// "null", "boolean", "integer" (signed or unsigned), "float", "string", "array", "object",
// "binary" or "discarded".
const char* JsonTypeName(const nlohmann::json& value);

// True when `value` nests containers more than `max_depth` levels deep (a scalar has depth 0, [1]
// depth 1). Iterative: safe on any tree.
bool JsonDeeperThan(const nlohmann::json& value, int max_depth);

// One JSON-pointer reference token (RFC 6901): '~' becomes "~0", '/' becomes "~1".
std::string JsonPointerToken(const std::string& name);

}  // namespace ckptspec
