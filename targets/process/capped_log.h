// What a rank process wrote to its stderr, kept in bounded memory: the head (the first
// `head_bytes`) and the tail (the last `tail_bytes`), with the count of bytes dropped between
// them. An adapter that floods its stderr costs the harness at most head_bytes + tail_bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ckptspec {

class CappedLog {
 public:
  explicit CappedLog(size_t head_bytes = 64 << 10, size_t tail_bytes = 64 << 10)
      : head_limit_(head_bytes), tail_limit_(tail_bytes) {}

  void Append(const char* data, size_t size);

  // Every byte appended so far, kept or dropped.
  uint64_t total_bytes() const { return total_; }
  // Bytes kept (never more than head_bytes + tail_bytes).
  size_t kept_bytes() const { return head_.size() + tail_size_; }
  // The whole log as kept: the head, then "\n[... N bytes dropped ...]\n" when bytes were dropped,
  // then the tail.
  std::string Text() const;
  // The last `max_bytes` bytes appended (at most what is kept, and only the tail once bytes were
  // dropped), on one line: '\n' shown as " | ",
  // trailing newlines and spaces removed. "" when nothing was written.
  std::string TailLine(size_t max_bytes) const;

 private:
  // The last bytes appended, up to n, oldest first; never across a gap of dropped bytes.
  std::string Last(size_t n) const;

  size_t head_limit_;
  size_t tail_limit_;
  std::string head_;
  std::string tail_;       // a ring of capacity tail_limit_ once full
  size_t tail_start_ = 0;  // where the oldest byte of the ring is
  size_t tail_size_ = 0;
  uint64_t total_ = 0;
};

}  // namespace ckptspec
