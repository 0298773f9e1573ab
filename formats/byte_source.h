// ByteSource: a read-only range of bytes that the format readers (zip, pickle) parse, held in
// memory or a window of a file. The readers in formats/ do no I/O of their own: whoever opens a
// checkpoint's file (through a confined Env, docs/SECURITY.md) hands them a ByteSource.
//
// Contract: Read(offset, n, out) copies exactly n bytes starting at `offset` into `out`; a range
// that does not lie inside [0, size()) is Corruption naming the range and the size, and nothing is
// written. Implementations are safe to call from several threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "model/status.h"

namespace ckptspec {

class ByteSource {
 public:
  ByteSource() = default;
  ByteSource(const ByteSource&) = delete;  // a polymorphic base: never copied
  ByteSource& operator=(const ByteSource&) = delete;
  virtual ~ByteSource() = default;

  virtual uint64_t size() const = 0;
  virtual Status Read(uint64_t offset, size_t n, void* out) const = 0;
  // What the source is, for messages: a file name, "memory".
  virtual std::string name() const = 0;
};

// Bytes held in memory; the caller keeps them alive while the source is used.
class MemoryByteSource final : public ByteSource {
 public:
  explicit MemoryByteSource(std::string_view bytes, std::string name = "memory")
      : bytes_(bytes), name_(std::move(name)) {}
  uint64_t size() const override { return bytes_.size(); }
  Status Read(uint64_t offset, size_t n, void* out) const override;
  std::string name() const override { return name_; }
  std::string_view bytes() const { return bytes_; }

 private:
  std::string_view bytes_;
  std::string name_;
};

// A window [offset, offset + size) of another source, addressed from 0. The window must lie inside
// `base` (checked by Make); `base` must outlive it.
class WindowByteSource final : public ByteSource {
 public:
  // Corruption naming both ranges when the window does not lie inside `base`.
  static Status Make(const ByteSource& base, uint64_t offset, uint64_t size, WindowByteSource* out);
  WindowByteSource() = default;
  uint64_t size() const override { return size_; }
  Status Read(uint64_t offset, size_t n, void* out) const override;
  std::string name() const override;

 private:
  const ByteSource* base_ = nullptr;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
};

// Corruption "<name>: bytes [offset, offset + n) lie outside its <size> bytes" unless the range
// lies inside [0, size); overflow-safe.
Status CheckRange(const std::string& name, uint64_t size, uint64_t offset, uint64_t n);

}  // namespace ckptspec
