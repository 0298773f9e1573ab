// Megatron's RerunStateMachine (core/rerun_state_machine.py), modelled exactly but
// deterministically: results are values, and what Megatron reads from the environment (the node
// and device a rank runs on, error injection) are inputs. docs/SEMANTICS.md §6, docs/DESIGN.md §4.3.
//
// Transitions of ShouldRunForwardBackward (flags OR-reduced over ranks: pass the reduced flags;
// a single-rank model uses its own):
//   NOT_RUNNING_YET -> INITIAL_RUN, true. Unless DISABLED: apply a pending data-iterator checkpoint,
//     snapshot the RNG and data position (the in-memory saved_state), clear the four flags.
//     current_iteration += 1 in every mode.
//   INITIAL_RUN -> NOT_RUNNING_YET, false, when DISABLED or nobody set rerun_requested; else ->
//     RERUNNING_IN_PLACE, true, after restoring the snapshot and rewinding the data.
//   RERUNNING_IN_PLACE: REPORT_DETERMINISM_STATS -> NOT_RUNNING_YET. Else continue_requested ->
//     NOT_RUNNING_YET; checkpoint_requested -> WILL_RERUN_FROM_CHECKPOINT (restore + rewind);
//     otherwise stays (restore + rewind). Returns false.
//   WILL_RERUN_FROM_CHECKPOINT -> RERUNNING_FROM_CHECKPOINT, true (a pending data-iterator
//     checkpoint is applied first, so the rerun consumes the same samples).
//   RERUNNING_FROM_CHECKPOINT: restart_again_requested -> RERUNNING_AGAIN_FROM_CHECKPOINT;
//     continue_requested -> NOT_RUNNING_YET; otherwise stays. Returns false.
//   RERUNNING_AGAIN_FROM_CHECKPOINT: FailedPrecondition (the job must have exited).
//
// ValidateResult flags (VALIDATE_RESULTS): on the initial run (after the first iteration
// completed) a rejected result records the call and the result and sets rerun_requested. On the
// first rerun, at the failed call: a mismatch (comparison > tolerance) sets continue if non-fatal;
// a match sets checkpoint (fatal) or continue and records the suspicious node/device. On the
// second rerun: same node and device sets restart_again; otherwise continue if non-fatal.
// REPORT_DETERMINISM_STATS: the initial run always requests a rerun and the rerun records the
// difference. DISABLED: a rejected fatal result is an error (FailedPrecondition), else nothing.
//
// ShouldCheckpointAndExit -> (checkpoint, exit, exit code); (F, F, 0) when DISABLED or REPORT:
//   RERUNNING_IN_PLACE (F, T, 17)  WILL_RERUN_FROM_CHECKPOINT (T, T, 16)
//   RERUNNING_FROM_CHECKPOINT (F, T, 17)  RERUNNING_AGAIN_FROM_CHECKPOINT (F, T, 16)  else (F, F, 0)
//
// Checkpoint payload (the fix of B04 and the rule of B06):
//  - The payload has THE SAME STRUCTURE IN EVERY STATE: mode, state, current_iteration and the
//    "sharded" dict with every field, holding sentinel values in steady state (it is never None).
//  - A persisted state never needs data that was not persisted. The in-memory snapshot
//    (saved_state) is not persisted, so only states that do not need it may be checkpointed:
//    NOT_RUNNING_YET and WILL_RERUN_FROM_CHECKPOINT (whose next transition restores nothing).
//    RERUNNING_IN_PLACE is never checkpointed (B06: Megatron saved it with exit code 17 and the
//    resume subscripted None); CheckpointPayload refuses the other states, and PayloadFromJson
//    rejects a payload that holds one.
// Loading: a no-op in DISABLED mode and under finetune; otherwise requires unchanged world size
// (the module's and, in a heterogeneous job, the job's), TP, PP and DP. Under a change a sentinel
// (NOT_RUNNING_YET) payload is skipped, but a pending rerun cannot be honoured and is an error.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/data_iterator.h"
#include "model/rng_streams.h"
#include "model/status.h"

namespace ckptspec {

enum class RerunMode { kDisabled, kValidateResults, kReportDeterminismStats };
enum class RerunState : int {
  kNotRunningYet = 0,
  kInitialRun = 1,
  kRerunningInPlace = 2,
  kWillRerunFromCheckpoint = 3,
  kRerunningFromCheckpoint = 4,
  kRerunningAgainFromCheckpoint = 5,
};

inline constexpr int kExitCodeFailedOnResultValidation = 17;
inline constexpr int kExitCodeResumeToDisambiguate = 16;

// "disabled", "validate_results", "report_determinism_stats".
const char* RerunModeName(RerunMode m);
bool ParseRerunMode(const std::string& name, RerunMode* out);
// "NOT_RUNNING_YET", ...
const char* RerunStateName(RerunState s);

// A validate_result call site: (message, rank) and its sequence number within the pass.
struct ValidationCall {
  std::string message;
  int rank = 0;
  int sequence = 0;
  bool operator==(const ValidationCall& o) const {
    return message == o.message && rank == o.rank && sequence == o.sequence;
  }
  bool operator<(const ValidationCall& o) const;
};

// The rank-level persisted fields (Megatron's "sharded" dict). Defaults are the sentinel.
struct RerunShardedState {
  bool rerun_requested = false;
  bool checkpoint_requested = false;
  bool restart_again_requested = false;
  bool continue_requested = false;
  int64_t error_injector_injected = 0;  // the error injector's state: errors injected so far
  std::optional<ValidationCall> failed_validation_call;
  std::optional<double> initial_result;
  std::optional<std::string> suspicious_node;
  std::optional<int> suspicious_device;
  std::optional<DataIteratorState> data_iterator_checkpoint;
  std::map<std::string, int64_t> large_value_counts;
  std::map<std::string, double> max_values;
  bool operator==(const RerunShardedState& o) const;
};

// The in-memory snapshot taken when an iteration starts (not persisted).
struct RerunSavedState {
  RankRngState rng;
  DataIteratorState data;
};

struct RerunStateMachine {
  RerunMode mode = RerunMode::kValidateResults;
  RerunState state = RerunState::kNotRunningYet;
  int64_t current_iteration = 0;
  RerunShardedState sharded;
  // Not persisted:
  bool first_iteration_complete = false;
  std::optional<RerunSavedState> saved_state;
  std::map<std::pair<std::string, int>, int> validation_counts;
  std::map<ValidationCall, double> saved_results;    // REPORT mode
  std::map<std::string, std::vector<double>> stats;  // REPORT mode: message -> diffs
};

RerunStateMachine NewRerunStateMachine(RerunMode mode, int64_t current_iteration);

// What the step consumes: the rank's RNG and data position (restored / rewound on a rerun).
struct RerunContext {
  RankRngState* rng = nullptr;
  DataIteratorState* data = nullptr;
};

// One call of should_run_forward_backward. *run: whether to run forward/backward.
Status ShouldRunForwardBackward(RerunStateMachine* m, RerunContext ctx, bool* run);

// The environment of one validate_result call.
struct ValidationInput {
  double result = 0.0;
  bool rejected = false;      // rejection_func(result)
  bool inject_error = false;  // the error injector fires (counts as a rejection)
  double tolerance = 0.0;
  bool fatal = true;
  std::string node;  // where this rank runs now
  int device = 0;
};

// Relative difference used by default: 0 when equal (or both NaN), +inf when one is NaN, else
// |a - b| / max(|a|, |b|).
double CompareResults(double initial, double result);

Status ValidateResult(RerunStateMachine* m, const std::string& message, int rank,
                      const ValidationInput& in);

struct CheckpointAndExit {
  bool checkpoint = false;
  bool exit = false;
  int exit_code = 0;
  bool operator==(const CheckpointAndExit& o) const {
    return checkpoint == o.checkpoint && exit == o.exit && exit_code == o.exit_code;
  }
};
CheckpointAndExit ShouldCheckpointAndExit(RerunStateMachine* m);

// True where the state can be persisted (see the rule above).
bool IsPersistableRerunState(RerunState s);

// The payload: {"mode", "state" (int), "current_iteration", "sharded": {every field}}. Results
// (initial_result, max_values) are JSON numbers, or "nan" / "inf" / "-inf" when not finite (JSON
// has no literal for them: a NaN loss, the usual fault, must survive the text round trip).
// FailedPrecondition for a state that is not persistable (naming it).
Status CheckpointPayload(const RerunStateMachine& m, nlohmann::json* out);

// Parses a payload. Corruption naming the field's path from "rerun_state_machine_state" (the
// object's name: "rerun_state_machine_state.sharded.initial_result: expected a number, \"nan\",
// \"inf\" or \"-inf\", got true") for a missing or mistyped field, an unknown mode or state, or
// a state that is not persistable.
Status PayloadFromJson(const nlohmann::json& j, RerunStateMachine* out);

struct RerunLoadContext {
  bool finetune = false;
  int saved_world = 1, saved_tp = 1, saved_pp = 1, saved_dp = 1;
  int world = 1, tp = 1, pp = 1, dp = 1;
};

// Loads a payload into `m` (Megatron's load_state_dict with the checkpointing.py guards):
// no-op when m->mode is DISABLED or under finetune; skipped for a sentinel payload under a layout
// change; FailedPrecondition for a pending rerun under a layout change; otherwise sets mode,
// state, current_iteration and the sharded fields (all or nothing).
Status LoadRerunPayload(const nlohmann::json& payload, const RerunLoadContext& ctx,
                        RerunStateMachine* m);

}  // namespace ckptspec
