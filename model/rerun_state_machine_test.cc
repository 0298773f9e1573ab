#include "model/rerun_state_machine.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <set>

namespace ckptspec {
namespace {

struct Env {
  RankRngState rng = InitialRankRng(5, RankCoords{}, false);
  DataIteratorState data;
  RerunContext ctx() { return RerunContext{&rng, &data}; }
};

bool Step(RerunStateMachine* m, Env* env) {
  bool run = false;
  EXPECT_TRUE(ShouldRunForwardBackward(m, env->ctx(), &run).ok());
  return run;
}

// One fault-free iteration: NOT_RUNNING_YET -> INITIAL_RUN -> NOT_RUNNING_YET.
void CleanIteration(RerunStateMachine* m, Env* env) {
  ASSERT_TRUE(Step(m, env));
  ValidationInput ok;
  ok.result = 1.0;
  ASSERT_TRUE(ValidateResult(m, "loss", 0, ok).ok());
  AdvanceAll(&env->rng, 1);
  env->data.consumed_samples += 8;
  ASSERT_FALSE(Step(m, env));
  EXPECT_EQ(ShouldCheckpointAndExit(m), (CheckpointAndExit{false, false, 0}));
}

ValidationInput Result(double r, bool rejected, bool fatal, const std::string& node) {
  ValidationInput in;
  in.result = r;
  in.rejected = rejected;
  in.fatal = fatal;
  in.node = node;
  return in;
}

TEST(RerunStateMachine, SteadyStateCyclesAndCountsIterations) {
  for (RerunMode mode : {RerunMode::kDisabled, RerunMode::kValidateResults}) {
    RerunStateMachine m = NewRerunStateMachine(mode, 10);
    Env env;
    for (int i = 0; i < 3; ++i) CleanIteration(&m, &env);
    EXPECT_EQ(m.state, RerunState::kNotRunningYet);
    EXPECT_EQ(m.current_iteration, 13);
    EXPECT_EQ(m.saved_state.has_value(), mode != RerunMode::kDisabled);
  }
}

TEST(RerunStateMachine, DisabledModeRaisesOnlyOnFatalRejection) {
  RerunStateMachine m = NewRerunStateMachine(RerunMode::kDisabled, 0);
  Env env;
  ASSERT_TRUE(Step(&m, &env));
  EXPECT_TRUE(ValidateResult(&m, "loss", 0, Result(NAN, true, false, "n")).ok());
  const Status s = ValidateResult(&m, "loss", 0, Result(NAN, true, true, "n"));
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("message='loss'"), std::string::npos);
}

TEST(RerunStateMachine, NoValidationBeforeTheFirstIterationCompletes) {
  RerunStateMachine m = NewRerunStateMachine(RerunMode::kValidateResults, 0);
  Env env;
  ASSERT_TRUE(Step(&m, &env));
  ASSERT_TRUE(ValidateResult(&m, "loss", 0, Result(NAN, true, true, "n")).ok());
  EXPECT_FALSE(m.sharded.rerun_requested);
  ValidationInput outside;
  m.state = RerunState::kNotRunningYet;
  EXPECT_EQ(ValidateResult(&m, "loss", 0, outside).code(), Status::Code::kFailedPrecondition);
}

// A rejected result reruns in place with the RNG restored and the data rewound.
RerunStateMachine ToRerunInPlace(Env* env) {
  RerunStateMachine m = NewRerunStateMachine(RerunMode::kValidateResults, 0);
  CleanIteration(&m, env);
  const RankRngState rng_at_start = env->rng;
  const DataIteratorState data_at_start = env->data;
  EXPECT_TRUE(Step(&m, env));
  EXPECT_TRUE(ValidateResult(&m, "loss", 0, Result(NAN, true, true, "node-a")).ok());
  EXPECT_TRUE(m.sharded.rerun_requested);
  AdvanceAll(&env->rng, 3);
  env->data.consumed_samples += 8;
  EXPECT_TRUE(Step(&m, env));  // rerun
  EXPECT_EQ(m.state, RerunState::kRerunningInPlace);
  EXPECT_EQ(env->rng, rng_at_start);
  EXPECT_EQ(env->data, data_at_start);
  return m;
}

TEST(RerunStateMachine, TransientNonFatalErrorContinues) {
  Env env;
  RerunStateMachine m = ToRerunInPlace(&env);
  ASSERT_TRUE(ValidateResult(&m, "loss", 0, Result(2.0, false, false, "node-a")).ok());
  EXPECT_TRUE(m.sharded.continue_requested);
  EXPECT_FALSE(Step(&m, &env));
  EXPECT_EQ(m.state, RerunState::kNotRunningYet);
}

TEST(RerunStateMachine, TransientFatalErrorExits17WithoutCheckpoint) {  // B06
  Env env;
  RerunStateMachine m = ToRerunInPlace(&env);
  ASSERT_TRUE(ValidateResult(&m, "loss", 0, Result(2.0, false, true, "node-a")).ok());
  EXPECT_FALSE(Step(&m, &env));
  EXPECT_EQ(m.state, RerunState::kRerunningInPlace);
  EXPECT_EQ(ShouldCheckpointAndExit(&m), (CheckpointAndExit{false, true, 17}));
  nlohmann::json payload;
  const Status s = CheckpointPayload(m, &payload);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("RERUNNING_IN_PLACE"), std::string::npos);
}

TEST(RerunStateMachine, ReproducibleFatalErrorCheckpointsAndReruns) {
  Env env;
  RerunStateMachine m = ToRerunInPlace(&env);
  const DataIteratorState step_start = env.data;
  ASSERT_TRUE(ValidateResult(&m, "loss", 0, Result(NAN, true, true, "node-a")).ok());
  EXPECT_TRUE(m.sharded.checkpoint_requested);
  EXPECT_FALSE(Step(&m, &env));
  EXPECT_EQ(m.state, RerunState::kWillRerunFromCheckpoint);
  EXPECT_EQ(ShouldCheckpointAndExit(&m), (CheckpointAndExit{true, true, 16}));
  nlohmann::json payload;
  ASSERT_TRUE(CheckpointPayload(m, &payload).ok());

  for (const std::string node : {"node-a", "node-b"}) {
    for (bool fatal : {true, false}) {
      SCOPED_TRACE(node + (fatal ? " fatal" : " non-fatal"));
      RerunStateMachine resumed = NewRerunStateMachine(RerunMode::kValidateResults, 0);
      ASSERT_TRUE(LoadRerunPayload(payload, RerunLoadContext{}, &resumed).ok());
      Env fresh;
      fresh.data.consumed_samples = 999;  // the rerun must start from the payload's position
      ASSERT_TRUE(Step(&resumed, &fresh));
      EXPECT_EQ(resumed.state, RerunState::kRerunningFromCheckpoint);
      EXPECT_EQ(fresh.data, step_start);
      ASSERT_TRUE(ValidateResult(&resumed, "loss", 0, Result(NAN, true, fatal, node)).ok());
      EXPECT_FALSE(Step(&resumed, &fresh));
      if (node == "node-a") {
        EXPECT_EQ(resumed.state, RerunState::kRerunningAgainFromCheckpoint);
        EXPECT_EQ(ShouldCheckpointAndExit(&resumed), (CheckpointAndExit{false, true, 16}));
        bool run;
        EXPECT_FALSE(ShouldRunForwardBackward(&resumed, fresh.ctx(), &run).ok());
      } else if (fatal) {
        EXPECT_EQ(resumed.state, RerunState::kRerunningFromCheckpoint);
        EXPECT_EQ(ShouldCheckpointAndExit(&resumed), (CheckpointAndExit{false, true, 17}));
      } else {
        EXPECT_EQ(resumed.state, RerunState::kNotRunningYet);
      }
    }
  }
}

TEST(RerunStateMachine, ReportModeRerunsEveryIterationAndRecordsStats) {
  RerunStateMachine m = NewRerunStateMachine(RerunMode::kReportDeterminismStats, 0);
  Env env;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Step(&m, &env));
    ASSERT_TRUE(ValidateResult(&m, "loss", 0, Result(1.0, false, true, "n")).ok());
    ASSERT_TRUE(Step(&m, &env));
    EXPECT_EQ(m.state, RerunState::kRerunningInPlace);
    ASSERT_TRUE(ValidateResult(&m, "loss", 0, Result(1.5, false, true, "n")).ok());
    ASSERT_FALSE(Step(&m, &env));
    EXPECT_EQ(m.state, RerunState::kNotRunningYet);
    EXPECT_EQ(ShouldCheckpointAndExit(&m), (CheckpointAndExit{false, false, 0}));
  }
  ASSERT_EQ(m.stats["loss"].size(), 2u);
  EXPECT_DOUBLE_EQ(m.stats["loss"][0], 0.5 / 1.5);
}

std::set<std::string> Keys(const nlohmann::json& j) {
  std::set<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
  return k;
}

// Random walks over the machine: whatever state is reached, the payload either has exactly the
// sentinel's structure (persistable states) or is refused (B04, B06).
RC_GTEST_PROP(RerunStateMachine, PayloadStructureIsTheSameInEveryState, ()) {
  RerunStateMachine m = NewRerunStateMachine(
      *rc::gen::element(RerunMode::kValidateResults, RerunMode::kReportDeterminismStats), 0);
  nlohmann::json sentinel;
  RC_ASSERT(CheckpointPayload(m, &sentinel).ok());
  Env env;
  const int steps = *rc::gen::inRange(1, 30);
  for (int i = 0; i < steps && m.state != RerunState::kRerunningAgainFromCheckpoint; ++i) {
    bool run = false;
    RC_ASSERT(ShouldRunForwardBackward(&m, env.ctx(), &run).ok());
    if (run) {
      const bool rejected = *rc::gen::arbitrary<bool>();
      const double result = *rc::gen::element(1.0, 2.0);
      RC_ASSERT(ValidateResult(&m, "loss", 0,
                               Result(result, rejected, *rc::gen::arbitrary<bool>(),
                                      *rc::gen::element<std::string>("a", "b")))
                    .ok());
    } else {
      ShouldCheckpointAndExit(&m);
    }
    RC_LOG() << "step " << i << ": " << RerunStateName(m.state) << "\n";
    nlohmann::json payload;
    const Status s = CheckpointPayload(m, &payload);
    RC_ASSERT(s.ok() == IsPersistableRerunState(m.state));
    if (!s.ok()) continue;
    RC_ASSERT(Keys(payload) == Keys(sentinel));
    RC_ASSERT(Keys(payload["sharded"]) == Keys(sentinel["sharded"]));
    RerunStateMachine back;
    RC_ASSERT(PayloadFromJson(payload, &back).ok());
    RC_ASSERT(back.state == m.state);
    RC_ASSERT(back.sharded == m.sharded);
    RC_ASSERT(back.current_iteration == m.current_iteration);
  }
}

TEST(RerunStateMachine, MalformedPayloadsAreNamedErrors) {
  nlohmann::json good;
  ASSERT_TRUE(CheckpointPayload(NewRerunStateMachine(RerunMode::kValidateResults, 3), &good).ok());
  RerunStateMachine out;
  ASSERT_TRUE(PayloadFromJson(good, &out).ok());
  for (const char* field : {"mode", "state", "current_iteration", "sharded"}) {
    nlohmann::json j = good;
    j.erase(field);
    const Status s = PayloadFromJson(j, &out);
    EXPECT_EQ(s.code(), Status::Code::kCorruption);
    EXPECT_NE(s.message().find(field), std::string::npos) << s.ToString();
  }
  for (const auto& kv : good["sharded"].items()) {
    nlohmann::json j = good;
    j["sharded"].erase(kv.key());
    const Status s = PayloadFromJson(j, &out);
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << kv.key();
    EXPECT_NE(s.message().find(kv.key()), std::string::npos) << s.ToString();
  }
  nlohmann::json j = good;
  j["state"] = 2;  // B06: a state that needs the unpersisted RNG snapshot
  EXPECT_NE(PayloadFromJson(j, &out).message().find("RERUNNING_IN_PLACE"), std::string::npos);
  j = good;
  j["mode"] = "report_stats";  // Megatron's CLI spelling does not parse as a RerunMode
  EXPECT_EQ(PayloadFromJson(j, &out).code(), Status::Code::kCorruption);
  j = good;
  j["sharded"]["rerun_requested"] = 1;
  EXPECT_EQ(PayloadFromJson(j, &out).code(), Status::Code::kCorruption);
  EXPECT_EQ(PayloadFromJson(j, &out).message(),
            "rerun_state_machine_state.sharded.rerun_requested: expected a boolean, got 1");
  j = good;
  j["sharded"]["max_values"] = {{"loss", "nan"}, {"grad", "huge"}};
  EXPECT_EQ(PayloadFromJson(j, &out).message(),
            "rerun_state_machine_state.sharded.max_values.grad: unknown value \"huge\"");
  j["sharded"]["max_values"] = {{"loss", "nan"}, {"grad", true}};
  EXPECT_EQ(PayloadFromJson(j, &out).message(),
            "rerun_state_machine_state.sharded.max_values.grad: expected a number, \"nan\", "
            "\"inf\" or \"-inf\", got true");
  j = good;
  j["sharded"]["data_iterator_checkpoints"] = nlohmann::json::array();
  EXPECT_EQ(PayloadFromJson(j, &out).message(),
            "rerun_state_machine_state.sharded.data_iterator_checkpoints: expected an array of 1 "
            "element, got []");
  j["sharded"]["data_iterator_checkpoints"] = {{{"consumed_samples", 1}, {"epoch", 0}}};
  EXPECT_EQ(PayloadFromJson(j, &out).message(),
            "rerun_state_machine_state.sharded.data_iterator_checkpoints[0]: missing required "
            "member \"seed\"");
  j = good;
  j["state"] = 6;
  EXPECT_EQ(PayloadFromJson(j, &out).message(),
            "rerun_state_machine_state.state: expected an integer in [0, 5], got 6");
}

TEST(RerunStateMachine, LoadRules) {
  RerunStateMachine pending = NewRerunStateMachine(RerunMode::kValidateResults, 7);
  pending.state = RerunState::kWillRerunFromCheckpoint;
  pending.sharded.checkpoint_requested = true;
  nlohmann::json payload, sentinel;
  ASSERT_TRUE(CheckpointPayload(pending, &payload).ok());
  ASSERT_TRUE(
      CheckpointPayload(NewRerunStateMachine(RerunMode::kValidateResults, 7), &sentinel).ok());

  RerunStateMachine disabled = NewRerunStateMachine(RerunMode::kDisabled, 0);
  ASSERT_TRUE(LoadRerunPayload(payload, RerunLoadContext{}, &disabled).ok());
  EXPECT_EQ(disabled.state, RerunState::kNotRunningYet);
  EXPECT_EQ(disabled.mode, RerunMode::kDisabled);

  RerunLoadContext finetune;
  finetune.finetune = true;
  RerunStateMachine m = NewRerunStateMachine(RerunMode::kValidateResults, 0);
  ASSERT_TRUE(LoadRerunPayload(payload, finetune, &m).ok());
  EXPECT_EQ(m.state, RerunState::kNotRunningYet);
  EXPECT_EQ(m.current_iteration, 0);

  RerunLoadContext dp_change;
  dp_change.saved_world = dp_change.saved_dp = 2;
  EXPECT_TRUE(LoadRerunPayload(sentinel, dp_change, &m).ok());
  EXPECT_EQ(m.current_iteration, 0);
  const Status s = LoadRerunPayload(payload, dp_change, &m);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("WILL_RERUN_FROM_CHECKPOINT"), std::string::npos);

  ASSERT_TRUE(LoadRerunPayload(payload, RerunLoadContext{}, &m).ok());
  EXPECT_EQ(m.state, RerunState::kWillRerunFromCheckpoint);
  EXPECT_EQ(m.current_iteration, 7);
  EXPECT_TRUE(m.sharded.checkpoint_requested);
}

// A NaN result (the usual fault) is recorded as the initial result; a state must still equal its
// own copy (results compare by bits), or no comparison of fault states could ever succeed.
TEST(RerunStateMachine, NaNResultsCompareByBits) {
  RerunShardedState a;
  a.initial_result = std::numeric_limits<double>::quiet_NaN();
  a.max_values["loss"] = std::numeric_limits<double>::quiet_NaN();
  const RerunShardedState copy = a;
  EXPECT_TRUE(a == copy);
  RerunShardedState b = a;
  b.initial_result = 0.0;
  EXPECT_FALSE(a == b);
  b = a;
  b.initial_result.reset();
  EXPECT_FALSE(a == b);
  b = a;
  b.max_values["loss"] = 1.0;
  EXPECT_FALSE(a == b);
}

// A NaN result is the usual fault; its payload must survive the text form a checkpoint stores
// (JSON has no NaN: it would come back as null, i.e. no result at all).
TEST(RerunStateMachine, NonFiniteResultsSurviveThePayloadText) {
  RerunStateMachine m = NewRerunStateMachine(RerunMode::kValidateResults, 4);
  m.state = RerunState::kWillRerunFromCheckpoint;
  m.sharded.initial_result = std::numeric_limits<double>::quiet_NaN();
  m.sharded.max_values["loss"] = std::numeric_limits<double>::infinity();
  m.sharded.max_values["grad"] = -std::numeric_limits<double>::infinity();
  m.sharded.max_values["finite"] = 2.5;
  nlohmann::json payload;
  ASSERT_TRUE(CheckpointPayload(m, &payload).ok());
  RerunStateMachine back;
  const Status s = PayloadFromJson(nlohmann::json::parse(payload.dump()), &back);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(back.sharded.initial_result.has_value());
  EXPECT_TRUE(std::isnan(*back.sharded.initial_result));
  EXPECT_TRUE(back.sharded == m.sharded);

  payload["sharded"]["initial_result"] = "NaN?";
  EXPECT_FALSE(PayloadFromJson(payload, &back).ok());
}

}  // namespace
}  // namespace ckptspec
