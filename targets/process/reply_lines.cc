#include "targets/process/reply_lines.h"

#include <cstring>

namespace ckptspec {

void ReplyLines::Append(const char* data, size_t size) { buffer_.append(data, size); }

bool ReplyLines::TakeLine(std::string* line) {
  const void* found = std::memchr(buffer_.data() + scanned_, '\n', buffer_.size() - scanned_);
  if (found == nullptr) {
    scanned_ = buffer_.size();
    return false;
  }
  const size_t newline = static_cast<size_t>(static_cast<const char*>(found) - buffer_.data());
  if (start_ == 0 && newline + 1 == buffer_.size()) {  // the usual reply: one line, all of it
    line->swap(buffer_);
    line->pop_back();
    buffer_.clear();
    scanned_ = 0;
    return true;
  }
  line->assign(buffer_, start_, newline - start_);
  start_ = scanned_ = newline + 1;
  if (start_ == buffer_.size()) {
    buffer_.clear();
    start_ = scanned_ = 0;
  } else if (start_ > buffer_.size() / 2) {
    // What is left is shorter than what was taken: moving it costs less than the bytes taken.
    buffer_.erase(0, start_);
    start_ = scanned_ = 0;
  }
  return true;
}

bool ReplyLines::too_long() const {
  return buffer_.size() - start_ > max_line_bytes_ && scanned_ == buffer_.size();
}

}  // namespace ckptspec
