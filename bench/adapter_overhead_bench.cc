// The cost of the adapter protocol: RapidCheck cases per second of P1 and P2 on the reference in
// process (in-memory Env, as ctest runs it), on the reference in process over the real disk (the
// storage the adapter uses), and through the built-in adapter (ckptspec_reference_adapter: one
// process per rank, entry bytes through scratch files, the reference engine on the real disk).
// Both on-disk variants put their checkpoints under $TMPDIR (else /tmp): run it with TMPDIR on a
// tmpfs to see the protocol's cost apart from fsync latency, on a disk to see a real deployment.
// The adapter runs twice: with live groups (its ranks started once and reset between cases,
// docs/PROTOCOL.md revision 2) and with fresh processes for every engine
// (--adapter-fresh-processes). All run the same cases (same seed, same count, no shrinking) side
// by side in each iteration, so the ratios compare like with like:
//   adapter/in-memory = the whole price of running a target through the protocol;
//   adapter/disk      = the protocol's own share (processes, pipes, scratch files);
//   live/fresh        = what live groups save.
// CKPTSPEC_BENCH_ADAPTER, when set, is the adapter command measured instead of the built-in one
// (e.g. a Python adapter under its environment's interpreter); CKPTSPEC_BENCH_CASES, when set,
// the cases per batch (default 20; a Python adapter with fresh processes takes seconds a case).
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "runner/adapter_target.h"
#include "properties/property.h"
#include "runner/runner.h"
#include "base/env.h"
#include "targets/reference/reference_factory.h"
#include "targets/reference/reference_target.h"

namespace ckptspec {
namespace {

constexpr int kDefaultCases = 20;

int CasesPerBatch() {
  const char* chosen = getenv("CKPTSPEC_BENCH_CASES");
  const int n = chosen ? atoi(chosen) : 0;
  return n > 0 ? n : kDefaultCases;
}

// The reference target on the POSIX Env in a fresh temporary directory (removed at the end).
class ReferenceOnDisk : public TargetUnderTest {
 public:
  ReferenceOnDisk() {
    const char* tmp = getenv("TMPDIR");
    std::string pattern = JoinPath(tmp && *tmp ? tmp : "/tmp", "ckptspec-bench-XXXXXX");
    if (mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
    NewProcess();
  }
  ~ReferenceOnDisk() override {
    target_.reset();
    if (!dir_.empty()) (void)Env::Posix()->RemoveTree(dir_);
  }
  Target& target() override { return *target_; }
  MemEnv* mem_env() override { return nullptr; }
  std::string root() const override { return JoinPath(dir_, "ckpt"); }
  void NewProcess() override {
    target_.reset();
    ReferenceOptions engine;
    engine.env = Env::Posix();
    engine.root = root();
    target_ = std::make_unique<ReferenceTarget>("reference", std::move(engine));
  }

 private:
  std::string dir_;
  std::unique_ptr<ReferenceTarget> target_;
};

TargetFactory ReferenceOnDiskFactory() {
  TargetFactory f;
  f.name = "reference-on-disk";
  f.make = [](const TargetOptions&) -> std::unique_ptr<TargetUnderTest> {
    return std::make_unique<ReferenceOnDisk>();
  };
  f.capabilities = f.make(TargetOptions())->target().engine().capabilities();
  return f;
}

// Cases per second of one batch, or a benchmark error.
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

void BM_AdapterOverhead(benchmark::State& state, const char* id) {
  const Property& p = *FindProperty(id);
  const TargetFactory memory = ReferenceTargetFactory();
  const TargetFactory disk = ReferenceOnDiskFactory();
  const char* chosen = getenv("CKPTSPEC_BENCH_ADAPTER");
  AdapterOptions options;
  options.command = chosen && *chosen ? chosen : CKPTSPEC_REFERENCE_ADAPTER;
  TargetFactory adapter, fresh;
  Status s = AdapterTargetFactory(options, &adapter);
  options.fresh_processes = true;
  if (s.ok()) s = AdapterTargetFactory(options, &fresh);
  if (!s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  double in_memory = 0, on_disk = 0, through_adapter = 0, fresh_processes = 0;
  uint64_t seed = 1;
  for (auto _ : state) {
    in_memory += CasesPerSecond(state, p, memory, seed);
    on_disk += CasesPerSecond(state, p, disk, seed);
    through_adapter += CasesPerSecond(state, p, adapter, seed);
    fresh_processes += CasesPerSecond(state, p, fresh, seed);
    ++seed;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["in-memory cases/s"] = in_memory / n;
  state.counters["disk cases/s"] = on_disk / n;
  state.counters["adapter cases/s"] = through_adapter / n;
  state.counters["adapter/in-memory"] = through_adapter / in_memory;
  state.counters["adapter/disk"] = through_adapter / on_disk;
  state.counters["fresh cases/s"] = fresh_processes / n;
  state.counters["live/fresh"] = through_adapter / fresh_processes;
}
BENCHMARK_CAPTURE(BM_AdapterOverhead, P1_ResumeEquivalence, "P1")
    ->Unit(benchmark::kSecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_AdapterOverhead, P2_RoundTripIdentity, "P2")
    ->Unit(benchmark::kSecond)
    ->Iterations(3);

}  // namespace
}  // namespace ckptspec

BENCHMARK_MAIN();
