// Bandwidth of the device checks, each beside a copy of the same bytes measured in the same run.
//
// CPU: the CPU twin (2 threads) on 1 GiB buffers of bf16 and fp32, comparing against a second
// buffer ("buffers") or against generated content ("generated"). Every iteration first copies the
// 1 GiB actual buffer with memcpy on 2 threads, then compares; the two are timed separately
// (manual time = the compare), so the counters set them side by side under the same conditions:
//   twin_GBps    bytes the compare reads (2 GiB for buffers, 1 GiB generated) / compare time
//   memcpy_GBps  bytes memcpy reads (1 GiB; it also writes 1 GiB) / memcpy time
//   ratio        twin_GBps / memcpy_GBps
// The buffers hold identical content, the expected case for a checkpoint that reloads correctly.
//
// GPU (built with CUDA; reported as an error "no CUDA device" without one): the same on device
// memory, beside a 1 GiB device-to-device cudaMemcpy, timed with CUDA events.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "device/ckptspec_device.h"
#include "device/compare_host.h"
#include "model/box.h"
#include "model/content.h"
#include "model/content_fill.h"
#include "model/dtype.h"

#if CKPTSPEC_DEVICE_HAVE_CUDA
#include <cuda_runtime.h>

#include "device/compare_cuda.h"
#endif

namespace ckptspec {
namespace {

constexpr int64_t kBufferBytes = int64_t{1} << 30;
constexpr int kThreads = 2;
constexpr uint64_t kSeed = 42;
const uint64_t kKey = KeyHash("bench.weight");

struct HostBuffers {
  std::vector<uint8_t> actual, expected, copy;
};

// Runs fn(begin, end) over [0, n) split across kThreads threads.
template <typename Fn>
void Parallel(int64_t n, Fn fn) {
  std::vector<std::thread> pool;
  for (int t = 1; t < kThreads; ++t)
    pool.emplace_back(fn, n * t / kThreads, n * (t + 1) / kThreads);
  fn(0, n / kThreads);
  for (auto& th : pool) th.join();
}

// 1 GiB of generated content per dtype, built once.
HostBuffers& Buffers(DType dtype) {
  static std::map<DType, std::unique_ptr<HostBuffers>> cache;
  auto& slot = cache[dtype];
  if (!slot) {
    slot = std::make_unique<HostBuffers>();
    const int64_t n = kBufferBytes / DTypeSize(dtype);
    slot->actual.resize(kBufferBytes);
    Parallel(n, [&](int64_t b, int64_t e) {
      FillContent(dtype, kSeed, kKey, {n}, Box{{b}, {e - b}},
                  slot->actual.data() + b * DTypeSize(dtype));
    });
    slot->expected = slot->actual;
    slot->copy.resize(kBufferBytes);
  }
  return *slot;
}

void SetCounters(benchmark::State& state, double twin_bytes, double twin_seconds, double copy_bytes,
                 double copy_seconds) {
  const double twin = twin_bytes / twin_seconds / 1e9;
  const double copy = copy_bytes / copy_seconds / 1e9;
  state.counters["twin_GBps"] = twin;
  state.counters["memcpy_GBps"] = copy;
  state.counters["ratio"] = twin / copy;
}

template <DType kDType, bool kGenerated>
void BM_CpuTwin(benchmark::State& state) {
  HostBuffers& b = Buffers(kDType);
  ckptspec_compare_options options;
  ckptspec_compare_options_init(static_cast<int32_t>(kDType), &options);
  options.mode = static_cast<int32_t>(state.range(0));
  options.threads = kThreads;
  ckptspec_shard_geometry geometry;
  ckptspec_geometry_flat(kBufferBytes / DTypeSize(kDType), &geometry);
  double twin_seconds = 0, copy_seconds = 0;
  for (auto _ : state) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    Parallel(kBufferBytes, [&](int64_t begin, int64_t end) {
      memcpy(b.copy.data() + begin, b.actual.data() + begin, end - begin);
    });
    const auto t1 = Clock::now();
    ckptspec_compare_report report;
    const Status s = kGenerated ? device::CompareHostGenerated(b.actual.data(), kSeed, kKey,
                                                               geometry, options, &report)
                                : device::CompareHostBuffers(b.actual.data(), b.expected.data(),
                                                             geometry, options, &report);
    const auto t2 = Clock::now();
    if (!s.ok() || report.mismatch_count != 0) {
      state.SkipWithError("comparison failed or found mismatches");
      break;
    }
    benchmark::DoNotOptimize(report);
    const double compare = std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(compare);
    twin_seconds += compare;
    copy_seconds += std::chrono::duration<double>(t1 - t0).count();
  }
  const double reads = static_cast<double>(kBufferBytes) * (kGenerated ? 1 : 2);
  SetCounters(state, reads * state.iterations(), twin_seconds,
              static_cast<double>(kBufferBytes) * state.iterations(), copy_seconds);
}

#define CPU_BENCH(dtype, generated)                \
  BENCHMARK_TEMPLATE(BM_CpuTwin, dtype, generated) \
      ->ArgName("mode")                            \
      ->Arg(CKPTSPEC_COMPARE_BITWISE)              \
      ->Arg(CKPTSPEC_COMPARE_TOLERANCE)            \
      ->UseManualTime()                            \
      ->Unit(benchmark::kMillisecond)              \
      ->MinTime(1.0)

CPU_BENCH(DType::kBFloat16, false);
CPU_BENCH(DType::kBFloat16, true);
CPU_BENCH(DType::kFloat32, false);
CPU_BENCH(DType::kFloat32, true);

#if CKPTSPEC_DEVICE_HAVE_CUDA

template <DType kDType, bool kGenerated>
void BM_Gpu(benchmark::State& state) {
  if (!device::CudaDevicePresent()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  HostBuffers& host = Buffers(kDType);
  void *actual = nullptr, *expected = nullptr, *copy = nullptr;
  if (cudaMalloc(&actual, kBufferBytes) != cudaSuccess ||
      cudaMalloc(&expected, kBufferBytes) != cudaSuccess ||
      cudaMalloc(&copy, kBufferBytes) != cudaSuccess) {
    state.SkipWithError("cannot allocate 3 GiB of device memory");
    cudaFree(actual);
    cudaFree(expected);
    return;
  }
  cudaMemcpy(actual, host.actual.data(), kBufferBytes, cudaMemcpyHostToDevice);
  cudaMemcpy(expected, host.expected.data(), kBufferBytes, cudaMemcpyHostToDevice);
  ckptspec_compare_options options;
  ckptspec_compare_options_init(static_cast<int32_t>(kDType), &options);
  options.mode = static_cast<int32_t>(state.range(0));
  ckptspec_shard_geometry geometry;
  ckptspec_geometry_flat(kBufferBytes / DTypeSize(kDType), &geometry);
  cudaEvent_t start, copied, compared;
  cudaEventCreate(&start);
  cudaEventCreate(&copied);
  cudaEventCreate(&compared);
  double twin_seconds = 0, copy_seconds = 0;
  for (auto _ : state) {
    cudaEventRecord(start);
    cudaMemcpy(copy, actual, kBufferBytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(copied);
    ckptspec_compare_report report;
    const Status s =
        kGenerated ? device::CompareDeviceGenerated(actual, kSeed, kKey, geometry, options, &report)
                   : device::CompareDeviceBuffers(actual, expected, geometry, options, &report);
    cudaEventRecord(compared);
    cudaEventSynchronize(compared);
    if (!s.ok() || report.mismatch_count != 0) {
      state.SkipWithError("comparison failed or found mismatches");
      break;
    }
    float copy_ms = 0, compare_ms = 0;
    cudaEventElapsedTime(&copy_ms, start, copied);
    cudaEventElapsedTime(&compare_ms, copied, compared);
    state.SetIterationTime(compare_ms / 1e3);
    twin_seconds += compare_ms / 1e3;
    copy_seconds += copy_ms / 1e3;
  }
  const double reads = static_cast<double>(kBufferBytes) * (kGenerated ? 1 : 2);
  if (twin_seconds > 0) {
    SetCounters(state, reads * state.iterations(), twin_seconds,
                static_cast<double>(kBufferBytes) * state.iterations(), copy_seconds);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(copied);
  cudaEventDestroy(compared);
  cudaFree(actual);
  cudaFree(expected);
  cudaFree(copy);
}

#define GPU_BENCH(dtype, generated)            \
  BENCHMARK_TEMPLATE(BM_Gpu, dtype, generated) \
      ->ArgName("mode")                        \
      ->Arg(CKPTSPEC_COMPARE_BITWISE)          \
      ->Arg(CKPTSPEC_COMPARE_TOLERANCE)        \
      ->UseManualTime()                        \
      ->Unit(benchmark::kMillisecond)

GPU_BENCH(DType::kBFloat16, false);
GPU_BENCH(DType::kBFloat16, true);
GPU_BENCH(DType::kFloat32, false);
GPU_BENCH(DType::kFloat32, true);

#endif  // CKPTSPEC_DEVICE_HAVE_CUDA

}  // namespace
}  // namespace ckptspec

BENCHMARK_MAIN();
