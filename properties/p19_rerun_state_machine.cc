// P19, rerun state machine (model/rerun_state_machine.h, docs/DESIGN.md §4.3): a trained run meets a
// fault -- a result that ValidateResult rejects (or the error injector fires), fatal or not,
// reproducible on the rerun or not -- and the machine is driven through Megatron's loop.
//  - Transitions and exit codes follow the spec: after the in-place rerun a reproducible fatal
//    fault is WILL_RERUN_FROM_CHECKPOINT with (checkpoint, exit 16); a transient fatal one stays
//    RERUNNING_IN_PLACE with (no checkpoint, exit 17); a non-fatal one continues.
//  - A save is accepted exactly in the persistable states (NOT_RUNNING_YET and
//    WILL_RERUN_FROM_CHECKPOINT); in every other visited state (INITIAL_RUN, RERUNNING_IN_PLACE,
//    RERUNNING_FROM_CHECKPOINT, ...) the target refuses it (B06).
//  - The checkpoint ShouldCheckpointAndExit asks for has the same structure as a steady-state
//    save (DiffStructure of the framework's dicts is empty: P6's half of B04) and resumes, in a
//    fresh process, to the spec's state (mode, state, iteration, payload); under a layout change
//    it is refused exactly where the spec refuses.
//  - A resumed run never needs data that was not persisted: driving the resumed machine through
//    the rerun from checkpoint gives the same transitions, exit codes and state as driving the
//    spec's Restarted() state -- and as the process that never exited.
// Catches: B06 (RERUNNING_IN_PLACE persisted; the resume needs the unsaved snapshot), B04 (the
// rerun object only present in fault saves).
#include <memory>
#include <sstream>

#include "generators/run_gen.h"
#include "model/describe.h"
#include "model/validate.h"
#include "properties/property.h"
#include "properties/property_util.h"

namespace ckptspec {
namespace {

// One fault: the result of the initial run and of each rerun at the "loss" call.
struct Fault {
  bool injected = false;  // the error injector fires rather than the rejection function
  bool fatal = true;
  bool reproducible = true;      // the in-place rerun gives the same (rejected) result
  bool same_node_again = false;  // the rerun from checkpoint runs on the suspicious node
  bool fatal_again = true;       // the result of the rerun from checkpoint is fatal
};

std::string Describe(const Fault& f) {
  std::ostringstream os;
  os << (f.injected ? "injected error" : "rejected result") << ", "
     << (f.fatal ? "fatal" : "non-fatal") << ", " << (f.reproducible ? "reproducible" : "transient")
     << " in place; rerun from checkpoint on "
     << (f.same_node_again ? "the suspicious node" : "another node") << ", "
     << (f.fatal_again ? "fatal" : "non-fatal");
  return os.str();
}

GlobalSignature Signature(const std::vector<ShardedStateDict>& dicts) {
  GlobalSignature g;
  for (size_t r = 0; r < dicts.size(); ++r)
    g.ranks.push_back(SignatureOf(static_cast<int64_t>(r), dicts[r]));
  return g;
}

// Megatron's loop over one run, as TrainStep drives it: the state's machine holds rank 0's RNG
// snapshot; every other rank's machine snapshots and restores its own RNG at the same moments.
struct Driver {
  TrainingState* s;
  std::vector<RankRngState> at_start;  // every rank's RNG when the machine took its snapshot
  bool Step() {
    const RerunState before = s->rerun.state;
    bool run = false;
    const Status st = ShouldRunForwardBackward(&s->rerun, RerunContext{&s->rng[0], &s->data}, &run);
    if (!st.ok())
      RC_FAIL("ShouldRunForwardBackward in state " + std::string(RerunStateName(before)) + ": " +
              st.ToString());
    if (before == RerunState::kNotRunningYet && s->rerun.state == RerunState::kInitialRun) {
      at_start = s->rng;
    } else if (!at_start.empty() && s->rng[0] == at_start[0]) {
      for (size_t r = 1; r < s->rng.size(); ++r) s->rng[r] = at_start[r];  // restored with rank 0
    }
    return run;
  }
  // A forward/backward pass: consumes RNG and data, then validates `result`.
  void Pass(double result, bool rejected, bool injected, bool fatal, const std::string& node) {
    for (RankRngState& r : s->rng) AdvanceAll(&r, 1);
    AdvanceDataIterator(s->config.data, &s->data);
    ValidationInput in;
    in.result = result;
    in.rejected = rejected;
    in.inject_error = injected;
    in.fatal = fatal;
    in.node = node;
    const Status st = ValidateResult(&s->rerun, "loss", 0, in);
    if (!st.ok()) RC_FAIL("ValidateResult: " + st.ToString());
  }
};

std::string MachineText(const RerunStateMachine& m) {
  return std::string(RerunModeName(m.mode)) + " " + RerunStateName(m.state) + " at iteration " +
         std::to_string(m.current_iteration);
}

// Draws a fault: injected or rejected, fatal (mostly), reproducible (mostly), the rerun's node.
Fault DrawFault() {
  Fault fault;
  fault.injected = *rc::gen::arbitrary<bool>();
  fault.fatal = *rc::gen::inRange(0, 4) != 0;  // the checkpoint path needs both: bias toward it
  fault.reproducible = *rc::gen::inRange(0, 4) != 0;
  fault.same_node_again = *rc::gen::arbitrary<bool>();
  fault.fatal_again = *rc::gen::arbitrary<bool>();
  return fault;
}

// Saves on a scratch target in the states the machine visits: only persistable ones may save.
class SaveRefusals {
 public:
  // Saves `run`'s `states` (whose front holds the machine) on a new target of `factory`.
  SaveRefusals(const TargetFactory& factory, const RunSpec& run,
               const std::vector<TrainingState>& states)
      : scratch_(factory.make(TargetOptions())), run_(run), states_(states) {}

  // A save in the machine's current state (`where`) is refused unless the state is persistable.
  void Check(const char* where) {
    const TrainingState& s = states_.front();
    // The rule itself, not only the spec's function: only these two states may be persisted.
    const bool persistable = s.rerun.state == RerunState::kNotRunningYet ||
                             s.rerun.state == RerunState::kWillRerunFromCheckpoint;
    RC_ASSERT(IsPersistableRerunState(s.rerun.state) == persistable);
    if (persistable) return;
    const Status st = SaveRun(scratch_->target(), run_, states_, s.iteration + 1, SaveOptions());
    RC_LOG() << "save in " << RerunStateName(s.rerun.state) << " (" << where
             << "): " << st.ToString() << "\n";
    if (st.ok()) {
      RC_FAIL(std::string("a save in ") + RerunStateName(s.rerun.state) + " (" + where +
              ") was accepted; the state needs the unpersisted snapshot");
    }
    refused_.push_back(RerunStateName(s.rerun.state));
  }
  // The states whose save was refused, in order.
  const std::vector<std::string>& refused() const { return refused_; }

 private:
  std::unique_ptr<TargetUnderTest> scratch_;
  const RunSpec& run_;
  const std::vector<TrainingState>& states_;
  std::vector<std::string> refused_;
};

constexpr double kBadResult = 1e30, kOtherResult = 3.0;

// Drives the fault at iteration k + 1 through the in-place rerun; what the machine then asks for.
CheckpointAndExit DriveInPlaceRerun(const Fault& fault, Driver* d, SaveRefusals* refusals) {
  TrainingState& s = *d->s;
  RC_ASSERT(d->Step());  // NOT_RUNNING_YET -> INITIAL_RUN
  RC_ASSERT(s.rerun.state == RerunState::kInitialRun);
  refusals->Check("initial run");
  d->Pass(kBadResult, !fault.injected, fault.injected, fault.fatal, "node-a");
  RC_ASSERT(s.rerun.sharded.rerun_requested);
  RC_ASSERT(d->Step());  // -> RERUNNING_IN_PLACE, snapshot restored
  RC_ASSERT(s.rerun.state == RerunState::kRerunningInPlace);
  refusals->Check("rerun in place");
  d->Pass(fault.reproducible ? kBadResult : kOtherResult, fault.reproducible && !fault.injected,
          fault.reproducible && fault.injected, fault.fatal, "node-a");
  RC_ASSERT(!d->Step());
  const CheckpointAndExit exit = ShouldCheckpointAndExit(&s.rerun);
  RC_LOG() << "after the in-place rerun: " << MachineText(s.rerun) << ", checkpoint "
           << exit.checkpoint << ", exit " << exit.exit << " (" << exit.exit_code << ")\n";
  return exit;
}

// Saves the fault checkpoint of `states` on `target` (structured as the `steady` save: B04).
void SaveFaultCheckpoint(Target& target, const RunSpec& run,
                         const std::vector<TrainingState>& states,
                         const std::vector<ShardedStateDict>& steady) {
  std::vector<ShardedStateDict> faulted;
  CKPTSPEC_RC_ASSERT_OK(
      target.framework().ToStateDicts(run.layout, states, run.sharding, &faulted));
  const StructureDiff diff = DiffStructure(Signature(steady), Signature(faulted));
  if (!diff.empty()) {
    RC_FAIL("the fault save's structure differs from the steady-state save's:\n" +
            FormatViolations(diff.ToViolations()));
  }
  CKPTSPEC_RC_ASSERT_OK(target.engine().Save(states.front().iteration, faulted, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());
}

// The resumed machine and state are the spec's expected ones.
void CheckResumedMachine(const std::vector<TrainingState>& resumed,
                         const std::vector<TrainingState>& expected) {
  const TrainingState& r = resumed.front();
  const TrainingState& e = expected.front();
  RC_LOG() << "resumed machine: " << MachineText(r.rerun) << "; spec: " << MachineText(e.rerun)
           << "\n";
  RC_ASSERT(r.rerun.mode == e.rerun.mode);
  RC_ASSERT(r.rerun.state == e.rerun.state);
  RC_ASSERT(r.rerun.current_iteration == e.rerun.current_iteration);
  RC_ASSERT(r.rerun.sharded == e.rerun.sharded);
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, expected),
                          "resumed state differs from the spec's");
}

// Drives the rerun from checkpoint on `runs` (resumed, restarted, never exited); their exits.
std::vector<CheckpointAndExit> RerunFromCheckpoint(const Fault& fault,
                                                   const std::vector<TrainingState*>& runs,
                                                   const std::vector<RankRngState>& at_start,
                                                   const DataIteratorState& step_start,
                                                   TrainingState* s, SaveRefusals* refusals) {
  const char* names[] = {"resumed", "restarted (spec)", "never exited"};
  std::vector<CheckpointAndExit> exits;
  for (size_t i = 0; i < runs.size(); ++i) {
    Driver x{runs[i], i == 2 ? at_start : std::vector<RankRngState>()};
    RC_ASSERT(x.Step());  // -> RERUNNING_FROM_CHECKPOINT
    RC_ASSERT(runs[i]->rerun.state == RerunState::kRerunningFromCheckpoint);
    if (!(runs[i]->data == step_start)) {
      RC_FAIL(std::string(names[i]) +
              ": the rerun from checkpoint does not start at the faulty step's data");
    }
    if (i == 0) {
      TrainingState& saved_s = *s;
      std::swap(saved_s, *runs[0]);  // the refusal check looks at `s`
      refusals->Check("rerun from checkpoint");
      std::swap(saved_s, *runs[0]);
    }
    x.Pass(kBadResult, true, false, fault.fatal_again, fault.same_node_again ? "node-a" : "node-b");
    RC_ASSERT(!x.Step());
    exits.push_back(ShouldCheckpointAndExit(&runs[i]->rerun));
    RC_LOG() << names[i] << " after the rerun: " << MachineText(runs[i]->rerun) << ", exit "
             << exits.back().exit_code << "\n";
  }
  return exits;
}

// The second rerun's outcome is the spec's table: restart again (16), exit (17) or continue.
void CheckSecondRerun(const Fault& fault, const TrainingState& r, const CheckpointAndExit& exit) {
  // The spec's table for the second rerun: on the suspicious node again, restart again (16);
  // elsewhere a fatal result stays and exits (17), a non-fatal one continues.
  if (fault.same_node_again) {
    RC_TAG("restart again, exit 16");
    RC_ASSERT(r.rerun.state == RerunState::kRerunningAgainFromCheckpoint);
    RC_ASSERT(exit == (CheckpointAndExit{false, true, kExitCodeResumeToDisambiguate}));
  } else if (fault.fatal_again) {
    RC_TAG("fatal on another node, exit 17");
    RC_ASSERT(r.rerun.state == RerunState::kRerunningFromCheckpoint);
    RC_ASSERT(exit == (CheckpointAndExit{false, true, kExitCodeFailedOnResultValidation}));
  } else {
    RC_TAG("continued after the rerun from checkpoint");
    RC_ASSERT(r.rerun.state == RerunState::kNotRunningYet);
    RC_ASSERT(exit == (CheckpointAndExit{false, false, 0}));
  }
}

}  // namespace

void CheckRerunStateMachine(const TargetFactory& factory) {
  RunSpec run = *gen::RunUpTo(8, false);
  for (TrainingConfig& c : run.configs) c.rerun_mode = RerunMode::kValidateResults;
  const int64_t k = *rc::gen::inRange<int64_t>(1, 4);  // the first iteration has completed
  const Fault fault = DrawFault();
  const bool change_layout = factory.capabilities.resharding && *rc::gen::inRange(0, 4) == 0;
  const RunSpec resume_run = *gen::ResumeRunFor(run, 8, change_layout);
  RC_LOG() << "scenario:\n  " << DescribeRun(run) << "\n  train " << k << ", steady-state dicts;"
           << " then a fault at iteration " << k + 1 << ": " << Describe(fault)
           << "\n  save where asked, restart, resume on "
           << (change_layout ? DescribeRun(resume_run) : std::string("the same layout")) << "\n";
  RC_TAG(fault.fatal ? "fatal" : "non-fatal");
  RC_TAG(fault.reproducible ? "reproducible" : "transient");

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, k));
  TrainingState& s = states.front();

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  std::vector<ShardedStateDict> steady;
  CKPTSPEC_RC_ASSERT_OK(target.framework().ToStateDicts(run.layout, states, run.sharding, &steady));
  // (Only its structure matters: the fault save is of the same iteration, whose step failed.)

  // A save in a state that is not persistable must be refused (persistable ones: checked below).
  SaveRefusals refusals(factory, run, states);
  Driver d{&s, {}};
  const CheckpointAndExit exit = DriveInPlaceRerun(fault, &d, &refusals);
  if (!fault.fatal) {
    RC_TAG("continued");
    RC_ASSERT(s.rerun.state == RerunState::kNotRunningYet);
    RC_ASSERT(exit == (CheckpointAndExit{false, false, 0}));
    // Persistable: a save here is accepted.
    CKPTSPEC_RC_ASSERT_OK(SaveRun(target, run, states, s.iteration, SaveOptions()));
    return;
  }
  if (!fault.reproducible) {
    RC_TAG("exit 17 in place");
    RC_ASSERT(s.rerun.state == RerunState::kRerunningInPlace);
    RC_ASSERT(exit == (CheckpointAndExit{false, true, kExitCodeFailedOnResultValidation}));
    refusals.Check("exit 17 (B06)");
    return;
  }
  RC_TAG("checkpoint, exit 16");
  RC_ASSERT(s.rerun.state == RerunState::kWillRerunFromCheckpoint);
  RC_ASSERT(exit == (CheckpointAndExit{true, true, kExitCodeResumeToDisambiguate}));

  // The fault save: same structure as the steady one (B04), then a fresh process resumes.
  SaveFaultCheckpoint(target, run, states, steady);
  under_test->NewProcess();  // the exit 16 the machine asked for, and the job's relaunch

  std::vector<TrainingState> expected;
  const Status spec = ExpectedResume(run, states, resume_run, LoadFlags(), &expected);
  std::vector<TrainingState> resumed;
  const Status got = ResumeRun(under_test->target(), resume_run, ResumeOptions(), &resumed);
  RC_LOG() << "resume: spec " << spec.ToString() << ", target " << got.ToString() << "\n";
  RC_CLASSIFY(change_layout, "layout changed");
  if (!spec.ok()) {
    RC_TAG("pending rerun refused under a layout change");
    if (got.ok()) RC_FAIL("the target accepted a resume the spec refuses: " + spec.ToString());
    return;
  }
  if (!got.ok()) RC_FAIL("the target refused a resume the spec accepts: " + got.ToString());
  CheckResumedMachine(resumed, expected);
  if (change_layout) return;  // the spec kept a sentinel or refused; nothing pending to rerun
  TrainingState& r = resumed.front();
  RC_ASSERT(r.rerun.state == RerunState::kWillRerunFromCheckpoint);

  // The rerun from checkpoint, three ways: the target's resumed state, the spec's restarted
  // state, and the process that never exited. They must agree: nothing unpersisted is needed.
  TrainingState restarted = Restarted(s);
  TrainingState stayed = s;
  const DataIteratorState step_start = s.rerun.sharded.data_iterator_checkpoint.value_or(s.data);
  const std::vector<CheckpointAndExit> exits =
      RerunFromCheckpoint(fault, {&r, &restarted, &stayed}, d.at_start, step_start, &s, &refusals);
  RC_ASSERT(exits[0] == exits[1]);
  RC_ASSERT(exits[0] == exits[2]);
  RC_ASSERT(r.rerun.state == restarted.rerun.state);
  RC_ASSERT(r.rerun.state == stayed.rerun.state);
  CKPTSPEC_RC_ASSERT_SAME(FirstDifference(r, restarted), "resumed vs restarted after the rerun");
  CKPTSPEC_RC_ASSERT_SAME(FirstDifference(r, stayed), "resumed vs never exited after the rerun");
  CheckSecondRerun(fault, r, exits[0]);
  RC_CLASSIFY(refusals.refused().size() >= 3, "saves refused in 3+ states");
}

}  // namespace ckptspec
