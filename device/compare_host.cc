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

// The hot loop runs in chunks of consecutive global indices. A first, branch-free pass over a
// chunk (which the compiler vectorizes) adds the checksum terms of the actual elements and detects
// whether any element needs classifying (its patterns differ, or it is a NaN where equal NaNs can
// mismatch). Only such chunks take the second, per-element pass through the shared
// ClassifyElement. The expected checksum is the actual one plus, for differing elements, the
// difference of their terms -- the same sum mod 2^64 as AccumulateElement's.
constexpr int64_t kChunk = 1024;

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
// Each range function is compiled for x86-64-v4 (AVX-512), -v3 (AVX2) and baseline x86-64 and
// picked at load time. Integer arithmetic only on this path, so every clone computes the same bits.
#define CKPTSPEC_HOST_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CKPTSPEC_HOST_CLONES
#endif

template <DType D>
__attribute__((always_inline)) inline uint64_t LoadAt(const uint8_t* base, int64_t j) {
  Bits<D> bits;
  memcpy(&bits, base + j * static_cast<int64_t>(sizeof(Bits<D>)), sizeof bits);
  return bits;
}

template <DType D, bool kGenerated>
__attribute__((always_inline)) inline CompareAccumulator CompareRangeImpl(const HostJob& job,
                                                                          int64_t begin,
                                                                          int64_t end) {
  CompareAccumulator acc = EmptyAccumulator();
  uint64_t expected_delta = 0;
  const ShardIndexer& ix = job.indexer;
  const CompareParams params = job.params;
  const bool flag_nans = EqualNaNsMismatch(params);
  const uint8_t* actual = static_cast<const uint8_t*>(job.actual);
  Bits<D> generated[kGenerated ? kChunk : 1];
  [[maybe_unused]] const uint64_t stream = ContentStream(job.seed, job.key_hash);
  int64_t i = begin;
  while (i < end) {
    const uint64_t run_global = ix.GlobalIndexOf(i);
    const int64_t run_end = std::min(end, (i / ix.run_length + 1) * ix.run_length);
    for (uint64_t global = run_global; i < run_end;) {
      const int64_t n = std::min(kChunk, run_end - i);
      const uint8_t* a = actual + i * static_cast<int64_t>(sizeof(Bits<D>));
      const uint8_t* e;
      if constexpr (kGenerated) {
        // ContentElementBits(D, seed, key_hash, global + j), with the stream hoisted and the
        // index term stepped by addition (model/content.h).
        uint64_t term = ContentIndexTerm(global);
        for (int64_t j = 0; j < n; ++j) {
          generated[j] =
              static_cast<Bits<D>>(ContentElementFromBits(D, ContentBitsFromTerm(stream, term)));
          term += kContentIndexGolden;
        }
        e = reinterpret_cast<const uint8_t*>(generated);
      } else {
        e = static_cast<const uint8_t*>(job.expected) + i * static_cast<int64_t>(sizeof(Bits<D>));
      }
      const uint64_t salt = global * kChecksumSalt;
      uint64_t sum = 0;
      uint64_t differ = 0;
      uint64_t nans = 0;
      uint64_t element_salt = salt;  // (global + j) * kChecksumSalt, stepped by addition
      for (int64_t j = 0; j < n; ++j) {
        const uint64_t av = LoadAt<D>(a, j);
        sum += Mix64(av ^ element_salt);
        element_salt += kChecksumSalt;
        differ |= av ^ LoadAt<D>(e, j);
        if constexpr (ElementTraits<D>::kFloating) nans |= static_cast<uint64_t>(IsNaN<D>(av));
      }
      acc.checksum_actual += sum;
      if (differ != 0 || (flag_nans && nans != 0)) {
        for (int64_t j = 0; j < n; ++j) {
          const uint64_t av = LoadAt<D>(a, j);
          const uint64_t ev = LoadAt<D>(e, j);
          if (av != ev) {
            const uint64_t s = salt + static_cast<uint64_t>(j) * kChecksumSalt;
            expected_delta += Mix64(ev ^ s) - Mix64(av ^ s);
          }
          ClassifyElement<D>(av, ev, i + j, params, &acc);
        }
      }
      i += n;
      global += static_cast<uint64_t>(n);
    }
  }
  acc.checksum_expected = acc.checksum_actual + expected_delta;
  return acc;
}

using RangeFn = CompareAccumulator (*)(const HostJob&, int64_t, int64_t);

#define CKPTSPEC_DEFINE_RANGE(name, dtype, generated)                                            \
  CKPTSPEC_HOST_CLONES CompareAccumulator name(const HostJob& job, int64_t begin, int64_t end) { \
    return CompareRangeImpl<dtype, generated>(job, begin, end);                                  \
  }
CKPTSPEC_DEFINE_RANGE(RangeF32, DType::kFloat32, false)
CKPTSPEC_DEFINE_RANGE(RangeBF16, DType::kBFloat16, false)
CKPTSPEC_DEFINE_RANGE(RangeF16, DType::kFloat16, false)
CKPTSPEC_DEFINE_RANGE(RangeE4M3, DType::kFloat8E4M3, false)
CKPTSPEC_DEFINE_RANGE(RangeE5M2, DType::kFloat8E5M2, false)
CKPTSPEC_DEFINE_RANGE(RangeI32, DType::kInt32, false)
CKPTSPEC_DEFINE_RANGE(RangeI64, DType::kInt64, false)
CKPTSPEC_DEFINE_RANGE(GeneratedF32, DType::kFloat32, true)
CKPTSPEC_DEFINE_RANGE(GeneratedBF16, DType::kBFloat16, true)
CKPTSPEC_DEFINE_RANGE(GeneratedF16, DType::kFloat16, true)
CKPTSPEC_DEFINE_RANGE(GeneratedE4M3, DType::kFloat8E4M3, true)
CKPTSPEC_DEFINE_RANGE(GeneratedE5M2, DType::kFloat8E5M2, true)
CKPTSPEC_DEFINE_RANGE(GeneratedI32, DType::kInt32, true)
CKPTSPEC_DEFINE_RANGE(GeneratedI64, DType::kInt64, true)
#undef CKPTSPEC_DEFINE_RANGE

RangeFn RangeFunction(DType dtype, bool generated) {
  switch (dtype) {
    case DType::kFloat32:
      return generated ? GeneratedF32 : RangeF32;
    case DType::kBFloat16:
      return generated ? GeneratedBF16 : RangeBF16;
    case DType::kFloat16:
      return generated ? GeneratedF16 : RangeF16;
    case DType::kFloat8E4M3:
      return generated ? GeneratedE4M3 : RangeE4M3;
    case DType::kFloat8E5M2:
      return generated ? GeneratedE5M2 : RangeE5M2;
    case DType::kInt32:
      return generated ? GeneratedI32 : RangeI32;
    case DType::kInt64:
      return generated ? GeneratedI64 : RangeI64;
  }
  return nullptr;
}

Status RunThreads(RangeFn range, const HostJob& job, int threads, CompareAccumulator* out) {
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
      pool.emplace_back([&, w] { parts[w] = range(job, range_begin(w), range_begin(w + 1)); });
    }
  } catch (const std::exception& e) {
    for (auto& t : pool) t.join();
    return Status::IOError(std::string("cannot start CPU twin worker threads: ") + e.what());
  }
  parts[0] = range(job, range_begin(0), range_begin(1));
  for (auto& t : pool) t.join();
  CompareAccumulator acc = EmptyAccumulator();
  for (const auto& part : parts) acc = Merge(acc, part);
  *out = acc;
  return Status::OK();
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
    CKPTSPEC_RETURN_IF_ERROR(
        RunThreads(RangeFunction(dtype, generated), job, ThreadsFor(options), &acc));
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
