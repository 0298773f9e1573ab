// Reference engine I/O throughput: save and load 1 GiB of state across 8 simulated ranks, on the
// local disk (PosixEnv) beside a plain copy of the same bytes (write + fsync, read) measured in
// the same run, and on the in-memory Env beside a plain copy of the bytes into fresh pages (what a
// save into memory that does not reuse memory costs at least).
//
// Files go to a fresh directory (removed at exit) under $CKPTSPEC_BENCH_DIR, else $TMPDIR, else
// /tmp. Reads are from the page cache for both the plain copy and the engine (the files were just
// written). Each benchmark is timed after two untimed runs (kWarmUpRuns: the steady state of a
// training loop that saves every N steps). Report: bytes_per_second of each benchmark, then the
// ratios the figures are judged by (docs/PERFORMANCE.md): the engine's save and load against the
// plain write + fsync and read, its save into MemEnv against the plain copy into fresh pages, and
// the first save against the first plain write (cold memory).
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_ratios.h"
#include "base/mem_env.h"
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

// Untimed runs of each benchmark's body before its timed ones. A save needs pages for the new
// checkpoint while the previous one still exists (it is removed once the new one is complete), so
// its first two runs take memory the process and the page cache have not used before; on a
// virtual machine whose memory the host has not yet backed (a freshly started one), every such
// page costs the host's first touch too, and those runs measure the hypervisor more than the
// save (docs/PERFORMANCE.md has the figures). Two runs reach the steady state a training loop
// that saves every N steps is in; the first run's time is kept as "<name>_first".
constexpr int kWarmUpRuns = 2;

// The benchmark loop over `body`, after kWarmUpRuns untimed runs, its seconds per iteration
// recorded under `name`.
template <typename Body>
void TimedLoop(benchmark::State& state, const char* name, Body body) {
  for (int run = 0; run < kWarmUpRuns; ++run) {
    const auto start = std::chrono::steady_clock::now();
    body();
    if (run == 0) {
      BenchSeconds()[std::string(name) + "_first"] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    body();
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  BenchSeconds()[name] = total / static_cast<double>(state.iterations());
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
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

// Writes each rank's bytes to one file <dir>/rank_<r> with write(2) and fdatasync, then fsyncs
// the directory.
void PlainWriteFiles(benchmark::State& state, const std::string& dir) {
  for (int64_t r = 0; r < kRanks; ++r) {
    const std::string path = dir + "/rank_" + std::to_string(r);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      state.SkipWithError("open failed");
      return;
    }
    for (const ShardedTensor& t : State()[r].tensors) {
      if (::write(fd, t.data.data(), t.data.size()) != static_cast<ssize_t>(t.data.size())) {
        state.SkipWithError("write failed");
      }
    }
    ::fdatasync(fd);
    ::close(fd);
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    state.SkipWithError("open of the directory failed");
    return;
  }
  ::fsync(dfd);
  ::close(dfd);
}

// The baseline: the same files rewritten in place every time (truncated, written, fsynced). The
// pages the truncation frees are taken again at once.
void BM_PlainWriteFsync(benchmark::State& state) {
  const std::string dir = BenchDir() + "/plain";
  if (const Status s = CreateDirs(Env::Posix(), dir); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  TimedLoop(state, "plain_write", [&] { PlainWriteFiles(state, dir); });
}

// The baseline in a checkpoint's order: every run writes new files into a directory of its own
// and removes the previous run's directory only once they are durable, as the engine keeps its
// previous checkpoint until the new one is complete. The new files' pages are taken while the
// previous ones are still held, so they come from memory freed a save earlier.
void BM_PlainWriteFsyncNewFiles(benchmark::State& state) {
  int64_t run = 0;
  TimedLoop(state, "plain_write_new_files", [&] {
    const std::string dir = BenchDir() + "/plain_new_" + std::to_string(run);
    if (const Status s = CreateDirs(Env::Posix(), dir); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    PlainWriteFiles(state, dir);
    if (run > 0) {
      const Status s =
          Env::Posix()->RemoveTree(BenchDir() + "/plain_new_" + std::to_string(run - 1));
      if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    }
    ++run;
  });
}

void BM_PlainRead(benchmark::State& state) {
  const std::string dir = BenchDir() + "/plain";
  // Buffers allocated and touched before timing, as the engine's load templates are.
  std::vector<std::vector<uint8_t>> buffers(kRanks * kTensorsPerRank,
                                            std::vector<uint8_t>(kRowsPerRank * kCols * 4, 1));
  TimedLoop(state, "plain_read", [&] {
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
  });
}

// The floor of a save into memory: the same bytes copied into fresh pages (mmap), one mapping
// per tensor, the copy before unmapped once the new one is made. What any save into memory that
// is not reusing memory costs: the copy and the kernel's first touch of every page.
void BM_PlainCopyToFreshMemory(benchmark::State& state) {
  std::vector<std::pair<void*, size_t>> previous;
  auto unmap = [](std::vector<std::pair<void*, size_t>>* maps) {
    for (const auto& [at, size] : *maps) ::munmap(at, size);
    maps->clear();
  };
  TimedLoop(state, "copy_to_fresh_memory", [&] {
    std::vector<std::pair<void*, size_t>> maps;
    for (const ShardedStateDict& d : State()) {
      for (const ShardedTensor& t : d.tensors) {
        void* at = ::mmap(nullptr, t.data.size(), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (at == MAP_FAILED) {
          state.SkipWithError("mmap failed");
          return;
        }
        std::memcpy(at, t.data.data(), t.data.size());
        maps.emplace_back(at, t.data.size());
      }
    }
    unmap(&previous);
    previous = std::move(maps);
  });
  unmap(&previous);
}

void RunSave(benchmark::State& state, Env* env, const std::string& root, const char* name) {
  ReferenceOptions options;
  options.env = env;
  options.root = root;
  options.keep_last = 1;
  ReferenceEngine engine(std::move(options));
  int64_t iteration = 1;
  TimedLoop(state, name, [&] {
    const Status s = engine.Save(iteration++, SaveInput(SharedState(), {}), SaveOptions());
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  });
}

void RunLoad(benchmark::State& state, Env* env, const std::string& root, const char* name) {
  ReferenceOptions options;
  options.env = env;
  options.root = root;
  ReferenceEngine engine(std::move(options));
  // Like a training loop restoring into its own buffers: the templates go in by move and come
  // back filled; the next load reuses them.
  std::vector<ShardedStateDict> buffers = Templates();
  TimedLoop(state, name, [&] {
    LoadRequest request;
    request.templates = std::move(buffers);
    LoadResult result;
    const Status s = engine.Load(std::move(request), &result);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(result.state.data());
    buffers = std::move(result.state);
  });
}

void BM_ReferenceSavePosix(benchmark::State& state) {
  RunSave(state, Env::Posix(), BenchDir() + "/ckpt", "save_posix");
}
void BM_ReferenceLoadPosix(benchmark::State& state) {
  RunLoad(state, Env::Posix(), BenchDir() + "/ckpt", "load_posix");
}

MemEnv& Mem() {
  static MemEnv* env = new MemEnv();
  return *env;
}
void BM_ReferenceSaveMemEnv(benchmark::State& state) {
  RunSave(state, &Mem(), "/ckpt", "save_memenv");
}
void BM_ReferenceLoadMemEnv(benchmark::State& state) {
  RunLoad(state, &Mem(), "/ckpt", "load_memenv");
}

BENCHMARK(BM_PlainWriteFsync)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_PlainWriteFsyncNewFiles)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReferenceSavePosix)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_PlainRead)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReferenceLoadPosix)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_PlainCopyToFreshMemory)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReferenceSaveMemEnv)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_ReferenceLoadMemEnv)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace ckptspec

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  ckptspec::State();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ckptspec::PrintRatio("save_over_plain_write_fsync (ext4)", "save_posix", "plain_write");
  ckptspec::PrintRatio("save_over_plain_write_fsync_new_files (ext4)", "save_posix",
                       "plain_write_new_files");
  ckptspec::PrintRatio("save_over_plain_write_fsync, first runs (ext4)", "save_posix_first",
                       "plain_write_first");
  ckptspec::PrintRatio("load_over_plain_read (page cache)", "load_posix", "plain_read");
  ckptspec::PrintRatio("memenv_save_over_copy_to_fresh_memory", "save_memenv",
                       "copy_to_fresh_memory");
  (void)ckptspec::Env::Posix()->RemoveTree(ckptspec::BenchDir());
  return 0;
}
