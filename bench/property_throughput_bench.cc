// Property throughput on the reference target with the in-memory Env: RapidCheck cases per second
// for P1, P2 and P4, and commands per second for the stateful test. Each benchmark iteration runs one
// batch of kCasesPerBatch cases through rc::detail::checkProperty (fixed seed, RapidCheck's default
// size schedule, shrinking disabled: a failure aborts the benchmark instead of shrinking).
//
// Counters: cases/s (items_per_second for P1, P2, P4) and commands/s for the stateful test;
// allocs/case, the calls of operator new per case (bench/allocation_counter.h), for each.
// Adding a property: one more BENCHMARK_CAPTURE(BM_Property, ...) line below.
#include <benchmark/benchmark.h>
#include <rapidcheck.h>

#include <cstdlib>
#include <iostream>

#include "bench/allocation_counter.h"
#include "properties/property.h"
#include "properties/stateful_commands.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

constexpr int kCasesPerBatch = 100;

const TargetFactory& Reference() {
  static const TargetFactory factory = ReferenceTargetFactory();
  return factory;
}

rc::detail::TestParams BatchParams(uint64_t seed) {
  rc::detail::TestParams params;
  params.seed = seed;
  params.maxSuccess = kCasesPerBatch;
  params.maxSize = 100;
  params.disableShrinking = true;
  return params;
}

template <typename Body>
void RunBatch(benchmark::State& state, uint64_t seed, Body body) {
  const rc::detail::TestResult result = rc::detail::checkProperty(
      rc::detail::toProperty(body), rc::detail::TestMetadata(), BatchParams(seed));
  if (!result.template is<rc::detail::SuccessResult>()) {
    rc::detail::printResultMessage(result, std::cerr);
    state.SkipWithError("the property failed");
  }
}

// Calls of operator new per case since `before` (an AllocationCount()).
double AllocationsPerCase(const benchmark::State& state, uint64_t before) {
  return static_cast<double>(AllocationCount() - before) /
         static_cast<double>(state.iterations() * kCasesPerBatch);
}

void BM_Property(benchmark::State& state, void (*check)(const TargetFactory&)) {
  uint64_t seed = 1;
  const uint64_t before = AllocationCount();
  for (auto _ : state) RunBatch(state, seed++, [check] { check(Reference()); });
  state.counters["allocs/case"] = AllocationsPerCase(state, before);
  state.SetItemsProcessed(state.iterations() * kCasesPerBatch);
  state.counters["cases/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kCasesPerBatch), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Property, P1_ResumeEquivalence, &CheckResumeEquivalence)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Property, P2_RoundTripIdentity, &CheckRoundTripIdentity)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Property, P4_ShardingIntegrity, &CheckSaveShardingIntegrity)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

void BM_Stateful(benchmark::State& state) {
  uint64_t seed = 1;
  StatefulStats stats;
  const uint64_t before = AllocationCount();
  for (auto _ : state) RunBatch(state, seed++, [&stats] { CheckStateful(Reference(), &stats); });
  state.counters["allocs/case"] = AllocationsPerCase(state, before);
  const int64_t commands = stats.commands;
  state.counters["cases/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kCasesPerBatch), benchmark::Counter::kIsRate);
  state.counters["commands/s"] =
      benchmark::Counter(static_cast<double>(commands), benchmark::Counter::kIsRate);
  state.counters["commands/case"] =
      static_cast<double>(commands) / static_cast<double>(state.iterations() * kCasesPerBatch);
}
BENCHMARK(BM_Stateful)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace ckptspec

BENCHMARK_MAIN();
