// Scale of the layout math, the canonical parameter sharding and the P4/P5 validators on a
// Llama-3-405B-like model (126 layers, hidden 16384, 128 heads, 8 query groups, ffn 53248,
// vocab 128256) under TP8 · PP16 · DPn, for n = 8, 32, 128 (1k, 4k and 16k ranks).
//
// Counters: entries (tensor entries over all ranks), entries_per_s, and peak_rss_MiB (the process's
// peak resident set so far; run one size per process with --benchmark_filter for a clean figure).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>

#include "model/layout.h"
#include "model/param_sharding.h"
#include "model/validate.h"

namespace ckptspec {
namespace {

ModelConfig Llama405B() {
  ModelConfig m;
  m.num_layers = 126;
  m.hidden_size = 16384;
  m.num_attention_heads = 128;
  m.num_query_groups = 8;
  m.ffn_hidden_size = 53248;
  m.vocab_size = 128256;
  m.gated_linear_unit = true;
  m.tie_embeddings = false;
  m.pipeline_split = {7, 7};  // first and last stages also hold the embedding and the loss
  return m;
}

ParameterSharding MakeSharding(int64_t dp) {
  Layout layout;
  Status s = Layout::Make(8 * 16 * dp, {8, 16, dp, 1, 1, 0}, RankOrder(), &layout);
  ParameterSharding sharding;
  if (s.ok()) s = ParameterSharding::Make(layout, Llama405B(), &sharding);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::abort();
  }
  return sharding;
}

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

int64_t CountEntries(const GlobalSignature& sig) {
  int64_t n = 0;
  for (const RankSignature& r : sig.ranks) n += static_cast<int64_t>(r.tensors.size());
  return n;
}

// Layout + sharding + P4 + P5: the figure the scale goal is about.
void BM_BuildAndValidate(benchmark::State& state) {
  const int64_t dp = state.range(0);
  int64_t entries = 0;
  size_t violations = 0;
  for (auto _ : state) {
    const ParameterSharding sharding = MakeSharding(dp);
    const GlobalSignature sig = sharding.Signature();
    entries = CountEntries(sig);
    violations = CheckShardingIntegrity(sig).size() + CheckKeyInjectivity(sig).size();
    benchmark::DoNotOptimize(violations);
  }
  if (violations != 0) state.SkipWithError("the canonical sharding has violations");
  state.counters["ranks"] = static_cast<double>(8 * 16 * dp);
  state.counters["entries"] = static_cast<double>(entries);
  state.counters["entries_per_s"] = benchmark::Counter(
      static_cast<double>(entries), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_rss_MiB"] = PeakRssMiB();
}

// The parts on their own, to show where time goes.
void BM_BuildSignature(benchmark::State& state) {
  const ParameterSharding sharding = MakeSharding(state.range(0));
  int64_t entries = 0;
  for (auto _ : state) {
    const GlobalSignature sig = sharding.Signature();
    entries = CountEntries(sig);
  }
  state.counters["entries"] = static_cast<double>(entries);
}

void BM_CheckShardingIntegrity(benchmark::State& state) {
  const GlobalSignature sig = MakeSharding(state.range(0)).Signature();
  for (auto _ : state) benchmark::DoNotOptimize(CheckShardingIntegrity(sig));
  state.counters["entries"] = static_cast<double>(CountEntries(sig));
}

void BM_CheckKeyInjectivity(benchmark::State& state) {
  const GlobalSignature sig = MakeSharding(state.range(0)).Signature();
  for (auto _ : state) benchmark::DoNotOptimize(CheckKeyInjectivity(sig));
  state.counters["entries"] = static_cast<double>(CountEntries(sig));
}

BENCHMARK(BM_BuildAndValidate)
    ->Arg(8)
    ->Arg(32)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_BuildSignature)
    ->Arg(8)
    ->Arg(32)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_CheckShardingIntegrity)
    ->Arg(8)
    ->Arg(32)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_CheckKeyInjectivity)
    ->Arg(8)
    ->Arg(32)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace ckptspec

BENCHMARK_MAIN();
