// Reference engine I/O throughput: save and load 1 GiB of state across 8 simulated ranks, on the
// local disk (PosixEnv) beside a plain copy of the same bytes (write + fsync, read) measured in
// the same run, and on the in-memory Env.
//
// Files go to a fresh directory (removed at exit) under $CKPTSPEC_BENCH_DIR, else $TMPDIR, else
// /tmp. Reads
// are from the page cache for both the plain copy and the engine (the files were just written).
// Report: bytes_per_second of each benchmark; the goal is save >= 50% of PlainWriteFsync and
// load >= 50% of PlainRead.
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "targets/env/mem_env.h"
#include "targets/reference/reference_engine.h"

namespace ckptspec {
namespace {

constexpr int64_t kRanks = 8;
constexpr int64_t kTensorsPerRank = 16;
constexpr int64_t kRowsPerRank = 512;
constexpr int64_t kCols = 4096;  // fp32: 512 x 4096 x 4 B = 8 MiB per chunk
constexpr int64_t kTotalBytes = kRanks * kTensorsPerRank * kRowsPerRank * kCols * 4;  // 1 GiB

std::vector<ShardedStateDict> MakeState() {
  std::vector<ShardedStateDict> dicts(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) {
    for (int64_t i = 0; i < kTensorsPerRank; ++i) {
      ShardedTensor t;
      t.spec.key = "decoder.layers." + std::to_string(i) + ".weight";
      t.spec.dtype = DType::kFloat32;
      t.spec.global_shape = {kRowsPerRank * kRanks, kCols};
      t.spec.global_offset = {kRowsPerRank * r, 0};
      t.spec.local_shape = {kRowsPerRank, kCols};
      t.spec.axis_fragmentations = {kRanks, 1};
      t.data.resize(kRowsPerRank * kCols * 4);
      for (size_t b = 0; b < t.data.size(); b += 64)
        t.data[b] = static_cast<uint8_t>(b ^ (r * 31 + i));
      dicts[r].tensors.push_back(std::move(t));
    }
  }
  return dicts;
}

// The state, shared as a training loop shares its own dicts with a save (SaveInput): a save
// takes it without a copy.
const std::shared_ptr<const std::vector<ShardedStateDict>>& SharedState() {
  static const auto* state = new std::shared_ptr<const std::vector<ShardedStateDict>>(
      std::make_shared<const std::vector<ShardedStateDict>>(MakeState()));
  return *state;
}
const std::vector<ShardedStateDict>& State() { return *SharedState(); }

std::vector<ShardedStateDict>& Templates() {
  static auto* templates = [] {
    auto* t = new std::vector<ShardedStateDict>();
    for (const auto& d : State()) t->push_back(TemplateOf(d));
    return t;
  }();
  return *templates;
}

const std::string& BenchDir() {
  static const std::string* dir = [] {
    const char* base = std::getenv("CKPTSPEC_BENCH_DIR");
    if (base == nullptr) base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/ckptspec_io_bench_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    return new std::string(tmpl);
  }();
  return *dir;
}

// The baseline: each rank's bytes written to one file with write(2), fsynced, directory fsynced.
void BM_PlainWriteFsync(benchmark::State& state) {
  const std::string dir = BenchDir() + "/plain";
  if (const Status s = CreateDirs(Env::Posix(), dir); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  for (auto _ : state) {
    for (int64_t r = 0; r < kRanks; ++r) {
      const std::string path = dir + "/rank_" + std::to_string(r);
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) state.SkipWithError("open failed");
      for (const ShardedTensor& t : State()[r].tensors) {
        if (::write(fd, t.data.data(), t.data.size()) != static_cast<ssize_t>(t.data.size())) {
          state.SkipWithError("write failed");
        }
      }
      ::fdatasync(fd);
      ::close(fd);
    }
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    ::fsync(dfd);
    ::close(dfd);
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void BM_PlainRead(benchmark::State& state) {
  const std::string dir = BenchDir() + "/plain";
  // Buffers allocated and touched before timing, as the engine's load templates are.
  std::vector<std::vector<uint8_t>> buffers(kRanks * kTensorsPerRank,
                                            std::vector<uint8_t>(kRowsPerRank * kCols * 4, 1));
  for (auto _ : state) {
    for (int64_t r = 0; r < kRanks; ++r) {
      const int fd = ::open((dir + "/rank_" + std::to_string(r)).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) state.SkipWithError("open failed (run PlainWriteFsync first)");
      for (int64_t i = 0; i < kTensorsPerRank; ++i) {
        auto& b = buffers[r * kTensorsPerRank + i];
        if (::read(fd, b.data(), b.size()) != static_cast<ssize_t>(b.size())) {
          state.SkipWithError("short read");
        }
      }
      ::close(fd);
    }
    benchmark::DoNotOptimize(buffers.data());
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void RunSave(benchmark::State& state, Env* env, const std::string& root) {
  ReferenceOptions options;
  options.env = env;
  options.root = root;
  options.keep_last = 1;
  ReferenceEngine engine(std::move(options));
  int64_t iteration = 1;
  for (auto _ : state) {
    const Status s = engine.Save(iteration++, SaveInput(SharedState(), {}), SaveOptions());
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void RunLoad(benchmark::State& state, Env* env, const std::string& root) {
  ReferenceOptions options;
  options.env = env;
  options.root = root;
  ReferenceEngine engine(std::move(options));
  // Like a training loop restoring into its own buffers: the templates go in by move and come
  // back filled; the next load reuses them.
  std::vector<ShardedStateDict> buffers = Templates();
  for (auto _ : state) {
    LoadRequest request;
    request.templates = std::move(buffers);
    LoadResult result;
    const Status s = engine.Load(std::move(request), &result);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(result.state.data());
    buffers = std::move(result.state);
  }
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void BM_ReferenceSavePosix(benchmark::State& state) {
  RunSave(state, Env::Posix(), BenchDir() + "/ckpt");
}
void BM_ReferenceLoadPosix(benchmark::State& state) {
  RunLoad(state, Env::Posix(), BenchDir() + "/ckpt");
}

MemEnv& Mem() {
  static MemEnv* env = new MemEnv();
  return *env;
}
void BM_ReferenceSaveMemEnv(benchmark::State& state) { RunSave(state, &Mem(), "/ckpt"); }
void BM_ReferenceLoadMemEnv(benchmark::State& state) { RunLoad(state, &Mem(), "/ckpt"); }

BENCHMARK(BM_PlainWriteFsync)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReferenceSavePosix)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_PlainRead)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReferenceLoadPosix)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReferenceSaveMemEnv)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReferenceLoadMemEnv)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  ckptspec::State();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  (void)ckptspec::Env::Posix()->RemoveTree(ckptspec::BenchDir());
  return 0;
}
