// Reading one adapter reply line that arrives in 64 KiB reads (targets/process/reply_lines.h), at
// 1, 16 and 64 MB: the reader against the search that started over at the buffer's first byte
// after every read (what the harness did before), side by side.
//
//   BM_ReplyLines/MB         ReplyLines: each read appended, the search resumed where it stopped
//   BM_RescanWholeBuffer/MB  each read appended, then the whole buffer searched for the newline
//   BM_AppendOnly/MB         each read appended, no search: the floor (copying the bytes in)
//
// Counter: ns_per_byte. After the runs, for each size: the rescan's time over the reader's (it
// grows with the size when one of them is quadratic); the reader's time over the floor's (about
// constant when the reader is linear: the floor's own time per byte grows from 1 to 64 MB as the
// buffers outgrow the caches); the reader's ns per byte.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "bench/bench_ratios.h"
#include "targets/process/reply_lines.h"

namespace ckptspec {
namespace {

constexpr size_t kRead = 64 << 10;
constexpr size_t kMegabyte = 1 << 20;

// A reply line of `mb` MB, the newline last.
std::string Line(int64_t mb) {
  std::string line = "{\"id\":1,\"rank\":0,\"ok\":true,\"pad\":\"";
  line.resize(static_cast<size_t>(mb) * kMegabyte - 3, 'a');
  return line + "\"}\n";
}

std::string RunName(const char* benchmark, int64_t mb) {
  return std::string(benchmark) + "/" + std::to_string(mb);
}

// Feeds the line in reads of kRead bytes to `read_line`, which returns the line's length once it
// is complete, else 0.
template <typename ReadLine>
void Run(benchmark::State& state, const char* name, ReadLine read_line) {
  const std::string line = Line(state.range(0));
  double total = 0;
  size_t got = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    got = read_line(line);
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (got + 1 != line.size()) {
    state.SkipWithError("the line read is not the line written");
    return;
  }
  const double seconds = total / static_cast<double>(state.iterations());
  state.counters["ns_per_byte"] = seconds * 1e9 / static_cast<double>(line.size());
  BenchSeconds()[RunName(name, state.range(0))] = seconds;
}

void BM_ReplyLines(benchmark::State& state) {
  Run(state, "BM_ReplyLines", [](const std::string& bytes) -> size_t {
    ReplyLines reader(size_t{256} << 20);
    std::string line;
    for (size_t at = 0; at < bytes.size(); at += kRead) {
      reader.Append(bytes.data() + at, std::min(kRead, bytes.size() - at));
      if (reader.TakeLine(&line)) return line.size();
    }
    return 0;
  });
}

void BM_RescanWholeBuffer(benchmark::State& state) {
  Run(state, "BM_RescanWholeBuffer", [](const std::string& bytes) -> size_t {
    std::string buffer;
    for (size_t at = 0; at < bytes.size(); at += kRead) {
      buffer.append(bytes.data() + at, std::min(kRead, bytes.size() - at));
      const size_t newline = buffer.find('\n');
      if (newline != std::string::npos) return buffer.substr(0, newline).size();
    }
    return 0;
  });
}

void BM_AppendOnly(benchmark::State& state) {
  Run(state, "BM_AppendOnly", [](const std::string& bytes) -> size_t {
    std::string buffer;
    for (size_t at = 0; at < bytes.size(); at += kRead) {
      buffer.append(bytes.data() + at, std::min(kRead, bytes.size() - at));
    }
    benchmark::DoNotOptimize(buffer.data());
    return buffer.back() == '\n' ? buffer.size() - 1 : 0;
  });
}

BENCHMARK(BM_ReplyLines)->Arg(1)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AppendOnly)->Arg(1)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RescanWholeBuffer)
    ->Arg(1)
    ->Arg(16)
    ->Arg(64)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  using ckptspec::BenchSeconds;
  using ckptspec::RunName;
  for (int64_t mb : {1, 16, 64}) {
    const std::string what = "rescan over reader at " + std::to_string(mb) + " MB";
    ckptspec::PrintRatio(what.c_str(), RunName("BM_ReplyLines", mb).c_str(),
                         RunName("BM_RescanWholeBuffer", mb).c_str());
  }
  for (int64_t mb : {1, 16, 64}) {
    const std::string what = "floor over reader at " + std::to_string(mb) + " MB";
    ckptspec::PrintRatio(what.c_str(), RunName("BM_ReplyLines", mb).c_str(),
                         RunName("BM_AppendOnly", mb).c_str());
  }
  for (int64_t mb : {1, 16, 64}) {
    const auto it = BenchSeconds().find(RunName("BM_ReplyLines", mb));
    if (it == BenchSeconds().end()) continue;
    std::printf("reader at %lld MB: %.3f ns per byte\n", static_cast<long long>(mb),
                it->second * 1e9 / static_cast<double>(mb * (1 << 20)));
  }
  return 0;
}
