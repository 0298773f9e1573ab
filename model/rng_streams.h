// Per-rank RNG state, seeded as Megatron seeds it (training/initialize.py _set_random_seed and
// core/tensor_parallel/random.py model_parallel_cuda_manual_seed), with counter-based streams in
// place of the Mersenne Twister / Philox states.
//
// Seeds for the rank at coordinates (tp, pp, dp, ep, etp), base seed s:
//   s' = s + 100 * pp  (+ 10 * dp with data_parallel_random_init)
//   "random", "numpy", "torch" (CPU) and "cuda" (the default CUDA generator):  s'
//   tracker "data-parallel-rng":    s'
//   tracker "model-parallel-rng":   s' + 2718 + tp
//   tracker "expert-parallel-rng":  s' + 1024 + 100 * ep + etp
// So ranks that differ only in DP (and CP) share every stream unless data_parallel_random_init;
// TP ranks differ in the model-parallel tracker, EP / expert-TP ranks in the expert tracker, PP
// stages in everything.
//
// A stream is (seed, counter); Draw() returns ContentBits(seed, KeyHash(stream name), counter)
// and increments the counter. The state of a rank is the set of named streams; it serializes to
// {"random": {"seed", "counter"}, "numpy", "torch", "cuda", "rng_tracker_states": {name: ...}}.
// Megatron saves it as ShardedObject "rng_state" at offset (pp, tp) of (pp_size, tp_size), so it is
// restorable only where the rank's (tp, pp) coordinates still exist (load_semantics.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "model/layout.h"
#include "model/status.h"

namespace ckptspec {

// The coordinates RNG seeding reads (layout.h's RankCoords): "(tp=0, pp=1, dp=0, cp=0, ep=0, etp=0)".
std::string DescribeCoords(const RankCoords& c);

struct RngStream {
  uint64_t seed = 0;
  uint64_t counter = 0;
  bool operator==(const RngStream& o) const { return seed == o.seed && counter == o.counter; }
  bool operator!=(const RngStream& o) const { return !(*this == o); }
};

inline constexpr const char* kCpuStreams[] = {"random", "numpy", "torch", "cuda"};
inline constexpr const char* kDataParallelTracker = "data-parallel-rng";
inline constexpr const char* kModelParallelTracker = "model-parallel-rng";
inline constexpr const char* kExpertParallelTracker = "expert-parallel-rng";

struct RankRngState {
  std::map<std::string, RngStream> streams;   // random, numpy, torch, cuda
  std::map<std::string, RngStream> trackers;  // the CUDA RNG tracker's named states
  bool operator==(const RankRngState& o) const {
    return streams == o.streams && trackers == o.trackers;
  }
  bool operator!=(const RankRngState& o) const { return !(*this == o); }
};

RankRngState InitialRankRng(uint64_t seed, const RankCoords& coords,
                            bool data_parallel_random_init);

// Draws from stream `name` (a stream or a tracker). Returns NotFound for an unknown name.
Status Draw(RankRngState* state, const std::string& name, uint64_t* out);

// The value a stream would draw next, without advancing it.
uint64_t PeekDraw(const std::string& name, const RngStream& s);

// Advances every stream of the rank by `draws` (what one iteration's dropout etc. consume).
void AdvanceAll(RankRngState* state, uint64_t draws);

nlohmann::json RankRngStateToJson(const RankRngState& s);
// Missing streams or mistyped fields: Corruption naming the field's path from "rng_state"
// ("rng_state.cuda.counter: expected a non-negative integer, got -1").
Status RankRngStateFromJson(const nlohmann::json& j, RankRngState* out);

}  // namespace ckptspec
