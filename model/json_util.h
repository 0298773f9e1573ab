// The project's one JSON reader, and small helpers over nlohmann::json that stay safe on hostile
// input: bounded previews for error messages and an iterative depth check (nlohmann's dump() and
// copy recurse, so deep trees are refused by the reader and checked before anything serializes
// them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/status.h"

namespace ckptspec {

// Deepest nesting of arrays and objects the reader accepts by default ([1] nests 1 level, a scalar
// 0). Deeper text is refused while it is read, before any tree is built: the tree's later copies,
// comparisons and dumps recurse once per level.
inline constexpr int kDefaultMaxJsonDepth = 512;
// Longest text the reader accepts by default.
inline constexpr uint64_t kDefaultMaxJsonBytes = uint64_t{1} << 30;

struct JsonLimits {
  int max_depth = kDefaultMaxJsonDepth;
  uint64_t max_bytes = kDefaultMaxJsonBytes;
  // Memory the tree handed back may take, as estimated from nlohmann's node sizes (a tree can
  // take 30 times its text: "[{},{},...]"); no bound by default. Streamed values are not counted:
  // they live one at a time.
  uint64_t max_tree_bytes = UINT64_MAX;
};

// Reads JSON text (RFC 8259, UTF-8, nothing but whitespace after the value) into *out.
//
// Contract: never throws, never recurses per level of nesting and never builds a container deeper
// than limits.max_depth. Every refusal is an InvalidArgument Status; callers that read stored data
// re-code it as Corruption with their file name in front. Positions count bytes, lines and columns
// from 1. The messages:
//   text longer than max_bytes:  "JSON text of N bytes exceeds the limit of M bytes"
//   a syntax error:              "parse error at byte 47, line 1, column 47: syntax error while
//                                 parsing object key - unexpected ','; expected string literal"
//   nesting too deep:            "common[0][0]...[0]: nests deeper than 512 levels at byte N, line
//                                 L, column C" (the container that opens one level too many)
//   a key twice in one object:   "ranks[0]: duplicate key \"rank\" at byte N, line L, column C"
//                                (never last-wins)
//   a number beyond a double:    "ranks[0].digest: number 1e400 is out of range of a double at ..."
//   an integer beyond 64 bits:   "x: integer 99999999999999999999 is out of range of a 64-bit
//                                 integer at ..." (integers are never silently made floats)
//   a tree beyond max_tree_bytes: "common[5]: the JSON tree kept in memory exceeds N bytes at ..."
// JSON paths are written as in error messages everywhere: members joined by '.', indices in
// brackets, "(root)" for the document; a member name that is not a plain identifier is quoted in
// brackets, long names and deep paths are shortened with "...".
Status ParseJson(std::string_view text, const JsonLimits& limits, nlohmann::json* out);

// Where a value sits in a document being read: the member names and element indices from the root
// down. Valid only during the call it is handed to.
class JsonPath {
 public:
  size_t size() const;
  bool IsIndex(size_t level) const;
  const std::string& Key(size_t level) const;  // a member level's name ("" at an index level)
  uint64_t Index(size_t level) const;          // an index level's index (0 at a member level)
  // True when the path has exactly the pattern's levels, each a member name or "[]" for any index.
  bool Matches(std::initializer_list<std::string_view> pattern) const;
  std::string ToString() const;  // as in error messages: "tensors[2].chunks[0]"

  struct Level;  // one open container (the reader's own)

 private:
  friend class JsonTreeBuilder;
  explicit JsonPath(const std::vector<Level>* levels) : levels_(levels) {}
  const std::vector<Level>* levels_;
};

// Appends one level to a path written as JsonPath::ToString writes it: a member name joined by '.'
// (none at the start), or quoted in brackets when it is not a plain identifier (["a b"]); an
// index in brackets ("[3]").
void AppendJsonPathMember(std::string_view name, std::string* path);
void AppendJsonPathIndex(uint64_t index, std::string* path);

// Lets a reader of a large document keep only what it needs: each value below the root is kept in
// the tree, streamed (built alone, handed over, then dropped) or skipped (checked, never built).
class JsonStreamHandler {
 public:
  enum class Action { kKeep, kStream, kSkip };
  JsonStreamHandler() = default;
  JsonStreamHandler(const JsonStreamHandler&) = delete;  // a polymorphic base: never copied
  JsonStreamHandler& operator=(const JsonStreamHandler&) = delete;
  virtual ~JsonStreamHandler() = default;
  // Called when a value begins whose parent is kept or being streamed. Members and elements of a
  // streamed value are classified too, so a streamed value can stream its own parts.
  virtual Action Classify(const JsonPath& path) = 0;
  // Called with each streamed value once it is complete (its streamed parts left out: an array
  // whose elements were streamed arrives empty, a member that was streamed is absent). A non-OK
  // Status ends the read and is returned.
  virtual Status Take(const JsonPath& path, nlohmann::json&& value) = 0;
};

// ParseJson with a handler: *out receives the document without its streamed and skipped values.
// Limits and checks (depth, duplicate keys, numbers, syntax) apply to the whole text, skipped parts
// included; the memory kept is the tree of kept values and the open containers' keys.
Status ParseJsonStreamed(std::string_view text, const JsonLimits& limits,
                         JsonStreamHandler* handler, nlohmann::json* out);

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

// What the reader charges against JsonLimits::max_tree_bytes for keeping `value` as a tree, as
// the value of a document (a member's or an element's own slot not included). Iterative: safe on
// any tree. json_util_test.cc checks it against the reader's own count.
uint64_t JsonTreeBytes(const nlohmann::json& value);

// Appends `s` as a JSON string value: between quotes as it is when it is printable ASCII without
// '"' or '\\', else as nlohmann::json(s).dump(-1, ' ', false, handler) spells it (escapes, UTF-8;
// invalid UTF-8 replaced, or thrown as nlohmann::json::type_error under error_handler_t::strict).
// For writers that spell JSON text directly, as a tree's dump would.
void AppendJsonString(const std::string& s, nlohmann::json::error_handler_t handler,
                      std::string* out);

// One JSON-pointer reference token (RFC 6901): '~' becomes "~0", '/' becomes "~1".
std::string JsonPointerToken(const std::string& name);

}  // namespace ckptspec
