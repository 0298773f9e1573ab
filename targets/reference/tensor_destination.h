// Where the reference load puts a tensor shard's bytes: a small sink interface, so that the same
// resharding code (reference_load.cc) fills host buffers or, through targets/device_load/, CUDA device
// buffers.
//
// Contracts:
//  - A destination holds one shard: size() bytes, the shard's box row-major (the layout of
//    ShardedTensor::data). Write copies host bytes into [offset, offset + n); it returns
//    InvalidArgument when the range is outside [0, size()), never writes out of bounds, and
//    reports a failure of the underlying memory (e.g. a CUDA error) as IOError.
//  - host_data() is non-null only when the destination is directly addressable host memory of
//    size() bytes; the loader then reads a matching chunk straight into it (no staging copy).
//    Otherwise every byte arrives through Write, after its chunk's checksum was verified in host
//    staging memory.
//  - A DestinationProvider is asked once per loaded tensor, in rank order and template order,
//    for the destination of that tensor; the destination must stay valid until the load returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/sharded.h"
#include "model/status.h"

namespace ckptspec {

class TensorDestination {
 public:
  TensorDestination() = default;
  TensorDestination(const TensorDestination&) = delete;  // a polymorphic base: never copied
  TensorDestination& operator=(const TensorDestination&) = delete;
  virtual ~TensorDestination() = default;
  virtual uint64_t size() const = 0;
  virtual Status Write(uint64_t offset, const void* src, uint64_t n) = 0;
  // Sets every byte to zero (the unread part under allow_shape_mismatch).
  virtual Status Zero() = 0;
  virtual uint8_t* host_data() { return nullptr; }
};

// A destination over a host byte vector (not owned; its size is the shard's size).
class HostTensorDestination : public TensorDestination {
 public:
  explicit HostTensorDestination(std::vector<uint8_t>* bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_->size(); }
  Status Write(uint64_t offset, const void* src, uint64_t n) override;
  Status Zero() override;
  uint8_t* host_data() override { return bytes_->data(); }

 private:
  std::vector<uint8_t>* bytes_;
};

class DestinationProvider {
 public:
  DestinationProvider() = default;
  DestinationProvider(const DestinationProvider&) = delete;  // a polymorphic base: never copied
  DestinationProvider& operator=(const DestinationProvider&) = delete;
  virtual ~DestinationProvider() = default;
  // The destination for tensor `spec` of rank `rank`, of exactly `bytes` bytes (the volume of
  // spec.box() times the element size). The provider owns it.
  virtual Status Open(size_t rank, const TensorSpec& spec, uint64_t bytes,
                      TensorDestination** out) = 0;
};

// Checks that [offset, offset + n) lies inside a destination of `size` bytes (overflow-safe).
Status CheckDestinationRange(uint64_t size, uint64_t offset, uint64_t n);

}  // namespace ckptspec
