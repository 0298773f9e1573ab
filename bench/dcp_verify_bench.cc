// `ckptspec verify` on PyTorch DCP checkpoints, measured against what a user has without it:
//  - the .metadata of a large MoE run (tools/write_dcp_metadata_bench_input.py: 200 MiB, about
//    1.5 million chunks) read and fully checked (formats/dcp_metadata.h, formats/dcp_checks.h)
//    against pickle.load with torch imported plus the same checks in Python
//    (tools/dcp_metadata_python_check.py), in one run: ratio python_over_ckptspec (wall time),
//    and python_over_ckptspec_cpu (ckptspec's CPU time over its two threads; Python's check runs
//    on one, so its wall time is its CPU time);
//  - `verify --data` on a DCP checkpoint of real tensors (tools/write_dcp_data_bench_input.py)
//    against a plain sequential read of the same files, in 4 MiB blocks: ratio
//    data_over_plain_read (files in the page cache for both: the second pass of each);
//  - a hostile index, written here (formats/dcp_test_writer.h): one tensor with a 64 KiB name on
//    N overlapping chunks without storage entries, so that the tiling and storage checks report on
//    every chunk; read and checked at N = 10,000 and 50,000. Its peak memory over the index's
//    size stays a small constant, and the ratio long_name_50k_over_10k (time at 50k over time
//    at 10k, 5 when linear) shows the cost linear in the chunks, not in chunks times the name.
// Inputs come from the environment; bench/run_dcp_verify_bench.sh writes them with the torch
// environment and runs this:
//   CKPTSPEC_DCP_METADATA=FILE CKPTSPEC_DCP_DATA=DIR CKPTSPEC_PYTHON=python build/bench/dcp_verify_bench
// A benchmark whose input is not given is skipped with a message.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/bench_ratios.h"
#include "formats/dcp_test_writer.h"
#include "formats/dcp_checks.h"
#include "formats/dcp_metadata.h"
#include "ondisk/checkpoint_kind.h"
#include "ondisk/dcp_verify.h"
#include "base/env.h"

namespace ckptspec {
namespace {

std::string EnvOr(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

uint64_t ProcStatusBytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(status, line)) {
    if (line.compare(0, prefix.size(), prefix) == 0) {
      return std::strtoull(line.c_str() + prefix.size(), nullptr, 10) * 1024;
    }
  }
  return 0;
}

// This process's CPU time so far, every thread's, user and system.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// Frees what earlier runs left in the allocator and resets the peak (Linux: clear_refs 5).
void ResetPeak() {
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

void BM_CkptspecReadAndCheckMetadata(benchmark::State& state) {
  const std::string path = EnvOr("CKPTSPEC_DCP_METADATA");
  if (path.empty()) {
    state.SkipWithError("CKPTSPEC_DCP_METADATA is not set (bench/run_dcp_verify_bench.sh)");
    return;
  }
  double total = 0, cpu = 0;
  uint64_t bytes = 0, peak_growth = 0;
  for (auto _ : state) {
    ResetPeak();
    const uint64_t before = ProcStatusBytes("VmRSS");
    const double cpu_start = CpuSeconds();
    const auto start = std::chrono::steady_clock::now();
    std::string text;
    Status s = ReadFileToString(Env::Posix(), path, uint64_t{1} << 34, &text);
    bytes = text.size();
    DcpMetadata md;
    if (s.ok()) s = md.Read(std::move(text));
    DcpIndexReport report;
    if (s.ok()) {
      CheckDcpIndex(
          md,
          [](std::string_view, uint64_t* size) {
            *size = uint64_t{1} << 40;  // the data files are not written: every extent fits
            return true;
          },
          &report);
    }
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cpu += CpuSeconds() - cpu_start;
    peak_growth = ProcStatusBytes("VmHWM") - before;
    if (!s.ok() || !report.ok()) {
      state.SkipWithError(s.ok() ? report.findings.front().c_str() : s.ToString().c_str());
      return;
    }
    state.counters["chunks"] = static_cast<double>(report.chunks);
  }
  state.counters["cpu_s"] = cpu / static_cast<double>(state.iterations());
  BenchSeconds()["ckptspec_metadata_cpu"] = cpu / static_cast<double>(state.iterations());
  state.counters["metadata_MiB"] = static_cast<double>(bytes) / (1 << 20);
  state.counters["peak_rss_over_metadata"] =
      static_cast<double>(peak_growth) / static_cast<double>(bytes);
  BenchSeconds()["ckptspec_metadata"] = total / static_cast<double>(state.iterations());
}

void BM_PythonPickleLoadAndCheck(benchmark::State& state) {
  const std::string path = EnvOr("CKPTSPEC_DCP_METADATA");
  const std::string python = EnvOr("CKPTSPEC_PYTHON");
  if (path.empty() || python.empty()) {
    state.SkipWithError("CKPTSPEC_DCP_METADATA or CKPTSPEC_PYTHON is not set");
    return;
  }
  const std::string command = python + " " + CKPTSPEC_SOURCE_DIR +
                              "/tools/dcp_metadata_python_check.py " + path + " 2>/dev/null";
  double total = 0;
  for (auto _ : state) {
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    std::string out;
    char buffer[4096];
    size_t n = 0;
    while (pipe && (n = std::fread(buffer, 1, sizeof(buffer), pipe.get())) > 0)
      out.append(buffer, n);
    const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
    if (!j.is_object() || !j.contains("load_s")) {
      state.SkipWithError(("the Python check printed: " + out.substr(0, 200)).c_str());
      return;
    }
    // pickle.load plus the checks, as timed by the script (its imports of torch excluded).
    const double seconds = j["load_s"].get<double>() + j["check_s"].get<double>();
    state.SetIterationTime(seconds);
    total += seconds;
  }
  BenchSeconds()["python_metadata"] = total / static_cast<double>(state.iterations());
}

void BM_CkptspecVerifyData(benchmark::State& state) {
  const std::string dir = EnvOr("CKPTSPEC_DCP_DATA");
  if (dir.empty()) {
    state.SkipWithError("CKPTSPEC_DCP_DATA is not set (bench/run_dcp_verify_bench.sh)");
    return;
  }
  std::unique_ptr<Env> view;
  DetectedCheckpoint detected;
  Status s = Env::Posix()->NewConfinedView(dir, &view);
  if (s.ok()) s = DetectCheckpoint(view.get(), dir, &detected);
  double total = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    DcpVerifyOptions options;
    options.data = true;
    DcpVerifyReport report;
    const auto start = std::chrono::steady_clock::now();
    if (s.ok()) s = VerifyDcpCheckpoint(view.get(), detected, options, &report);
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s.ok() || !report.ok()) {
      state.SkipWithError(s.ok() ? "findings in the bench's checkpoint" : s.ToString().c_str());
      return;
    }
    bytes = report.bytes_read;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  BenchSeconds()["verify_data"] = total / static_cast<double>(state.iterations());
}

void BM_PlainSequentialRead(benchmark::State& state) {
  const std::string dir = EnvOr("CKPTSPEC_DCP_DATA");
  if (dir.empty()) {
    state.SkipWithError("CKPTSPEC_DCP_DATA is not set");
    return;
  }
  std::vector<std::string> names;
  Status s = Env::Posix()->GetChildren(dir, &names);
  std::vector<char> block(size_t{4} << 20);
  double total = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& name : names) {
      const std::string path = JoinPath(dir, name);
      uint64_t size = 0;
      std::unique_ptr<RandomAccessFile> file;
      if (!Env::Posix()->GetFileSize(path, &size).ok() ||
          !Env::Posix()->NewRandomAccessFile(path, &file).ok()) {
        continue;
      }
      for (uint64_t at = 0; at < size;) {
        size_t got = 0;
        s = file->Read(at, block.size(), block.data(), &got);
        if (!s.ok() || got == 0) break;
        benchmark::DoNotOptimize(block.data());
        at += got;
        bytes += got;
      }
    }
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  BenchSeconds()["plain_read"] = total / static_cast<double>(state.iterations());
}

// The hostile index described at the top, read and checked like BM_CkptspecReadAndCheckMetadata.
void BM_LongNameOnManyChunks(benchmark::State& state) {
  const int64_t chunks = state.range(0);
  dcp_test::Tensor tensor{std::string(64 << 10, 'n'), "float32", {chunks + 1}, {}};
  for (int64_t c = 0; c < chunks; ++c) tensor.chunks.push_back({{c}, {2}});
  dcp_test::Index index;
  index.tensors.push_back(std::move(tensor));
  const std::string bytes = dcp_test::EncodeMetadata(index);
  double total = 0;
  uint64_t peak_growth = 0;
  for (auto _ : state) {
    ResetPeak();
    const uint64_t before = ProcStatusBytes("VmRSS");
    const auto start = std::chrono::steady_clock::now();
    DcpMetadata md;
    Status s = md.Read(bytes);
    DcpIndexReport report;
    if (s.ok()) {
      CheckDcpIndex(
          md, [](std::string_view, uint64_t*) { return false; }, &report);
    }
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    peak_growth = ProcStatusBytes("VmHWM") - before;
    if (!s.ok() || report.ok()) {
      state.SkipWithError(s.ok() ? "the hostile index checked clean" : s.ToString().c_str());
      return;
    }
  }
  state.counters["metadata_MiB"] = static_cast<double>(bytes.size()) / (1 << 20);
  state.counters["peak_rss_over_metadata"] =
      static_cast<double>(peak_growth) / static_cast<double>(bytes.size());
  BenchSeconds()["long_name_" + std::to_string(chunks / 1000) + "k"] =
      total / static_cast<double>(state.iterations());
}

BENCHMARK(BM_CkptspecReadAndCheckMetadata)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_PythonPickleLoadAndCheck)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseManualTime();
// Three iterations each: the first brings the files into the page cache for both.
BENCHMARK(BM_PlainSequentialRead)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CkptspecVerifyData)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_LongNameOnManyChunks)
    ->Arg(10000)
    ->Arg(50000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ckptspec::PrintRatio("python_over_ckptspec (metadata read and checked)", "ckptspec_metadata",
                       "python_metadata");
  ckptspec::PrintRatio(
      "python_over_ckptspec_cpu (ckptspec's CPU time, both threads, against Python's one thread)",
      "ckptspec_metadata_cpu", "python_metadata");
  ckptspec::PrintRatio("long_name_50k_over_10k (time; 5 when linear in the chunks)",
                       "long_name_10k", "long_name_50k");
  ckptspec::PrintRatio("data_over_plain_read (verify --data speed / plain read speed)",
                       "verify_data", "plain_read");
  return 0;
}
