// Time to detection of every catalog mutant (docs/DESIGN.md §7): for each mutant, over seeds 1..20,
// each of its catalog killers (MutantInfo::killers) runs as `ckptspec run --properties P --seed s`
// would (100 cases, RapidCheck's size schedule, shrinking on). A seed's detection is the killer
// that failed first in time: its time to the first failing case, the cases run until then, and
// the printed size of its shrunk counterexample. A seed where no killer fails counts as a
// survival (survived_seeds) and contributes no detection.
//
// Counters per mutant: killed_seeds, survived_seeds, median/max cases, median/max seconds to the
// first failing case, median/max shrunk size in bytes. One benchmark iteration each (the
// measurement is the 20-seed sweep itself).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "runner/runner.h"
#include "targets/mutants/catalog.h"

namespace ckptspec {
namespace {

constexpr int kSeeds = 20;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Max(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

std::vector<const Property*> Killers(const MutantInfo& info) {
  std::vector<const Property*> out;
  for (const std::string& id : KillerIds(info)) {
    if (const Property* p = FindProperty(id)) out.push_back(p);
  }
  return out;
}

void BM_TimeToDetection(benchmark::State& state, const MutantInfo* info) {
  const TargetFactory factory = MutantFactory(*info);
  const std::vector<const Property*> killers = Killers(*info);
  std::vector<double> cases, seconds, shrunk;
  int survived = 0;
  for (auto _ : state) {
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      const PropertyOutcome* first = nullptr;
      std::vector<PropertyOutcome> outcomes;
      outcomes.reserve(killers.size());
      for (const Property* p : killers) {
        RunParams params;
        params.seed = seed;
        outcomes.push_back(RunProperty(*p, factory, params));
      }
      for (const PropertyOutcome& o : outcomes) {
        if (o.verdict != Verdict::kFail) continue;
        if (!first || o.time_to_failure_s < first->time_to_failure_s) first = &o;
      }
      if (!first) {
        ++survived;
        continue;
      }
      cases.push_back(first->cases);
      seconds.push_back(first->time_to_failure_s);
      shrunk.push_back(static_cast<double>(first->shrunk_size));
    }
  }
  state.counters["killed_seeds"] = static_cast<double>(cases.size());
  state.counters["survived_seeds"] = survived;
  state.counters["cases_med"] = Median(cases);
  state.counters["cases_max"] = Max(cases);
  state.counters["s_med"] = Median(seconds);
  state.counters["s_max"] = Max(seconds);
  state.counters["shrunk_b_med"] = Median(shrunk);
  state.counters["shrunk_b_max"] = Max(shrunk);
  state.SetLabel(std::string(info->name) + " (killers " + info->killers + ")");
}

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  for (const ckptspec::MutantInfo& m : ckptspec::MutantCatalog()) {
    benchmark::RegisterBenchmark(m.id, ckptspec::BM_TimeToDetection, &m)
        ->Iterations(1)
        ->Unit(benchmark::kSecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
