#include "model/json_text_writer.h"

#include <charconv>

#include "model/json_util.h"

namespace ckptspec {

JsonTextWriter::JsonTextWriter(std::string* out, int indent,
                               nlohmann::json::error_handler_t handler)
    : out_(out), indent_(indent), handler_(handler) {}

void JsonTextWriter::Open(char bracket) {
  *out_ += bracket;
  first_.push_back(true);
}

void JsonTextWriter::Close(char bracket) {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) NewLine(first_.size());
  *out_ += bracket;
}

void JsonTextWriter::Element() { Separate(); }

void JsonTextWriter::Member(const char* name) {
  Separate();
  *out_ += '"';
  *out_ += name;
  *out_ += indent_ >= 0 ? "\": " : "\":";
}

void JsonTextWriter::Int(int64_t v) {
  char digits[24];
  out_->append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
}
void JsonTextWriter::Uint(uint64_t v) {
  char digits[24];
  out_->append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
}
void JsonTextWriter::Bool(bool v) { *out_ += v ? "true" : "false"; }

void JsonTextWriter::String(const std::string& s) { AppendJsonString(s, handler_, out_); }

void JsonTextWriter::Dims(const ckptspec::Dims& dims) {
  Open('[');
  for (const int64_t d : dims) {
    Element();
    Int(d);
  }
  Close(']');
}

void JsonTextWriter::Value(const nlohmann::json& value) {
  const std::string text = value.dump(indent_, ' ', false, handler_);
  if (indent_ < 0) {
    *out_ += text;
    return;
  }
  // dump indents from depth 0: each raw newline (structure; strings escape theirs) is followed by
  // the current depth's indentation as well.
  const size_t depth = first_.size();
  size_t from = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
    out_->append(text, from, nl - from);
    NewLine(depth);
    from = nl + 1;
  }
  out_->append(text, from, std::string::npos);
}

void JsonTextWriter::Separate() {
  if (!first_.back()) *out_ += ',';
  first_.back() = false;
  NewLine(first_.size());
}

void JsonTextWriter::NewLine(size_t depth) {
  if (indent_ < 0) return;
  *out_ += '\n';
  out_->append(depth * static_cast<size_t>(indent_), ' ');
}

}  // namespace ckptspec
