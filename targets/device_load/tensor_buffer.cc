#include "targets/device_load/tensor_buffer.h"

#include <cstring>
#include <new>
#include <string>

#include "targets/reference/tensor_destination.h"

#if CKPTSPEC_DEVICE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "device/compare_cuda.h"
#endif

namespace ckptspec {

namespace {

#if CKPTSPEC_DEVICE_HAVE_CUDA
Status CudaError(const char* what, cudaError_t err) {
  cudaGetLastError();  // reset the thread's last error so later calls start clean
  return Status::IOError(std::string(what) + ": " + cudaGetErrorString(err));
}
#endif

}  // namespace

const char* MemoryKindName(MemoryKind kind) { return kind == MemoryKind::kHost ? "host" : "cuda"; }

Status CudaAvailable() {
#if CKPTSPEC_DEVICE_HAVE_CUDA
  if (!device::CudaDevicePresent()) {
    return Status::NotSupported("no CUDA device: cannot load into CUDA device memory");
  }
  return Status::OK();
#else
  return Status::NotSupported("no CUDA device: ckptspec was built without CUDA");
#endif
}

Status TensorBuffer::Allocate(MemoryKind kind, uint64_t bytes, std::unique_ptr<TensorBuffer>* out) {
  if (out == nullptr) return Status::InvalidArgument("output buffer pointer is null");
  void* data = nullptr;
  if (kind == MemoryKind::kHost) {
    if (bytes > 0) {
      data = ::operator new(bytes, std::nothrow);
      if (data == nullptr) {
        return Status::IOError("cannot allocate " + std::to_string(bytes) +
                               " bytes of host memory");
      }
    }
  } else {
    CKPTSPEC_RETURN_IF_ERROR(CudaAvailable());
#if CKPTSPEC_DEVICE_HAVE_CUDA
    if (bytes > 0) {
      const cudaError_t err = cudaMalloc(&data, bytes);
      if (err != cudaSuccess) {
        return CudaError(("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str(), err);
      }
    }
#endif
  }
  out->reset(new (std::nothrow) TensorBuffer(kind, bytes, data));
  if (*out == nullptr) {
    FreeMemory(kind, data);
    return Status::IOError("cannot allocate a buffer descriptor");
  }
  return Status::OK();
}

void TensorBuffer::FreeMemory(MemoryKind kind, void* data) {
  if (data == nullptr) return;
  if (kind == MemoryKind::kHost) {
    ::operator delete(data);
  } else {
#if CKPTSPEC_DEVICE_HAVE_CUDA
    cudaFree(data);
#endif
  }
}

TensorBuffer::~TensorBuffer() { FreeMemory(kind_, data_); }

Status TensorBuffer::Write(uint64_t offset, const void* src, uint64_t n) {
  CKPTSPEC_RETURN_IF_ERROR(CheckDestinationRange(size_, offset, n));
  if (n == 0) return Status::OK();
  if (src == nullptr) return Status::InvalidArgument("source of a buffer write is null");
  uint8_t* dst = static_cast<uint8_t*>(data_) + offset;
  if (kind_ == MemoryKind::kHost) {
    std::memcpy(dst, src, n);
    return Status::OK();
  }
#if CKPTSPEC_DEVICE_HAVE_CUDA
  const cudaError_t err = cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice);
  if (err != cudaSuccess) return CudaError("cudaMemcpy host to device", err);
  return Status::OK();
#else
  return CudaAvailable();
#endif
}

Status TensorBuffer::Zero() {
  if (size_ == 0) return Status::OK();
  if (kind_ == MemoryKind::kHost) {
    std::memset(data_, 0, size_);
    return Status::OK();
  }
#if CKPTSPEC_DEVICE_HAVE_CUDA
  const cudaError_t err = cudaMemset(data_, 0, size_);
  if (err != cudaSuccess) return CudaError("cudaMemset", err);
  return Status::OK();
#else
  return CudaAvailable();
#endif
}

Status TensorBuffer::CopyToHost(std::vector<uint8_t>* out) const {
  if (out == nullptr) return Status::InvalidArgument("output vector is null");
  try {
    out->resize(size_);
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory("cannot allocate " + std::to_string(size_) +
                               " bytes of host memory");
  }
  if (size_ == 0) return Status::OK();
  if (kind_ == MemoryKind::kHost) {
    std::memcpy(out->data(), data_, size_);
    return Status::OK();
  }
#if CKPTSPEC_DEVICE_HAVE_CUDA
  const cudaError_t err = cudaMemcpy(out->data(), data_, size_, cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) return CudaError("cudaMemcpy device to host", err);
  return Status::OK();
#else
  return CudaAvailable();
#endif
}

}  // namespace ckptspec
