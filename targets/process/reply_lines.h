// The bytes an adapter rank writes to its stdout, cut into reply lines (docs/PROTOCOL.md: one JSON
// object per line), in time linear in the bytes however the reads split them: a reply of hundreds
// of MB arrives in thousands of 64 KiB reads, and each byte is looked at once.
//
// Contracts:
//  - Append() adds the bytes of one read. The search for the newline resumes where the previous one
//    stopped, so no byte is scanned twice. TakeLine() hands the usual reply (one line, nothing
//    after it) over without a copy; bytes left after a line are moved at most once per byte taken
//    before them.
//  - TakeLine(&line) sets `line` to the first complete line (without its '\n') and returns true;
//    false, leaving `line` alone, while no newline has arrived.
//  - pending() is what was read and not taken: a partial line, or what followed the last line
//    taken. too_long() is true when TakeLine() last found no newline and pending() is more than
//    `max_line_bytes` bytes (the caller's limit on a reply; the reader keeps what it is given).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ckptspec {

class ReplyLines {
 public:
  explicit ReplyLines(size_t max_line_bytes) : max_line_bytes_(max_line_bytes) {}

  void Append(const char* data, size_t size);
  bool TakeLine(std::string* line);

  std::string_view pending() const { return std::string_view(buffer_).substr(start_); }
  bool empty() const { return start_ == buffer_.size(); }
  bool too_long() const;

 private:
  size_t max_line_bytes_;
  std::string buffer_;
  size_t start_ = 0;    // buffer_[0, start_) was taken
  size_t scanned_ = 0;  // buffer_[start_, scanned_) holds no '\n'
};

}  // namespace ckptspec
