#include "device/compare_host.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "device/compare_accumulator.h"
#include "device/compare_setup.h"
#include "device/element_compare.h"
#include "device/element_traits.h"
#include "device/shard_indexer.h"
#include "model/content.h"

namespace ckptspec {
namespace device {

namespace {

// Below this many elements per thread, extra threads cost more than they save.
constexpr int64_t kMinElementsPerThread = int64_t{1} << 16;

struct HostJob {
  const void* actual;
  const void* expected;  // null: generated from (seed, key_hash)
  uint64_t seed;
  uint64_t key_hash;
  ShardIndexer indexer;
  CompareParams params;
};

template <DType D>
inline uint64_t LoadElement(const void* base, int64_t index) {
  Bits<D> bits;
  memcpy(&bits, static_cast<const uint8_t*>(base) + index * sizeof(Bits<D>), sizeof bits);
  return bits;
}

// Compares local elements [begin, end), walking runs of consecutive global indices so the
// local-to-global map costs one division chain per run, not per element.
template <DType D, bool kGenerated>
CompareAccumulator CompareRange(const HostJob& job, int64_t begin, int64_t end) {
  CompareAccumulator acc = EmptyAccumulator();
  const ShardIndexer& ix = job.indexer;
  const CompareParams params = job.params;
  int64_t i = begin;
  while (i < end) {
    uint64_t global = ix.GlobalIndexOf(i);
    const int64_t run_end = std::min(end, (i / ix.run_length + 1) * ix.run_length);
    for (; i < run_end; ++i, ++global) {
      const uint64_t a = LoadElement<D>(job.actual, i);
      const uint64_t e = kGenerated ? ContentElementBits(D, job.seed, job.key_hash, global)
                                    : LoadElement<D>(job.expected, i);
      AccumulateElement<D>(a, e, i, global, params, &acc);
    }
  }
  return acc;
}

template <DType D, bool kGenerated>
Status RunThreads(const HostJob& job, int threads, CompareAccumulator* out) {
  const int64_t count = job.indexer.count;
  const int64_t useful = std::max<int64_t>(1, count / kMinElementsPerThread);
  const int workers = static_cast<int>(std::min<int64_t>(threads, useful));
  std::vector<CompareAccumulator> parts(workers, EmptyAccumulator());
  auto range_begin = [&](int w) {
    return count / workers * w + std::min<int64_t>(w, count % workers);
  };
  std::vector<std::thread> pool;
  try {
    for (int w = 1; w < workers; ++w) {
      pool.emplace_back([&, w] {
        parts[w] = CompareRange<D, kGenerated>(job, range_begin(w), range_begin(w + 1));
      });
    }
  } catch (const std::exception& e) {
    for (auto& t : pool) t.join();
    return Status::IOError(std::string("cannot start CPU twin worker threads: ") + e.what());
  }
  parts[0] = CompareRange<D, kGenerated>(job, range_begin(0), range_begin(1));
  for (auto& t : pool) t.join();
  CompareAccumulator acc = EmptyAccumulator();
  for (const auto& part : parts) acc = Merge(acc, part);
  *out = acc;
  return Status::OK();
}

template <bool kGenerated>
Status Dispatch(DType dtype, const HostJob& job, int threads, CompareAccumulator* out) {
  switch (dtype) {
    case DType::kFloat32:
      return RunThreads<DType::kFloat32, kGenerated>(job, threads, out);
    case DType::kBFloat16:
      return RunThreads<DType::kBFloat16, kGenerated>(job, threads, out);
    case DType::kFloat16:
      return RunThreads<DType::kFloat16, kGenerated>(job, threads, out);
    case DType::kFloat8E4M3:
      return RunThreads<DType::kFloat8E4M3, kGenerated>(job, threads, out);
    case DType::kFloat8E5M2:
      return RunThreads<DType::kFloat8E5M2, kGenerated>(job, threads, out);
    case DType::kInt32:
      return RunThreads<DType::kInt32, kGenerated>(job, threads, out);
    case DType::kInt64:
      return RunThreads<DType::kInt64, kGenerated>(job, threads, out);
  }
  return Status::InvalidArgument("unknown dtype");
}

Status CompareOnHost(const void* actual, const void* expected, bool generated, uint64_t seed,
                     uint64_t key_hash, const ckptspec_shard_geometry& geometry,
                     const ckptspec_compare_options& options, ckptspec_compare_report* report) {
  if (report == nullptr) return Status::InvalidArgument("report is null");
  HostJob job{};
  DType dtype;
  CKPTSPEC_RETURN_IF_ERROR(ValidateOptions(options, &dtype, &job.params));
  CKPTSPEC_RETURN_IF_ERROR(MakeIndexer(geometry, &job.indexer));
  CompareAccumulator acc = EmptyAccumulator();
  if (job.indexer.count > 0) {
    if (actual == nullptr) return Status::InvalidArgument("actual buffer is null");
    if (!generated && expected == nullptr) {
      return Status::InvalidArgument("expected buffer is null");
    }
    job.actual = actual;
    job.expected = expected;
    job.seed = seed;
    job.key_hash = key_hash;
    CKPTSPEC_RETURN_IF_ERROR(generated ? Dispatch<true>(dtype, job, ThreadsFor(options), &acc)
                                       : Dispatch<false>(dtype, job, ThreadsFor(options), &acc));
  }
  *report = FinishReport(acc, geometry, job.indexer);
  return Status::OK();
}

}  // namespace

Status CompareHostBuffers(const void* actual, const void* expected,
                          const ckptspec_shard_geometry& geometry,
                          const ckptspec_compare_options& options,
                          ckptspec_compare_report* report) {
  return CompareOnHost(actual, expected, false, 0, 0, geometry, options, report);
}

Status CompareHostGenerated(const void* actual, uint64_t seed, uint64_t key_hash,
                            const ckptspec_shard_geometry& geometry,
                            const ckptspec_compare_options& options,
                            ckptspec_compare_report* report) {
  return CompareOnHost(actual, nullptr, true, seed, key_hash, geometry, options, report);
}

}  // namespace device
}  // namespace ckptspec
