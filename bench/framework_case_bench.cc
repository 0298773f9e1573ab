// What a framework case costs (docs/PROTOCOL.md, "Framework adapters"): RapidCheck cases per
// second of the framework forms of P1, P2 and P10 against the spec's own framework in process
// (harness/spec_framework.h over the reference, in-memory Env), through the built-in adapter's
// framework mode (ckptspec_reference_adapter --framework: a process per rank, live groups, the
// real disk), and through a real framework adapter when CKPTSPEC_BENCH_FRAMEWORK_ADAPTER names its
// command (e.g. the megatron-core framework adapter under its environment). Every target runs the
// same cases (same seed, same count, no shrinking) side by side in each iteration; a case is
// build, train, save, restart, build, load, observe (P1 adds training on and a second process
// that trains without interruption).
//   adapter/in-process = the price of the protocol and its processes, the training job's own work
//                        excluded (the built-in adapter runs the spec's arithmetic);
//   third party/adapter = what the real framework's job costs beyond that.
// CKPTSPEC_BENCH_CASES, when set, is the cases per batch (default 10).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <string>

#include "runner/adapter_target.h"
#include "properties/property.h"
#include "runner/runner.h"
#include "harness/spec_framework.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

int CasesPerBatch() {
  const char* chosen = getenv("CKPTSPEC_BENCH_CASES");
  const int n = chosen ? atoi(chosen) : 0;
  return n > 0 ? n : 10;
}

// Cases per second of one batch, or a benchmark error naming the failure.
double CasesPerSecond(benchmark::State& state, const Property& p, const TargetFactory& f,
                      uint64_t seed) {
  RunParams params;
  params.seed = seed;
  params.max_success = CasesPerBatch();
  params.shrink = false;
  const PropertyOutcome o = RunProperty(p, f, params);
  if (o.verdict != Verdict::kPass) {
    state.SkipWithError(
        (f.name + " " + p.id + ": " + VerdictName(o.verdict) + ": " + o.message).c_str());
    return 0;
  }
  return o.cases / o.seconds;
}

Status FrameworkAdapter(const std::string& command, TargetFactory* out) {
  AdapterOptions options;
  options.command = command;
  options.timeout_s = 300;
  return AdapterTargetFactory(options, out);
}

void BM_FrameworkCase(benchmark::State& state, const char* id) {
  const Property& p = *FindProperty(id);
  const TargetFactory in_process = SpecFrameworkFactory(ReferenceTargetFactory());
  TargetFactory builtin, third_party;
  Status s = FrameworkAdapter(std::string(CKPTSPEC_REFERENCE_ADAPTER) + " --framework", &builtin);
  const char* chosen = getenv("CKPTSPEC_BENCH_FRAMEWORK_ADAPTER");
  const bool real = chosen && *chosen;
  if (s.ok() && real) s = FrameworkAdapter(chosen, &third_party);
  if (!s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  double spec = 0, adapter = 0, framework = 0;
  uint64_t seed = 1;
  for (auto _ : state) {
    spec += CasesPerSecond(state, p, in_process, seed);
    adapter += CasesPerSecond(state, p, builtin, seed);
    if (real) framework += CasesPerSecond(state, p, third_party, seed);
    ++seed;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["in-process cases/s"] = spec / n;
  state.counters["adapter cases/s"] = adapter / n;
  state.counters["adapter/in-process"] = adapter / spec;
  if (real) {
    state.counters["third party cases/s"] = framework / n;
    state.counters["third party/adapter"] = framework / adapter;
  }
}
BENCHMARK_CAPTURE(BM_FrameworkCase, P1_ResumeEquivalence, "P1")
    ->Unit(benchmark::kSecond)
    ->Iterations(2);
BENCHMARK_CAPTURE(BM_FrameworkCase, P2_RoundTrip, "P2")->Unit(benchmark::kSecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_FrameworkCase, P10_Scheduler, "P10")->Unit(benchmark::kSecond)->Iterations(2);

}  // namespace
}  // namespace ckptspec

BENCHMARK_MAIN();
