// JsonTextWriter: JSON text written member by member, exactly as nlohmann::json's dump(indent)
// spells the same tree, for writers that skip building the tree (the reference index, the
// adapter harness's requests: metadata_encoder_test.cc and request_writer_test.cc compare their
// text with the tree's dump). The caller writes an object's members in sorted order, as
// nlohmann's object map holds them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/box.h"

namespace ckptspec {

class JsonTextWriter {
 public:
  // Appends to *out. `indent` as dump's: -1 compact (no whitespace), n >= 0 one line per element
  // indented by n spaces per level. `handler`: what a string of invalid UTF-8 becomes (replaced,
  // or thrown as nlohmann::json::type_error under error_handler_t::strict), as in dump.
  JsonTextWriter(std::string* out, int indent, nlohmann::json::error_handler_t handler);

  // Opens '{' or '['; Close writes the matching bracket ("{}" / "[]" when nothing was written in
  // between).
  void Open(char bracket);
  void Close(char bracket);
  // Starts the next element of the innermost array.
  void Element();
  // Starts the next member of the innermost object: its name (plain ASCII, no escapes) and ':'.
  void Member(const char* name);

  void Int(int64_t v);
  void Uint(uint64_t v);
  void Bool(bool v);
  void String(const std::string& s);
  void Dims(const ckptspec::Dims& dims);
  // Any JSON value, spelled by dump at the current depth.
  void Value(const nlohmann::json& value);

 private:
  void Separate();
  void NewLine(size_t depth);

  std::string* out_;
  int indent_;
  nlohmann::json::error_handler_t handler_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
};

}  // namespace ckptspec
