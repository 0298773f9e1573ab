// The P4 sweep over irregular chunks (model/box_overlap.h) on "staircase" inputs: N disjoint
// chunks of one 2-D tensor, each long on the sweep axis, so that a sweep whose active set never
// shrinks would compare every pair. The goal: 10^6 chunks checked in under 2 s.
//
//   BM_StaircaseCovered/N   column c (of N/2) split at row c into [0, c) and [c, N/2): disjoint,
//                           the tensor exactly covered, no violation expected
//   BM_StaircaseWithGaps/N  only the lower parts [c, N): disjoint, half the tensor uncovered
//                           (the gaps are reported as a missing volume)
//
// The chunks are spread over 64 ranks. Counters: chunks, chunks_per_s.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <vector>

#include "model/validate.h"

namespace ckptspec {
namespace {

constexpr int64_t kRanks = 64;

TensorSpec Chunk(int64_t columns, int64_t row, int64_t rows, int64_t column) {
  TensorSpec t;
  t.key = "optimizer.flat_buffer";
  t.dtype = DType::kFloat32;
  t.global_shape = {columns, columns};
  t.global_offset = {row, column};
  t.local_shape = {rows, 1};
  t.replica_id = {0};
  return t;
}

GlobalSignature Staircase(int64_t chunks, bool covered) {
  GlobalSignature sig;
  for (int64_t r = 0; r < kRanks; ++r) sig.ranks.push_back(RankSignature{r, {}, {}, nullptr});
  const int64_t columns = covered ? chunks / 2 : chunks;
  int64_t next = 0;
  for (int64_t c = 0; c < columns; ++c) {
    sig.ranks[next++ % kRanks].tensors.push_back(Chunk(columns, c, columns - c, c));
    if (covered && c > 0) sig.ranks[next++ % kRanks].tensors.push_back(Chunk(columns, 0, c, c));
  }
  return sig;
}

void Run(benchmark::State& state, bool covered) {
  const GlobalSignature sig = Staircase(state.range(0), covered);
  int64_t chunks = 0;
  for (const RankSignature& r : sig.ranks) chunks += static_cast<int64_t>(r.tensors.size());
  std::vector<Violation> v;
  for (auto _ : state) {
    v = CheckShardingIntegrity(sig);
    benchmark::DoNotOptimize(v);
  }
  if (covered && !v.empty()) {
    std::fprintf(stderr, "%s\n", FormatViolations(v).c_str());
    state.SkipWithError("the covered staircase has violations");
  }
  if (!covered && (v.empty() || v[0].kind != ViolationKind::kGap)) {
    state.SkipWithError("the staircase with gaps reports no gap");
  }
  state.counters["chunks"] = static_cast<double>(chunks);
  state.counters["chunks_per_s"] = benchmark::Counter(
      static_cast<double>(chunks), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_StaircaseCovered(benchmark::State& state) { Run(state, true); }
void BM_StaircaseWithGaps(benchmark::State& state) { Run(state, false); }

BENCHMARK(BM_StaircaseCovered)
    ->Arg(30000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_StaircaseWithGaps)
    ->Arg(30000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace ckptspec

BENCHMARK_MAIN();
