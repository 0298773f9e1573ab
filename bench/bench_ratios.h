// The ratios a benchmark binary prints after its runs: each benchmark records its seconds per
// iteration under a name, and main() prints one line per ratio whose two benchmarks ran. Shared
// by the benchmarks judged by a ratio measured side by side in one run (docs/PERFORMANCE.md).
#pragma once

#include <cstdio>
#include <map>
#include <string>

namespace ckptspec {

// Seconds per iteration of each benchmark that ran, by the name it recorded.
inline std::map<std::string, double>& BenchSeconds() {
  static auto* seconds = new std::map<std::string, double>();
  return *seconds;
}

// Prints "ratio <what>: <baseline seconds / measured seconds> (...)", the measured code's speed
// over the baseline's, when both were recorded; nothing otherwise.
inline void PrintRatio(const char* what, const char* measured, const char* baseline) {
  const auto& s = BenchSeconds();
  if (!s.count(measured) || !s.count(baseline)) return;
  std::printf("ratio %s: %.2f (%.3f s against %.3f s)\n", what, s.at(baseline) / s.at(measured),
              s.at(measured), s.at(baseline));
}

}  // namespace ckptspec
