#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <cub/block/block_reduce.cuh>
#include <string>
#include <vector>

#include "device/compare_accumulator.h"
#include "device/compare_cuda.h"
#include "device/compare_setup.h"
#include "device/element_compare.h"
#include "device/element_traits.h"
#include "device/shard_indexer.h"
#include "model/content.h"

namespace ckptspec {
namespace device {

namespace {

constexpr int kBlockThreads = 256;
constexpr int kBlocksPerSm = 8;

struct MergeOp {
  __device__ CompareAccumulator operator()(const CompareAccumulator& a,
                                           const CompareAccumulator& b) const {
    return Merge(a, b);
  }
};

struct KernelArgs {
  const void* actual;
  const void* expected;  // unused when generated
  uint64_t seed;
  uint64_t key_hash;
  ShardIndexer indexer;
  CompareParams params;
  CompareAccumulator* partials;  // one per block
};

template <DType D, bool kGenerated>
__device__ __forceinline__ void CompareOne(const KernelArgs& args, uint64_t a, uint64_t e,
                                           int64_t i, uint64_t global, CompareAccumulator* acc) {
  if (kGenerated) e = ContentElementBits(D, args.seed, args.key_hash, global);
  AccumulateElement<D>(a, e, i, global, args.params, acc);
}

// kVec > 1: each thread step loads 16 bytes (kVec elements) of each buffer; both buffers must be
// 16-byte aligned. The last n % kVec elements are compared one by one.
template <DType D, bool kGenerated, int kVec>
__global__ void __launch_bounds__(kBlockThreads) CompareKernel(const KernelArgs args) {
  using B = Bits<D>;
  CompareAccumulator acc = EmptyAccumulator();
  const ShardIndexer& ix = args.indexer;
  const int64_t n = ix.count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const B* actual = static_cast<const B*>(args.actual);
  const B* expected = static_cast<const B*>(args.expected);
  int64_t scalar_begin = 0;
  if constexpr (kVec > 1) {
    static_assert(kVec * sizeof(B) == sizeof(uint4), "a vector is 16 bytes");
    const int64_t vectors = n / kVec;
    for (int64_t v = first; v < vectors; v += stride) {
      B a[kVec];
      B e[kVec] = {};
      const uint4 va = __ldg(reinterpret_cast<const uint4*>(actual) + v);
      memcpy(a, &va, sizeof va);
      if constexpr (!kGenerated) {
        const uint4 ve = __ldg(reinterpret_cast<const uint4*>(expected) + v);
        memcpy(e, &ve, sizeof ve);
      }
      const int64_t i0 = v * kVec;
      const uint64_t g0 = ix.GlobalIndexOf(i0);
      const bool one_run = ix.contiguous || (i0 % ix.run_length) + kVec <= ix.run_length;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const uint64_t g = one_run ? g0 + j : ix.GlobalIndexOf(i0 + j);
        CompareOne<D, kGenerated>(args, a[j], e[j], i0 + j, g, &acc);
      }
    }
    scalar_begin = vectors * kVec;
  }
  for (int64_t i = scalar_begin + first; i < n; i += stride) {
    const uint64_t a = actual[i];
    const uint64_t e = kGenerated ? 0 : expected[i];
    CompareOne<D, kGenerated>(args, a, e, i, ix.GlobalIndexOf(i), &acc);
  }
  using BlockReduce = cub::BlockReduce<CompareAccumulator, kBlockThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  const CompareAccumulator block = BlockReduce(temp).Reduce(acc, MergeOp());
  if (threadIdx.x == 0) args.partials[blockIdx.x] = block;
}

Status CudaFailure(const char* what, cudaError_t err) {
  cudaGetLastError();  // clear the sticky-free error state for the next call
  return Status::IOError(std::string(what) + ": " + cudaGetErrorName(err) + ": " +
                         cudaGetErrorString(err));
}

Status CheckDevicePointer(const void* p, const char* name) {
  cudaPointerAttributes attr;
  const cudaError_t err = cudaPointerGetAttributes(&attr, p);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return Status::InvalidArgument(std::string(name) + " is not a CUDA pointer (" +
                                   cudaGetErrorName(err) + ")");
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
    return Status::InvalidArgument(std::string(name) +
                                   " is host memory; pass device or managed memory");
  }
  return Status::OK();
}

template <DType D, bool kGenerated>
void Launch(const KernelArgs& args, bool vectorized, int blocks) {
  constexpr int kVec = 16 / sizeof(Bits<D>);
  if (vectorized) {
    CompareKernel<D, kGenerated, kVec><<<blocks, kBlockThreads>>>(args);
  } else {
    CompareKernel<D, kGenerated, 1><<<blocks, kBlockThreads>>>(args);
  }
}

template <bool kGenerated>
void LaunchFor(DType dtype, const KernelArgs& args, bool vectorized, int blocks) {
  switch (dtype) {
    case DType::kFloat32:
      return Launch<DType::kFloat32, kGenerated>(args, vectorized, blocks);
    case DType::kBFloat16:
      return Launch<DType::kBFloat16, kGenerated>(args, vectorized, blocks);
    case DType::kFloat16:
      return Launch<DType::kFloat16, kGenerated>(args, vectorized, blocks);
    case DType::kFloat8E4M3:
      return Launch<DType::kFloat8E4M3, kGenerated>(args, vectorized, blocks);
    case DType::kFloat8E5M2:
      return Launch<DType::kFloat8E5M2, kGenerated>(args, vectorized, blocks);
    case DType::kInt32:
      return Launch<DType::kInt32, kGenerated>(args, vectorized, blocks);
    case DType::kInt64:
      return Launch<DType::kInt64, kGenerated>(args, vectorized, blocks);
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

Status CompareOnDevice(const void* actual, const void* expected, bool generated, uint64_t seed,
                       uint64_t key_hash, const ckptspec_shard_geometry& geometry,
                       const ckptspec_compare_options& options, ckptspec_compare_report* report) {
  if (report == nullptr) return Status::InvalidArgument("report is null");
  KernelArgs args{};
  DType dtype;
  CKPTSPEC_RETURN_IF_ERROR(ValidateOptions(options, &dtype, &args.params));
  CKPTSPEC_RETURN_IF_ERROR(MakeIndexer(geometry, &args.indexer));
  if (!CudaDevicePresent()) return Status::FailedPrecondition("no CUDA device");
  CompareAccumulator acc = EmptyAccumulator();
  const int64_t n = args.indexer.count;
  if (n > 0) {
    if (actual == nullptr) return Status::InvalidArgument("actual buffer is null");
    if (!generated && expected == nullptr) {
      return Status::InvalidArgument("expected buffer is null");
    }
    CKPTSPEC_RETURN_IF_ERROR(CheckDevicePointer(actual, "actual buffer"));
    if (!generated) CKPTSPEC_RETURN_IF_ERROR(CheckDevicePointer(expected, "expected buffer"));
    args.actual = actual;
    args.expected = expected;
    args.seed = seed;
    args.key_hash = key_hash;

    int device = 0;
    int sms = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess)
      err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess) return CudaFailure("querying the device", err);
    const bool vectorized = Aligned16(actual) && (generated || Aligned16(expected));
    const int64_t per_thread_items = vectorized ? n / (16 / DTypeSize(dtype)) : n;
    const int64_t wanted =
        std::max<int64_t>(1, (per_thread_items + kBlockThreads - 1) / kBlockThreads);
    const int blocks = static_cast<int>(std::min<int64_t>(wanted, int64_t{sms} * kBlocksPerSm));

    err = cudaMalloc(&args.partials, sizeof(CompareAccumulator) * blocks);
    if (err != cudaSuccess) return CudaFailure("allocating per-block results", err);
    if (generated) {
      LaunchFor<true>(dtype, args, vectorized, blocks);
    } else {
      LaunchFor<false>(dtype, args, vectorized, blocks);
    }
    err = cudaGetLastError();
    std::vector<CompareAccumulator> partials(blocks);
    if (err == cudaSuccess) {
      err = cudaMemcpy(partials.data(), args.partials, sizeof(CompareAccumulator) * blocks,
                       cudaMemcpyDeviceToHost);
    }
    cudaFree(args.partials);
    if (err != cudaSuccess) return CudaFailure("running the compare kernel", err);
    for (const auto& part : partials) acc = Merge(acc, part);
  }
  *report = FinishReport(acc, geometry, args.indexer);
  return Status::OK();
}

}  // namespace

bool CudaDevicePresent() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return count > 0;
}

Status CompareDeviceBuffers(const void* actual, const void* expected,
                            const ckptspec_shard_geometry& geometry,
                            const ckptspec_compare_options& options,
                            ckptspec_compare_report* report) {
  return CompareOnDevice(actual, expected, false, 0, 0, geometry, options, report);
}

Status CompareDeviceGenerated(const void* actual, uint64_t seed, uint64_t key_hash,
                              const ckptspec_shard_geometry& geometry,
                              const ckptspec_compare_options& options,
                              ckptspec_compare_report* report) {
  return CompareOnDevice(actual, nullptr, true, seed, key_hash, geometry, options, report);
}

}  // namespace device
}  // namespace ckptspec
