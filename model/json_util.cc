#include "model/json_util.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <new>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ckptspec {

using nlohmann::json;

// One open container of the document being read: what JsonPath shows of it (the member or
// element being read) and where its values go.
struct JsonPath::Level {
  bool is_object = false;
  std::string key;                 // objects: the member being read
  uint64_t index = 0;              // arrays: the element being read
  json* container = nullptr;       // where kept values go; null while skipping
  json* slot = nullptr;            // objects: the kept member being read, made when its key is read
  bool kept = false;               // part of the tree handed back (not of a streamed value)
  std::unique_ptr<json> streamed;  // the value this level is the root of, when it is streamed
  // Objects: names of the members that are not in *container (streamed, skipped, or all of them
  // while skipping), so that a duplicate among them is still found. Small objects search the
  // vector; large ones also fill the set.
  std::vector<std::string> unkept_keys;
  std::unique_ptr<std::unordered_set<std::string>> unkept_set;
};

namespace {

constexpr size_t kPathLevelsShown = 12;  // deeper paths show their first and last levels
constexpr size_t kPlainNameMax = 64;
constexpr size_t kSmallKeySet = 16;

// What a kept value costs in memory (libstdc++ and glibc malloc on 64 bits, rounded up): an array
// element (with the vector's spare capacity), an object member (a map node with its key), a
// container's own header, a string's, and a string's characters beyond the inline buffer.
constexpr uint64_t kElementBytes = 32;
constexpr uint64_t kMemberBytes = 96;
constexpr uint64_t kContainerBytes = 64;
constexpr uint64_t kStringBytes = 48;
uint64_t HeapBytes(const std::string& s) { return s.size() > 15 ? s.size() + 17 : 0; }

bool IsPlainName(std::string_view name) {
  if (name.empty() || name.size() > kPlainNameMax) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void AppendMember(std::string_view name, bool first, std::string* out) {
  if (IsPlainName(name)) {
    if (!first) *out += '.';
    *out += name;
  } else {
    *out += "[" + JsonPreview(json(std::string(name)), 32) + "]";
  }
}

void AppendIndex(uint64_t index, std::string* out) { *out += "[" + std::to_string(index) + "]"; }

void AppendLevel(const JsonPath::Level& level, bool first, std::string* out) {
  if (level.is_object) {
    AppendMember(level.key, first, out);
  } else {
    AppendIndex(level.index, out);
  }
}

// The path of the first `count` levels.
std::string RenderPath(const std::vector<JsonPath::Level>& levels, size_t count) {
  if (count == 0) return "(root)";
  std::string out;
  const size_t head = count > kPathLevelsShown ? kPathLevelsShown / 2 : count;
  for (size_t i = 0; i < head; ++i) AppendLevel(levels[i], i == 0, &out);
  if (head < count) {
    out += "...";
    for (size_t i = count - kPathLevelsShown / 2; i < count; ++i) {
      AppendLevel(levels[i], i == count - kPathLevelsShown / 2, &out);
    }
  }
  return out;
}

// "byte 17, line 2, column 5" for the 0-based offset `offset` of `text`.
std::string Position(std::string_view text, size_t offset) {
  if (offset > text.size()) offset = text.size();
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "byte " + std::to_string(offset + 1) + ", line " + std::to_string(line) + ", column " +
         std::to_string(offset - line_start + 1);
}

// A char iterator that records how far the parser has read, so that events can name their byte.
class TrackingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator(const char* at, const char** furthest) : at_(at), furthest_(furthest) {}
  reference operator*() const { return *at_; }
  TrackingIterator& operator++() {
    *furthest_ = ++at_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const TrackingIterator& other) const { return at_ == other.at_; }
  bool operator!=(const TrackingIterator& other) const { return at_ != other.at_; }

 private:
  const char* at_;
  const char** furthest_;
};

bool IsIntegerLiteral(const std::string& token) {
  return token.find_first_of(".eE") == std::string::npos;
}

}  // namespace

// nlohmann's SAX events in, a tree of the kept values out (see ParseJsonStreamed).
class JsonTreeBuilder {
 public:
  using Action = JsonStreamHandler::Action;

  JsonTreeBuilder(std::string_view text, const JsonLimits& limits, JsonStreamHandler* handler,
                  json* root)
      : text_(text), limits_(limits), handler_(handler), root_(root), read_to_(text.data()) {}

  const char** read_to() { return &read_to_; }
  const Status& status() const { return status_; }

  bool null() { return Scalar(json(nullptr)); }
  bool boolean(bool value) { return Scalar(json(value)); }
  bool number_integer(int64_t value) { return Scalar(json(value)); }
  bool number_unsigned(uint64_t value) { return Scalar(json(value)); }
  bool number_float(double value, const std::string& token) {
    if (IsIntegerLiteral(token)) {
      // nlohmann reads an integer beyond 64 bits as a double; it is refused instead.
      return Fail(Path() + ": integer " + Shortened(token) +
                  " is out of range of a 64-bit integer at " + Position(text_, NumberStart(token)));
    }
    return Scalar(json(value));
  }
  bool string(std::string& value) { return Scalar(json(std::move(value))); }
  bool binary(json::binary_t& /*value*/) { return Fail("binary values are not JSON"); }
  bool start_object(size_t /*elements*/) { return Open(true); }
  bool start_array(size_t /*elements*/) { return Open(false); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(std::string& name) {
    JsonPath::Level& object = levels_.back();
    bool duplicate = IsUnkept(object, name);
    if (!duplicate && object.container != nullptr) {
      auto& members = *object.container->get_ptr<json::object_t*>();
      auto [it, inserted] = members.emplace(name, nullptr);
      duplicate = !inserted;
      object.slot = &it->second;
    }
    if (duplicate) {
      return Fail(RenderPath(levels_, levels_.size() - 1) + ": duplicate key " +
                  JsonPreview(json(name), 64) + " at " + Position(text_, KeyStart()));
    }
    object.key.swap(name);
    if (object.container == nullptr) AddUnkept(&object);
    return true;
  }

  bool parse_error(size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& error) {
    if (error.id == 406) {  // out_of_range.406: a number beyond a double
      const size_t start = position >= last_token.size() ? position - last_token.size() : 0;
      return Fail(Path() + ": number " + Shortened(last_token) +
                  " is out of range of a double at " + Position(text_, start));
    }
    // "[json.exception.parse_error.101] parse error at line 1, column 47: syntax error ..."
    std::string what = error.what();
    const std::string marker = "parse error at ";
    const size_t at = what.find(marker);
    if (at != std::string::npos) what.erase(0, at + marker.size());
    return Fail("parse error at byte " + std::to_string(position) + ", " + what);
  }

 private:
  bool Fail(std::string message) {
    status_ = Status::InvalidArgument(std::move(message));
    return false;
  }

  std::string Path() const { return RenderPath(levels_, levels_.size()); }
  JsonPath CurrentPath() const { return JsonPath(&levels_); }

  static std::string Shortened(const std::string& token) {
    return token.size() <= 40 ? token : token.substr(0, 40) + "...";
  }

  size_t ReadTo() const { return static_cast<size_t>(read_to_ - text_.data()); }

  // The 0-based offset of a number token just read: the lexer has read one character past it
  // unless the text ended with it.
  size_t NumberStart(const std::string& token) const {
    size_t end = ReadTo();
    if (end < text_.size() ||
        text_.compare(end - std::min(end, token.size()), token.size(), token) != 0) {
      --end;
    }
    return end >= token.size() ? end - token.size() : 0;
  }

  // The 0-based offset of the opening quote of the key just read (the lexer stopped at its
  // closing quote).
  size_t KeyStart() const {
    size_t i = ReadTo();
    if (i > 0) --i;  // the closing quote
    while (i > 0) {
      --i;
      if (text_[i] != '"') continue;
      size_t backslashes = 0;
      while (backslashes < i && text_[i - 1 - backslashes] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return i;
    }
    return 0;
  }

  static bool IsUnkept(const JsonPath::Level& object, const std::string& name) {
    if (object.unkept_set) return object.unkept_set->count(name) != 0;
    for (const std::string& k : object.unkept_keys) {
      if (k == name) return true;
    }
    return false;
  }

  static void AddUnkept(JsonPath::Level* object) {
    if (object->unkept_set) {
      object->unkept_set->insert(object->key);
      return;
    }
    object->unkept_keys.push_back(object->key);
    if (object->unkept_keys.size() > kSmallKeySet) {
      object->unkept_set = std::make_unique<std::unordered_set<std::string>>(
          std::make_move_iterator(object->unkept_keys.begin()),
          std::make_move_iterator(object->unkept_keys.end()));
      object->unkept_keys.clear();
      object->unkept_keys.shrink_to_fit();
    }
  }

  // Decides what becomes of the value that begins now.
  Action Begin() {
    if (levels_.empty()) return Action::kKeep;  // the root
    JsonPath::Level& parent = levels_.back();
    if (parent.container == nullptr) return Action::kSkip;
    const Action action = handler_ != nullptr ? handler_->Classify(CurrentPath()) : Action::kKeep;
    if (action != Action::kKeep && parent.is_object) {
      parent.container->get_ptr<json::object_t*>()->erase(parent.key);  // its placeholder
      parent.slot = nullptr;
      AddUnkept(&parent);
    }
    return action;
  }

  // Adds what `value`, beginning now, takes in the tree handed back; past max_tree_bytes it is an
  // error.
  bool Account(const json& value) {
    const JsonPath::Level* parent = levels_.empty() ? nullptr : &levels_.back();
    if (parent != nullptr && !parent->kept) return true;
    uint64_t cost = parent == nullptr   ? 0
                    : parent->is_object ? kMemberBytes + HeapBytes(parent->key)
                                        : kElementBytes;
    if (value.is_string()) {
      cost += kStringBytes + HeapBytes(value.get_ref<const std::string&>());
    } else if (value.is_structured()) {
      cost += kContainerBytes;
    }
    tree_bytes_ += cost;
    if (tree_bytes_ <= limits_.max_tree_bytes) return true;
    return Fail(Path() + ": the JSON tree kept in memory exceeds " +
                std::to_string(limits_.max_tree_bytes) + " bytes at " +
                Position(text_, ReadTo() > 0 ? ReadTo() - 1 : 0));
  }

  json* Insert(json value) {
    JsonPath::Level& parent = levels_.back();
    if (parent.is_object) {
      *parent.slot = std::move(value);
      return parent.slot;
    }
    auto& elements = *parent.container->get_ptr<json::array_t*>();
    elements.push_back(std::move(value));
    return &elements.back();
  }

  // The value at the current path is complete: the next one is the parent's next element.
  void Advance() {
    if (!levels_.empty() && !levels_.back().is_object) ++levels_.back().index;
  }

  bool Scalar(json value) {
    if (levels_.empty()) {
      if (!Account(value)) return false;
      *root_ = std::move(value);
      return true;
    }
    switch (Begin()) {
      case Action::kKeep:
        if (!Account(value)) return false;
        Insert(std::move(value));
        break;
      case Action::kStream:
        status_ = handler_->Take(CurrentPath(), std::move(value));
        if (!status_.ok()) return false;
        break;
      case Action::kSkip:
        break;
    }
    Advance();
    return true;
  }

  bool Open(bool is_object) {
    if (levels_.size() >= static_cast<size_t>(std::max(limits_.max_depth, 0))) {
      return Fail(Path() + ": nests deeper than " + std::to_string(limits_.max_depth) +
                  " levels at " + Position(text_, ReadTo() > 0 ? ReadTo() - 1 : 0));
    }
    json fresh(is_object ? json::value_t::object : json::value_t::array);
    JsonPath::Level level;
    level.is_object = is_object;
    if (levels_.empty()) {
      if (!Account(fresh)) return false;
      *root_ = std::move(fresh);
      level.container = root_;
      level.kept = true;
    } else {
      switch (Begin()) {
        case Action::kKeep:
          if (!Account(fresh)) return false;
          level.kept = levels_.back().kept;
          level.container = Insert(std::move(fresh));
          break;
        case Action::kStream:
          level.streamed = std::make_unique<json>(std::move(fresh));
          level.container = level.streamed.get();
          break;
        case Action::kSkip:
          break;
      }
    }
    levels_.push_back(std::move(level));
    return true;
  }

  bool Close() {
    std::unique_ptr<json> streamed = std::move(levels_.back().streamed);
    levels_.pop_back();
    if (streamed) {
      status_ = handler_->Take(CurrentPath(), std::move(*streamed));
      if (!status_.ok()) return false;
    }
    Advance();
    return true;
  }

  const std::string_view text_;
  const JsonLimits limits_;
  JsonStreamHandler* const handler_;
  json* const root_;
  const char* read_to_;  // one past the last character the parser has read
  std::vector<JsonPath::Level> levels_;
  uint64_t tree_bytes_ = 0;  // what the tree handed back takes (Account)
  Status status_;
};

void AppendJsonPathMember(std::string_view name, std::string* path) {
  AppendMember(name, path->empty(), path);
}

void AppendJsonPathIndex(uint64_t index, std::string* path) { AppendIndex(index, path); }

size_t JsonPath::size() const { return levels_->size(); }
bool JsonPath::IsIndex(size_t level) const { return !(*levels_)[level].is_object; }
const std::string& JsonPath::Key(size_t level) const {
  static const std::string kNone;
  return IsIndex(level) ? kNone : (*levels_)[level].key;
}
uint64_t JsonPath::Index(size_t level) const {
  return IsIndex(level) ? (*levels_)[level].index : 0;
}
std::string JsonPath::ToString() const { return RenderPath(*levels_, levels_->size()); }

bool JsonPath::Matches(std::initializer_list<std::string_view> pattern) const {
  if (pattern.size() != size()) return false;
  size_t level = 0;
  for (std::string_view p : pattern) {
    if (p == "[]" ? !IsIndex(level) : IsIndex(level) || Key(level) != p) return false;
    ++level;
  }
  return true;
}

Status ParseJsonStreamed(std::string_view text, const JsonLimits& limits,
                         JsonStreamHandler* handler, json* out) {
  if (text.size() > limits.max_bytes) {
    return Status::InvalidArgument("JSON text of " + std::to_string(text.size()) +
                                   " bytes exceeds the limit of " +
                                   std::to_string(limits.max_bytes) + " bytes");
  }
  try {
    json root;
    JsonTreeBuilder builder(text, limits, handler, &root);
    const char* begin = text.data();
    const char* end = begin + text.size();
    const bool ok = json::sax_parse(TrackingIterator(begin, builder.read_to()),
                                    TrackingIterator(end, builder.read_to()), &builder,
                                    json::input_format_t::json, /*strict=*/true);
    if (!ok) {
      return builder.status().ok() ? Status::InvalidArgument("JSON text could not be read")
                                   : builder.status();
    }
    *out = std::move(root);
    return Status::OK();
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory("JSON text of " + std::to_string(text.size()) +
                               " bytes: out of memory while reading it");
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("JSON text could not be read: ") + e.what());
  }
}

Status ParseJson(std::string_view text, const JsonLimits& limits, json* out) {
  return ParseJsonStreamed(text, limits, nullptr, out);
}

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
      if (!array) {
        *out += nlohmann::json(it.key()).dump(-1, ' ', false,
                                              nlohmann::json::error_handler_t::replace) +
                ": ";
      }
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
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "integer";
    case nlohmann::json::value_t::number_float:
      return "float";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::binary:
      return "binary";
    case nlohmann::json::value_t::discarded:
      return "discarded";
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

uint64_t JsonTreeBytes(const nlohmann::json& value) {
  uint64_t bytes = 0;
  std::vector<const nlohmann::json*> stack{&value};
  while (!stack.empty()) {
    const nlohmann::json* node = stack.back();
    stack.pop_back();
    if (node->is_string()) {
      bytes += kStringBytes + HeapBytes(node->get_ref<const std::string&>());
    } else if (node->is_object()) {
      bytes += kContainerBytes;
      for (const auto& [key, child] : node->items()) {
        bytes += kMemberBytes + HeapBytes(key);
        stack.push_back(&child);
      }
    } else if (node->is_array()) {
      bytes += kContainerBytes;
      for (const auto& child : *node) {
        bytes += kElementBytes;
        stack.push_back(&child);
      }
    }
  }
  return bytes;
}

void AppendJsonString(const std::string& s, nlohmann::json::error_handler_t handler,
                      std::string* out) {
  for (const char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') {
      *out += nlohmann::json(s).dump(-1, ' ', false, handler);
      return;
    }
  }
  *out += '"';
  *out += s;
  *out += '"';
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
