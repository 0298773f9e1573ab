#include "model/rerun_state_machine.h"

#include <cmath>
#include <limits>
#include <tuple>

#include "model/json_fields.h"
#include "model/same_bits.h"

namespace ckptspec {

const char* RerunModeName(RerunMode m) {
  switch (m) {
    case RerunMode::kDisabled:
      return "disabled";
    case RerunMode::kValidateResults:
      return "validate_results";
    case RerunMode::kReportDeterminismStats:
      return "report_determinism_stats";
  }
  return "?";
}

bool ParseRerunMode(const std::string& name, RerunMode* out) {
  for (RerunMode m :
       {RerunMode::kDisabled, RerunMode::kValidateResults, RerunMode::kReportDeterminismStats}) {
    if (name == RerunModeName(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

const char* RerunStateName(RerunState s) {
  switch (s) {
    case RerunState::kNotRunningYet:
      return "NOT_RUNNING_YET";
    case RerunState::kInitialRun:
      return "INITIAL_RUN";
    case RerunState::kRerunningInPlace:
      return "RERUNNING_IN_PLACE";
    case RerunState::kWillRerunFromCheckpoint:
      return "WILL_RERUN_FROM_CHECKPOINT";
    case RerunState::kRerunningFromCheckpoint:
      return "RERUNNING_FROM_CHECKPOINT";
    case RerunState::kRerunningAgainFromCheckpoint:
      return "RERUNNING_AGAIN_FROM_CHECKPOINT";
  }
  return "?";
}

bool ValidationCall::operator<(const ValidationCall& o) const {
  return std::tie(message, rank, sequence) < std::tie(o.message, o.rank, o.sequence);
}

namespace {

// Results compare by bits (model/same_bits.h), as FirstDifference compares floats: a NaN result
// (the usual fault) is equal to itself, so a state is equal to its own copy.
using ckptspec::SameBits;
bool SameBits(const std::map<std::string, double>& a, const std::map<std::string, double>& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
    if (i->first != j->first || !SameBits(i->second, j->second)) return false;
  }
  return true;
}

// JSON has no NaN or infinity (nlohmann writes them as null), yet a NaN result is the usual
// fault: non-finite results travel as the strings "nan", "inf" and "-inf".
nlohmann::json ResultToJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

bool ParseNonFinite(const std::string& s, double* out) {
  if (s == "nan")
    *out = std::numeric_limits<double>::quiet_NaN();
  else if (s == "inf")
    *out = std::numeric_limits<double>::infinity();
  else if (s == "-inf")
    *out = -std::numeric_limits<double>::infinity();
  else
    return false;
  return true;
}

}  // namespace

bool RerunShardedState::operator==(const RerunShardedState& o) const {
  return rerun_requested == o.rerun_requested && checkpoint_requested == o.checkpoint_requested &&
         restart_again_requested == o.restart_again_requested &&
         continue_requested == o.continue_requested &&
         error_injector_injected == o.error_injector_injected &&
         failed_validation_call == o.failed_validation_call &&
         SameBits(initial_result, o.initial_result) && suspicious_node == o.suspicious_node &&
         suspicious_device == o.suspicious_device &&
         data_iterator_checkpoint == o.data_iterator_checkpoint &&
         large_value_counts == o.large_value_counts && SameBits(max_values, o.max_values);
}

RerunStateMachine NewRerunStateMachine(RerunMode mode, int64_t current_iteration) {
  RerunStateMachine m;
  m.mode = mode;
  m.current_iteration = current_iteration;
  return m;
}

namespace {

Status Restore(RerunStateMachine* m, RerunContext ctx) {
  if (!m->saved_state) {
    return Status::FailedPrecondition(std::string("rerun state machine in state ") +
                                      RerunStateName(m->state) +
                                      " must restore an RNG snapshot that was never taken");
  }
  if (ctx.rng) *ctx.rng = m->saved_state->rng;
  if (ctx.data) *ctx.data = m->saved_state->data;  // rewind
  return Status::OK();
}

void ApplyDataCheckpoint(RerunStateMachine* m, RerunContext ctx) {
  if (m->sharded.data_iterator_checkpoint) {
    if (ctx.data) *ctx.data = *m->sharded.data_iterator_checkpoint;
    m->sharded.data_iterator_checkpoint.reset();
  }
}

}  // namespace

Status ShouldRunForwardBackward(RerunStateMachine* m, RerunContext ctx, bool* run) {
  m->validation_counts.clear();
  RerunShardedState& f = m->sharded;
  switch (m->state) {
    case RerunState::kNotRunningYet:
      if (m->mode != RerunMode::kDisabled) {
        ApplyDataCheckpoint(m, ctx);
        RerunSavedState snap;
        if (ctx.rng) snap.rng = *ctx.rng;
        if (ctx.data) snap.data = *ctx.data;
        m->saved_state = snap;
        f.rerun_requested = f.checkpoint_requested = false;
        f.restart_again_requested = f.continue_requested = false;
      }
      m->current_iteration += 1;
      m->state = RerunState::kInitialRun;
      *run = true;
      return Status::OK();
    case RerunState::kInitialRun:
      if (m->mode == RerunMode::kDisabled || !f.rerun_requested) {
        m->state = RerunState::kNotRunningYet;
        *run = false;
        return Status::OK();
      }
      CKPTSPEC_RETURN_IF_ERROR(Restore(m, ctx));
      m->state = RerunState::kRerunningInPlace;
      *run = true;
      return Status::OK();
    case RerunState::kRerunningInPlace:
      *run = false;
      if (m->mode == RerunMode::kReportDeterminismStats) {
        m->state = RerunState::kNotRunningYet;
        m->saved_results.clear();
        return Status::OK();
      }
      if (f.continue_requested) {
        m->state = RerunState::kNotRunningYet;
        return Status::OK();
      }
      if (f.checkpoint_requested) {
        m->state = RerunState::kWillRerunFromCheckpoint;
        // The data position to rerun from travels in the payload.
        if (m->saved_state) f.data_iterator_checkpoint = m->saved_state->data;
      }
      return Restore(m, ctx);
    case RerunState::kWillRerunFromCheckpoint:
      ApplyDataCheckpoint(m, ctx);
      m->state = RerunState::kRerunningFromCheckpoint;
      *run = true;
      return Status::OK();
    case RerunState::kRerunningFromCheckpoint:
      *run = false;
      if (f.restart_again_requested) {
        m->state = RerunState::kRerunningAgainFromCheckpoint;
      } else if (f.continue_requested) {
        m->state = RerunState::kNotRunningYet;
      }
      return Status::OK();
    case RerunState::kRerunningAgainFromCheckpoint:
      break;
  }
  *run = false;
  return Status::FailedPrecondition(
      "should_run_forward_backward called in RERUNNING_AGAIN_FROM_CHECKPOINT: the job must exit "
      "with code 16 and resume from the checkpoint");
}

double CompareResults(double a, double b) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if ((na && nb) || a == b) return 0.0;
  if (na || nb) return std::numeric_limits<double>::infinity();
  return std::fabs(a - b) / std::max(std::fabs(a), std::fabs(b));
}

Status ValidateResult(RerunStateMachine* m, const std::string& message, int rank,
                      const ValidationInput& in) {
  if (m->mode == RerunMode::kDisabled) {
    if (in.rejected && in.fatal) {
      return Status::FailedPrecondition("rank " + std::to_string(rank) + ", iteration " +
                                        std::to_string(m->current_iteration) +
                                        ": unexpected result (message='" + message + "')");
    }
    return Status::OK();
  }
  if (m->state == RerunState::kNotRunningYet) {
    return Status::FailedPrecondition(
        "validate_result called outside of the forward-backward pass (state NOT_RUNNING_YET)");
  }
  const int sequence = ++m->validation_counts[{message, rank}];
  const ValidationCall call{message, rank, sequence};
  RerunShardedState& f = m->sharded;

  if (m->mode == RerunMode::kReportDeterminismStats) {
    if (m->state == RerunState::kInitialRun) {
      f.rerun_requested = true;
      m->saved_results[call] = in.result;
    } else if (m->state == RerunState::kRerunningInPlace) {
      auto it = m->saved_results.find(call);
      if (it == m->saved_results.end()) {
        return Status::FailedPrecondition("rerun of '" + message +
                                          "' has no result from the initial run");
      }
      m->stats[message].push_back(CompareResults(it->second, in.result));
    }
    return Status::OK();
  }

  if (m->state == RerunState::kInitialRun && !f.rerun_requested) {
    if (!m->first_iteration_complete) return Status::OK();
    bool rejected = in.rejected;
    if (in.inject_error) {
      ++f.error_injector_injected;
      rejected = true;
    }
    if (rejected) {
      f.failed_validation_call = call;
      f.initial_result = in.result;
      f.rerun_requested = true;
    }
    return Status::OK();
  }
  const bool rerun =
      m->state == RerunState::kRerunningInPlace || m->state == RerunState::kRerunningFromCheckpoint;
  if (!rerun || !f.failed_validation_call || !(call == *f.failed_validation_call)) {
    return Status::OK();
  }
  const double comparison = CompareResults(f.initial_result ? *f.initial_result : 0.0, in.result);
  if (m->state == RerunState::kRerunningInPlace) {
    if (comparison > in.tolerance) {
      if (!in.fatal) f.continue_requested = true;  // transient error
    } else {
      if (in.fatal) {
        f.checkpoint_requested = true;
      } else {
        f.continue_requested = true;
      }
      f.suspicious_node = in.node;
      f.suspicious_device = in.device;
    }
    return Status::OK();
  }
  // Second rerun, from the checkpoint.
  if (f.suspicious_node && f.suspicious_device && *f.suspicious_node == in.node &&
      *f.suspicious_device == in.device) {
    f.restart_again_requested = true;
  } else if (!in.fatal) {
    f.continue_requested = true;
  }
  return Status::OK();
}

CheckpointAndExit ShouldCheckpointAndExit(RerunStateMachine* m) {
  m->first_iteration_complete = true;
  if (m->mode != RerunMode::kValidateResults) return {false, false, 0};
  switch (m->state) {
    case RerunState::kRerunningInPlace:
      return {false, true, kExitCodeFailedOnResultValidation};
    case RerunState::kWillRerunFromCheckpoint:
      return {true, true, kExitCodeResumeToDisambiguate};
    case RerunState::kRerunningFromCheckpoint:
      return {false, true, kExitCodeFailedOnResultValidation};
    case RerunState::kRerunningAgainFromCheckpoint:
      return {false, true, kExitCodeResumeToDisambiguate};
    default:
      return {false, false, 0};
  }
}

bool IsPersistableRerunState(RerunState s) {
  return s == RerunState::kNotRunningYet || s == RerunState::kWillRerunFromCheckpoint;
}

Status CheckpointPayload(const RerunStateMachine& m, nlohmann::json* out) {
  if (!IsPersistableRerunState(m.state)) {
    return Status::FailedPrecondition(std::string("rerun state ") + RerunStateName(m.state) +
                                      " cannot be checkpointed: resuming it would need the "
                                      "in-memory RNG snapshot, which is not persisted");
  }
  const RerunShardedState& f = m.sharded;
  nlohmann::json s;
  s["rerun_requested"] = f.rerun_requested;
  s["checkpoint_requested"] = f.checkpoint_requested;
  s["restart_again_requested"] = f.restart_again_requested;
  s["continue_requested"] = f.continue_requested;
  s["error_injector_checkpoint"] = {{"injected", f.error_injector_injected}};
  s["failed_validation_call"] =
      f.failed_validation_call ? nlohmann::json{{"message", f.failed_validation_call->message},
                                                {"rank", f.failed_validation_call->rank},
                                                {"sequence", f.failed_validation_call->sequence}}
                               : nlohmann::json(nullptr);
  s["initial_result"] =
      f.initial_result ? ResultToJson(*f.initial_result) : nlohmann::json(nullptr);
  s["suspicious_node"] =
      f.suspicious_node ? nlohmann::json(*f.suspicious_node) : nlohmann::json(nullptr);
  s["suspicious_device"] =
      f.suspicious_device ? nlohmann::json(*f.suspicious_device) : nlohmann::json(nullptr);
  s["data_iterator_checkpoints"] =
      f.data_iterator_checkpoint
          ? nlohmann::json::array({DataIteratorStateToJson(*f.data_iterator_checkpoint)})
          : nlohmann::json(nullptr);
  s["large_value_counts"] = f.large_value_counts;
  nlohmann::json max_values = nlohmann::json::object();
  for (const auto& [message, value] : f.max_values) max_values[message] = ResultToJson(value);
  s["max_values"] = max_values;
  *out = nlohmann::json{{"mode", RerunModeName(m.mode)},
                        {"state", static_cast<int>(m.state)},
                        {"current_iteration", m.current_iteration},
                        {"sharded", s}};
  return Status::OK();
}

namespace {

// A result as ResultToJson writes it.
Status ReadResult(const JsonField& f, double* out) {
  if (f.present() && f.value().is_number()) return f.GetDouble(out);
  if (f.present() && f.value().is_string()) return f.GetEnum(ParseNonFinite, out);
  return f.Expected("a number, \"nan\", \"inf\" or \"-inf\"");
}

// A member that must be there and may be null: read(value) unless it is null.
template <typename Read>
Status ReadUnlessNull(const JsonField& f, Read read) {
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectPresent());
  return f.is_null() ? Status::OK() : read(f);
}

Status ReadSharded(const JsonField& s, RerunShardedState* out) {
  RerunShardedState& f = *out;
  for (const auto& [name, flag] : {std::pair{"rerun_requested", &f.rerun_requested},
                                   std::pair{"checkpoint_requested", &f.checkpoint_requested},
                                   std::pair{"restart_again_requested", &f.restart_again_requested},
                                   std::pair{"continue_requested", &f.continue_requested}}) {
    CKPTSPEC_RETURN_IF_ERROR(s.Member(name).GetBool(flag));
  }
  const JsonField injector = s.Member("error_injector_checkpoint");
  CKPTSPEC_RETURN_IF_ERROR(injector.Member("injected").GetInt64(&f.error_injector_injected));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadUnlessNull(s.Member("failed_validation_call"), [&f](const JsonField& v) {
        ValidationCall call;
        CKPTSPEC_RETURN_IF_ERROR(v.Member("message").GetString(&call.message));
        CKPTSPEC_RETURN_IF_ERROR(v.Member("rank").GetInt(&call.rank));
        CKPTSPEC_RETURN_IF_ERROR(v.Member("sequence").GetInt(&call.sequence));
        f.failed_validation_call = std::move(call);
        return Status::OK();
      }));
  CKPTSPEC_RETURN_IF_ERROR(ReadUnlessNull(s.Member("initial_result"), [&f](const JsonField& v) {
    return ReadResult(v, &f.initial_result.emplace());
  }));
  CKPTSPEC_RETURN_IF_ERROR(ReadUnlessNull(s.Member("suspicious_node"), [&f](const JsonField& v) {
    return v.GetString(&f.suspicious_node.emplace());
  }));
  CKPTSPEC_RETURN_IF_ERROR(ReadUnlessNull(s.Member("suspicious_device"), [&f](const JsonField& v) {
    return v.GetInt(&f.suspicious_device.emplace());
  }));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadUnlessNull(s.Member("data_iterator_checkpoints"), [&f](const JsonField& v) {
        CKPTSPEC_RETURN_IF_ERROR(v.ExpectArrayOfSize(1));
        const JsonField only = v.Element(0);
        return DataIteratorStateFromJson(only, &f.data_iterator_checkpoint.emplace());
      }));
  CKPTSPEC_RETURN_IF_ERROR(s.Member("large_value_counts")
                               .ForEachMember([&f](const std::string& name, const JsonField& v) {
                                 return v.GetInt64(&f.large_value_counts[name]);
                               }));
  return s.Member("max_values").ForEachMember([&f](const std::string& name, const JsonField& v) {
    return ReadResult(v, &f.max_values[name]);
  });
}

Status ReadPayload(const JsonField& f, RerunStateMachine* out) {
  RerunStateMachine m;
  CKPTSPEC_RETURN_IF_ERROR(f.Member("mode").GetEnum(ParseRerunMode, &m.mode));
  const JsonField state = f.Member("state");
  int64_t state_number = 0;
  CKPTSPEC_RETURN_IF_ERROR(state.GetInt64(
      0, static_cast<int64_t>(RerunState::kRerunningAgainFromCheckpoint), &state_number));
  m.state = static_cast<RerunState>(state_number);
  if (!IsPersistableRerunState(m.state)) {
    return state.Error(std::string("holds ") + RerunStateName(m.state) +
                       ", which needs data that is never persisted");
  }
  CKPTSPEC_RETURN_IF_ERROR(f.Member("current_iteration").GetInt64(&m.current_iteration));
  const JsonField sharded = f.Member("sharded");
  CKPTSPEC_RETURN_IF_ERROR(sharded.ExpectObject());
  CKPTSPEC_RETURN_IF_ERROR(ReadSharded(sharded, &m.sharded));
  *out = std::move(m);
  return Status::OK();
}

}  // namespace

Status PayloadFromJson(const nlohmann::json& j, RerunStateMachine* out) {
  return AsCorruption(ReadPayload(JsonField(j, "rerun_state_machine_state"), out));
}

Status LoadRerunPayload(const nlohmann::json& payload, const RerunLoadContext& ctx,
                        RerunStateMachine* m) {
  if (m->mode == RerunMode::kDisabled || ctx.finetune) return Status::OK();
  RerunStateMachine loaded;
  CKPTSPEC_RETURN_IF_ERROR(PayloadFromJson(payload, &loaded));
  const bool same_layout = ctx.saved_world == ctx.world && ctx.saved_tp == ctx.tp &&
                           ctx.saved_pp == ctx.pp && ctx.saved_dp == ctx.dp;
  if (!same_layout) {
    if (loaded.state == RerunState::kNotRunningYet) return Status::OK();
    return Status::FailedPrecondition(
        std::string("the checkpoint holds a pending rerun (state ") + RerunStateName(loaded.state) +
        ") saved with world/TP/PP/DP " + std::to_string(ctx.saved_world) + "/" +
        std::to_string(ctx.saved_tp) + "/" + std::to_string(ctx.saved_pp) + "/" +
        std::to_string(ctx.saved_dp) + "; it cannot be rerun under " + std::to_string(ctx.world) +
        "/" + std::to_string(ctx.tp) + "/" + std::to_string(ctx.pp) + "/" + std::to_string(ctx.dp));
  }
  m->mode = loaded.mode;
  m->state = loaded.state;
  m->current_iteration = loaded.current_iteration;
  m->sharded = loaded.sharded;
  return Status::OK();
}

}  // namespace ckptspec
