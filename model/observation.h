// What a framework adapter observes of its training state (docs/PROTOCOL.md, "Framework
// adapters", observe): per rank, digests of every copy of every parameter, the param groups, the
// scheduler, RNG, data position and rerun state machine. ckptspec judges observations with the
// load rules (model/observation_rules.h); it never sees the values themselves.
//
// Contracts:
//  - RankObservationFromJson reads one rank's observation from an untrusted reply and never
//    throws; every refusal is an InvalidArgument naming the JSON path (a digest that is not 16
//    hex digits, a group without "params", an unknown member, a parameter named twice in one
//    copy). RankObservationToJson writes what it reads.
//  - Digests of one copy add over ranks (observation_digest.h): GlobalDigests sums them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_fields.h"
#include "model/param_groups.h"
#include "model/scheduler.h"
#include "model/status.h"

namespace ckptspec {

// The copies of a parameter an observation holds digests of.
enum class Copy : int { kModel = 0, kMain, kOffload, kExpAvg, kExpAvgSq };
inline constexpr Copy kCopies[] = {Copy::kModel, Copy::kMain, Copy::kOffload, Copy::kExpAvg,
                                   Copy::kExpAvgSq};
inline constexpr size_t kNumCopies = 5;
// "model", "main", "offload", "exp_avg", "exp_avg_sq": the members of the observation.
const char* CopyName(Copy copy);

// Parameter name -> digest of the elements the rank holds (or, summed, of the whole parameter).
using Digests = std::map<std::string, uint64_t>;

struct GroupObservation {
  std::string optimizer;            // which (sub-)optimizer the group belongs to
  std::vector<std::string> params;  // the group's parameters this rank holds
  double lr = 0, weight_decay = 0, beta1 = 0, beta2 = 0, eps = 0;
  std::optional<int64_t> step;  // the group's step counter, where kept
  // The identity fields as the group's dict holds them: a field it lacks is absent (Has false);
  // max_lr / min_lr nullopt for None. declares_* are not observed (false).
  ParamGroupIdentity identity;
};

struct RerunObservation {
  std::string mode;
  std::string state;
  int64_t current_iteration = 0;
  uint64_t digest = 0;  // of the rank-level fields it would persist (Megatron's "sharded" dict)
  bool operator==(const RerunObservation& o) const {
    return mode == o.mode && state == o.state && current_iteration == o.current_iteration &&
           digest == o.digest;
  }
};

struct RankObservation {
  int64_t iteration = 0;
  std::array<Digests, kNumCopies> copies;
  std::map<std::string, int64_t> param_steps;  // per-parameter optimizer steps, where kept
  std::vector<GroupObservation> groups;
  // The scheduler's saved fields and num_steps (init_lr and the WSD fields are not observed and
  // stay at their defaults); nullopt without a scheduler.
  std::optional<SchedulerState> scheduler;
  uint64_t rng = 0;
  int64_t consumed_samples = 0;
  RerunObservation rerun;

  const Digests& copy(Copy c) const { return copies[static_cast<int>(c)]; }
  Digests& copy(Copy c) { return copies[static_cast<int>(c)]; }
};

// Every rank's observation, by global rank.
using Observation = std::vector<RankObservation>;

Status RankObservationFromJson(const JsonField& f, RankObservation* out);
nlohmann::json RankObservationToJson(const RankObservation& observation);

// Per parameter, the sum over ranks of copy `c`'s digests.
Digests GlobalDigests(const Observation& observation, Copy c);

// The scheduler fields an observation holds, compared; "" when equal, else the first difference
// ("max_lr 0.001 vs 0.0003").
std::string SchedulerDifference(const SchedulerState& a, const SchedulerState& b);

// The first difference between two groups' fields, params left out ("lr 0.001 vs 0.0005",
// "lr_mult present vs absent"); "" when equal.
std::string GroupFieldsDifference(const GroupObservation& a, const GroupObservation& b);

// The first difference between two observations of the same layout, rank by rank and member by
// member, in words ("rank 1: exp_avg of decoupled.weight: 5f0c... vs 0a11..."); "" when equal.
std::string FirstObservationDifference(const Observation& a, const Observation& b);

}  // namespace ckptspec
