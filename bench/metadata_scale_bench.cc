// What reading a large metadata.json costs: `verify` and the engine's metadata read on sound
// checkpoints that are nearly all metadata (many tensors of many tiny chunks), at 5, 50 and 200 MB
// of metadata.json. Counters: metadata_MB, and peak_rss_per_metadata (the growth of the process's
// peak resident memory during the call, over the metadata's size; the goal is below 3 plus a fixed
// buffer).
//
//   build/bench/metadata_scale_bench
//   build/bench/metadata_scale_bench --write-checkpoint DIR TENSORS CHUNKS_PER_TENSOR
//     writes such a checkpoint for measuring the command itself, e.g. 1000 x 1000 (about 200 MB):
//     /usr/bin/time -v build/cli/ckptspec verify DIR
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "base/env.h"
#include "targets/reference/format.h"
#include "targets/reference/metadata_heavy_checkpoint.h"
#include "targets/reference/reference_engine.h"
#include "targets/reference/verify.h"

namespace ckptspec {
namespace {

// The process's resident and peak resident memory (VmRSS, VmHWM) in bytes.
uint64_t ProcStatusBytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, std::string(field).size(), field) == 0) {
      return std::strtoull(line.c_str() + std::string(field).size() + 1, nullptr, 10) * 1024;
    }
  }
  return 0;
}

// Returns freed heap memory to the system and sets the peak to the current resident size (Linux:
// clear_refs 5), so that the next peak is the call's own (memory an earlier run left resident in
// the allocator would otherwise hide it).
void ResetPeak() {
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

// A fresh metadata-heavy checkpoint of `chunks` chunks in all (100 tensors), on the real disk.
std::string MakeCheckpoint(int64_t chunks, uint64_t* metadata_bytes) {
  char dir_template[] = "/tmp/ckptspec_metadata_bench_XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return "";
  MetadataHeavyShape shape;
  shape.tensors = 100;
  shape.chunks_per_tensor = chunks / shape.tensors;
  if (!WriteMetadataHeavyCheckpoint(Env::Posix(), dir, shape, metadata_bytes).ok()) return "";
  return dir;
}

void Report(benchmark::State& state, uint64_t metadata_bytes, uint64_t peak_growth) {
  state.counters["metadata_MB"] = static_cast<double>(metadata_bytes) / 1e6;
  state.counters["peak_rss_per_metadata"] =
      static_cast<double>(peak_growth) / static_cast<double>(metadata_bytes);
}

void BM_VerifyMetadataHeavy(benchmark::State& state) {
  uint64_t metadata_bytes = 0;
  const std::string root = MakeCheckpoint(state.range(0), &metadata_bytes);
  if (root.empty()) return state.SkipWithError("could not write the checkpoint");
  uint64_t peak_growth = 0;
  for (auto _ : state) {
    ResetPeak();
    const uint64_t before = ProcStatusBytes("VmRSS:");
    VerifyReport report;
    const Status s = VerifyCheckpoint(Env::Posix(), root, /*all_iterations=*/false, &report);
    peak_growth = std::max(peak_growth, ProcStatusBytes("VmHWM:") - before);
    if (!s.ok() || !report.ok()) state.SkipWithError("the checkpoint does not verify");
  }
  Report(state, metadata_bytes, peak_growth);
  if (!Env::Posix()->RemoveTree(root).ok())
    state.SkipWithError("cannot remove the benchmark's files");
}
BENCHMARK(BM_VerifyMetadataHeavy)
    ->Arg(25000)
    ->Arg(250000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

void BM_ReadMetadataHeavy(benchmark::State& state) {
  uint64_t metadata_bytes = 0;
  const std::string root = MakeCheckpoint(state.range(0), &metadata_bytes);
  if (root.empty()) return state.SkipWithError("could not write the checkpoint");
  ReferenceOptions options;
  options.env = Env::Posix();
  options.root = root;
  ReferenceEngine engine(std::move(options));
  uint64_t peak_growth = 0;
  for (auto _ : state) {
    ResetPeak();
    const uint64_t before = ProcStatusBytes("VmRSS:");
    CheckpointMetadata metadata;
    const Status s = engine.ReadMetadata(1, &metadata);
    peak_growth = std::max(peak_growth, ProcStatusBytes("VmHWM:") - before);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  Report(state, metadata_bytes, peak_growth);
  if (!Env::Posix()->RemoveTree(root).ok())
    state.SkipWithError("cannot remove the benchmark's files");
}
BENCHMARK(BM_ReadMetadataHeavy)
    ->Arg(25000)
    ->Arg(250000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--write-checkpoint") {
    ckptspec::MetadataHeavyShape shape;
    shape.tensors = std::atoll(argv[3]);
    shape.chunks_per_tensor = std::atoll(argv[4]);
    uint64_t bytes = 0;
    const ckptspec::Status s =
        ckptspec::WriteMetadataHeavyCheckpoint(ckptspec::Env::Posix(), argv[2], shape, &bytes);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("%s: metadata.json of %llu bytes\n", argv[2],
                static_cast<unsigned long long>(bytes));
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
