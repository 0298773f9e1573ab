#include "targets/process/capped_log.h"

#include <algorithm>

namespace ckptspec {

void CappedLog::Append(const char* data, size_t size) {
  total_ += size;
  const size_t to_head = std::min(size, head_limit_ - std::min(head_limit_, head_.size()));
  head_.append(data, to_head);
  data += to_head;
  size -= to_head;
  if (size == 0 || tail_limit_ == 0) return;
  if (size >= tail_limit_) {  // the new bytes alone fill the ring
    tail_.assign(data + size - tail_limit_, tail_limit_);
    tail_start_ = 0;
    tail_size_ = tail_limit_;
    return;
  }
  if (tail_.size() < tail_limit_) tail_.resize(tail_limit_);
  for (size_t i = 0; i < size; ++i) {
    tail_[(tail_start_ + tail_size_) % tail_limit_] = data[i];
    if (tail_size_ < tail_limit_) {
      ++tail_size_;
    } else {
      tail_start_ = (tail_start_ + 1) % tail_limit_;
    }
  }
}

std::string CappedLog::Last(size_t n) const {
  std::string out;
  const size_t from_tail = std::min(n, tail_size_);
  // The head continues into the tail only when nothing was dropped between them.
  const size_t from_head = total_ == kept_bytes() ? std::min(n - from_tail, head_.size()) : 0;
  out.reserve(from_head + from_tail);
  out.append(head_, head_.size() - from_head, from_head);
  for (size_t i = tail_size_ - from_tail; i < tail_size_; ++i) {
    out += tail_[(tail_start_ + i) % tail_limit_];
  }
  return out;
}

std::string CappedLog::Text() const {
  const uint64_t dropped = total_ - kept_bytes();
  std::string out = head_;
  if (dropped > 0) out += "\n[... " + std::to_string(dropped) + " bytes dropped ...]\n";
  out.reserve(out.size() + tail_size_);
  for (size_t i = 0; i < tail_size_; ++i) out += tail_[(tail_start_ + i) % tail_limit_];
  return out;
}

std::string CappedLog::TailLine(size_t max_bytes) const {
  std::string text = Last(max_bytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string out;
  for (char c : text) out += c == '\n' ? std::string(" | ") : std::string(1, c);
  return out;
}

}  // namespace ckptspec
