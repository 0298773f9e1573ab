// The P4 sweep over irregular chunks (model/box_overlap.h) on "staircase" inputs: N disjoint
// chunks of one tensor, each long on the sweep axis, so that a sweep whose active set never
// shrinks would compare every pair. The goal: 10^6 chunks checked in under 2 s.
//
//   BM_StaircaseCovered/N        2-D, column c (of N/2) split at row c into [0, c) and [c, N/2):
//                                disjoint, the tensor exactly covered, no violation expected
//   BM_StaircaseWithGaps/N       2-D, only the lower parts [c, N): disjoint, half the tensor
//                                uncovered (the gaps are reported as a missing volume)
//   BM_Staircase3AxesWithGaps/N  3-D, chunk c spans [c, 2N) x [c, c + N) x [c, c + 1): every two
//                                chunks meet on the first two axes (the sweep axis and the next
//                                with the most distinct offsets) and are apart on the third, so
//                                a sweep that indexes only two axes compares every pair
//
// The chunks are spread over 64 ranks. Counters: chunks, chunks_per_s. After the runs, one line
// per size run on both 2-D and 3-D with gaps: the 3-D time over the 2-D time (it grows with N
// when the 3-D search is quadratic); and each staircase's time at 16000 chunks over its time at
// 4000 (16 for a quadratic search, about 4 for N log N). The sizes start at 2000: below, the
// gaps of the 2-D staircase are located on the grid of chunk boundaries (kMaxCompressedCells),
// which the 2-D rows would time instead of the sweep.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_ratios.h"
#include "model/validate.h"

namespace ckptspec {
namespace {

constexpr int64_t kRanks = 64;

enum class Layout { kCovered, kWithGaps, k3AxesWithGaps };

TensorSpec Chunk(Dims global_shape, Dims offset, Dims shape) {
  TensorSpec t;
  t.key = "optimizer.flat_buffer";
  t.dtype = DType::kFloat32;
  t.global_shape = std::move(global_shape);
  t.global_offset = std::move(offset);
  t.local_shape = std::move(shape);
  t.replica_id = {0};
  return t;
}

GlobalSignature Staircase(int64_t chunks, Layout layout) {
  GlobalSignature sig;
  for (int64_t r = 0; r < kRanks; ++r) sig.ranks.push_back(RankSignature{r, {}, {}, nullptr});
  int64_t next = 0;
  auto add = [&](TensorSpec t) { sig.ranks[next++ % kRanks].tensors.push_back(std::move(t)); };
  if (layout == Layout::k3AxesWithGaps) {
    for (int64_t c = 0; c < chunks; ++c) {
      add(Chunk({2 * chunks, 2 * chunks, chunks}, {c, c, c}, {2 * chunks - c, chunks, 1}));
    }
    return sig;
  }
  const bool covered = layout == Layout::kCovered;
  const int64_t columns = covered ? chunks / 2 : chunks;
  for (int64_t c = 0; c < columns; ++c) {
    add(Chunk({columns, columns}, {c, c}, {columns - c, 1}));
    if (covered && c > 0) add(Chunk({columns, columns}, {0, c}, {c, 1}));
  }
  return sig;
}

// The name a run's seconds are recorded under: "<benchmark>/<chunks>".
std::string RunName(const char* benchmark, int64_t chunks) {
  return std::string(benchmark) + "/" + std::to_string(chunks);
}

void Run(benchmark::State& state, const char* name, Layout layout) {
  const GlobalSignature sig = Staircase(state.range(0), layout);
  int64_t chunks = 0;
  for (const RankSignature& r : sig.ranks) chunks += static_cast<int64_t>(r.tensors.size());
  std::vector<Violation> v;
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    v = CheckShardingIntegrity(sig);
    benchmark::DoNotOptimize(v);
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (layout == Layout::kCovered && !v.empty()) {
    std::fprintf(stderr, "%s\n", FormatViolations(v).c_str());
    state.SkipWithError("the covered staircase has violations");
    return;
  }
  if (layout != Layout::kCovered && (v.empty() || v[0].kind != ViolationKind::kGap)) {
    state.SkipWithError("the staircase with gaps reports no gap");
    return;
  }
  state.counters["chunks"] = static_cast<double>(chunks);
  state.counters["chunks_per_s"] = benchmark::Counter(
      static_cast<double>(chunks), benchmark::Counter::kIsIterationInvariantRate);
  BenchSeconds()[RunName(name, chunks)] = total / static_cast<double>(state.iterations());
}

void BM_StaircaseCovered(benchmark::State& state) {
  Run(state, "BM_StaircaseCovered", Layout::kCovered);
}
void BM_StaircaseWithGaps(benchmark::State& state) {
  Run(state, "BM_StaircaseWithGaps", Layout::kWithGaps);
}
void BM_Staircase3AxesWithGaps(benchmark::State& state) {
  Run(state, "BM_Staircase3AxesWithGaps", Layout::k3AxesWithGaps);
}

BENCHMARK(BM_StaircaseCovered)
    ->Arg(30000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
// The sizes of the staircases with gaps, 2-D and 3-D side by side.
constexpr int64_t kGapSizes[] = {2000, 4000, 16000, 30000, 100000, 1000000};
void GapSizes(benchmark::internal::Benchmark* b) {
  for (int64_t chunks : kGapSizes) b->Arg(chunks);
}
BENCHMARK(BM_StaircaseWithGaps)->Apply(GapSizes)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Staircase3AxesWithGaps)->Apply(GapSizes)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  using ckptspec::PrintRatio;
  using ckptspec::RunName;
  for (int64_t chunks : ckptspec::kGapSizes) {
    const std::string what = "3 axes over 2 axes at " + std::to_string(chunks) + " chunks";
    PrintRatio(what.c_str(), RunName("BM_StaircaseWithGaps", chunks).c_str(),
               RunName("BM_Staircase3AxesWithGaps", chunks).c_str());
  }
  for (const char* name : {"BM_StaircaseWithGaps", "BM_Staircase3AxesWithGaps"}) {
    const std::string what = std::string(name) + ", 16000 chunks over 4000";
    PrintRatio(what.c_str(), RunName(name, 4000).c_str(), RunName(name, 16000).c_str());
  }
  return 0;
}
