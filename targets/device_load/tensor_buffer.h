// An owning byte buffer in host memory or in CUDA device memory, holding one loaded tensor shard.
//
// Contracts:
//  - Allocate never throws or aborts: out of memory is IOError; MemoryKind::kCuda without CUDA at
//    build time, or without a usable CUDA device, is NotSupported whose message says "no CUDA
//    device" (CudaAvailable() gives that status up front).
//  - A kCuda buffer is cudaMalloc'ed on the current device and freed by the destructor; Write and
//    CopyToHost use synchronous cudaMemcpy on the legacy default stream, so data written is
//    visible to later work on that stream (the device compare kernels run there). CUDA failures
//    are IOError with CUDA's message.
//  - Write / CopyToHost reject ranges outside the buffer with InvalidArgument.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/status.h"

namespace ckptspec {

enum class MemoryKind { kHost, kCuda };
const char* MemoryKindName(MemoryKind kind);  // "host", "cuda"

// OK when kCuda buffers can be allocated here, else NotSupported naming why (built without CUDA,
// or no CUDA device).
Status CudaAvailable();

class TensorBuffer {
 public:
  static Status Allocate(MemoryKind kind, uint64_t bytes, std::unique_ptr<TensorBuffer>* out);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  MemoryKind kind() const { return kind_; }
  uint64_t size() const { return size_; }
  // Host or device address of the first byte (null when size() == 0).
  void* data() const { return data_; }

  // Copies n bytes of host memory into [offset, offset + n).
  Status Write(uint64_t offset, const void* src, uint64_t n);
  Status Zero();
  // The whole buffer into host memory.
  Status CopyToHost(std::vector<uint8_t>* out) const;

 private:
  TensorBuffer(MemoryKind kind, uint64_t size, void* data)
      : kind_(kind), size_(size), data_(data) {}
  static void FreeMemory(MemoryKind kind, void* data);
  MemoryKind kind_;
  uint64_t size_;
  void* data_;
};

}  // namespace ckptspec
