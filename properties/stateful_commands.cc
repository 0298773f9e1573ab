// The commands of the stateful test: each generates one operation (stateful_ops.h, where the
// operations and their postconditions are tabled) from the model; OpCommand runs it.
#include "properties/stateful_commands.h"

#include <algorithm>

#include "generators/config_gen.h"
#include "generators/run_gen.h"
#include "properties/property_util.h"

namespace ckptspec {
namespace {

class OpCommand : public StatefulCommand {
 public:
  explicit OpCommand(StatefulOp op) : op_(std::move(op)) {}
  void checkPreconditions(const StatefulModel& m) const override { RC_PRE(OpApplies(op_, m)); }
  void apply(StatefulModel& m) const override { ApplyOp(op_, &m); }
  void run(const StatefulModel& m, StatefulSut& sut) const override {
    const std::string failed = RunOp(op_, m, nextState(m), &sut);
    if (!failed.empty()) RC_FAIL(failed);
  }
  void show(std::ostream& os) const override { os << DescribeOp(op_); }

 private:
  StatefulOp op_;
};

StatefulOp Op(OpKind kind) {
  StatefulOp op;
  op.kind = kind;
  return op;
}

class Train : public OpCommand {
 public:
  explicit Train(const StatefulModel&) : OpCommand(Make()) {}

 private:
  static StatefulOp Make() {
    StatefulOp op = Op(OpKind::kTrain);
    op.n = *rc::gen::inRange<int64_t>(1, 4);
    return op;
  }
};

class Save : public OpCommand {
 public:
  explicit Save(const StatefulModel& m) : OpCommand(Make(m)) {}

 private:
  static StatefulOp Make(const StatefulModel& m) {
    StatefulOp op = Op(OpKind::kSave);
    op.async = m.capabilities.async && *rc::gen::arbitrary<bool>();
    op.cached = m.capabilities.plan_cache && *rc::gen::arbitrary<bool>();
    return op;
  }
};

// An async save while another is in flight and the bound leaves room (the overlap a loop that
// saves before finalizing makes): a Save drawn where it overlaps, after 0 to 2 training steps.
// Without training since the last save, it is of the iteration the newest save in flight will
// make the tracker name, and refused.
class OverlappingSave : public OpCommand {
 public:
  explicit OverlappingSave(const StatefulModel& m) : OpCommand(Make(m)) {}

 private:
  static StatefulOp Make(const StatefulModel& m) {
    RC_PRE(m.alive && !m.must_exit && m.pending.has_value() &&
           SavesInFlight(m) < static_cast<size_t>(m.max_in_flight));
    StatefulOp op = Op(OpKind::kSave);
    op.async = true;
    // Mostly a training step first, so that it saves another iteration than the newest in flight.
    op.train_first = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<int64_t>(0, 3));
    op.cached = m.capabilities.plan_cache && *rc::gen::arbitrary<bool>();
    return op;
  }
};

class Finalize : public OpCommand {
 public:
  Finalize() : OpCommand(Op(OpKind::kFinalize)) {}
};

class RerunFault : public OpCommand {
 public:
  RerunFault() : OpCommand(Op(OpKind::kRerunFault)) {}
};

class Crash : public OpCommand {
 public:
  explicit Crash(const StatefulModel& m) : OpCommand(Make(m)) {}

 private:
  static StatefulOp Make(const StatefulModel& m) {
    StatefulOp op = Op(OpKind::kCrash);
    op.at_op = *rc::gen::weightedOneOf<int64_t>(
        {{3, rc::gen::inRange<int64_t>(0, kMinSaveOps)}, {1, rc::gen::just<int64_t>(-1)}});
    // With saves in flight, the crash falls between any two of their commits.
    const int64_t in_flight = static_cast<int64_t>(SavesInFlight(m));
    if (op.at_op >= 0 && in_flight > 0) {
      op.completed_first = *rc::gen::inRange<int64_t>(0, in_flight + 1);
    }
    return op;
  }
};

class Restart : public OpCommand {
 public:
  explicit Restart(const StatefulModel& m) : OpCommand(Make(m)) {}

 private:
  static StatefulOp Make(const StatefulModel& m) {
    StatefulOp op = Op(OpKind::kRestart);
    op.restart = *rc::gen::element(RestartKind::kSameRun, RestartKind::kOtherRun,
                                   RestartKind::kAddParameter);
    op.run = m.run;
    if (op.restart == RestartKind::kOtherRun) {
      op.run =
          *gen::ResumeRunFor(m.run, 8, m.capabilities.resharding && *rc::gen::arbitrary<bool>());
      op.flags = *gen::LoadFlagsGen(false);
      op.run = *gen::ResumePrecision(m.run, op.run);  // another params / moment dtype sometimes
    } else if (op.restart == RestartKind::kAddParameter) {
      const size_t module = *rc::gen::inRange<size_t>(0, m.run.configs.size());
      const bool prefer_bias = *rc::gen::arbitrary<bool>();
      RC_PRE(RunWithAddedParameter(m.run, module, prefer_bias, &op.run, &op.added).ok());
    }
    return op;
  }
};

class Freeze : public OpCommand {
 public:
  explicit Freeze(const StatefulModel& m) : OpCommand(Make(m)) {}

 private:
  static StatefulOp Make(const StatefulModel& m) {
    RC_PRE(m.alive && !m.states.empty());
    StatefulOp op = Op(OpKind::kFreeze);
    op.module = *rc::gen::inRange<size_t>(0, m.states.size());
    const std::vector<std::string> keys = FreezableKeys(m, op.module);
    RC_PRE(!keys.empty());  // keep one trainable key
    op.key = *rc::gen::elementOf(keys);
    return op;
  }
};

class Heal : public OpCommand {
 public:
  Heal() : OpCommand(Op(OpKind::kHeal)) {}
};

class Unfreeze : public OpCommand {
 public:
  explicit Unfreeze(const StatefulModel& m) : OpCommand(Make(m)) {}

 private:
  static StatefulOp Make(const StatefulModel& m) {
    RC_PRE(m.alive && !m.states.empty());
    StatefulOp op = Op(OpKind::kUnfreeze);
    op.module = *rc::gen::inRange<size_t>(0, m.states.size());
    const std::vector<std::string> keys = UnfreezableKeys(m, op.module);
    RC_PRE(!keys.empty());
    op.key = *rc::gen::elementOf(keys);
    return op;
  }
};

class Reload : public OpCommand {
 public:
  explicit Reload(const StatefulModel& m) : OpCommand(Make(m)) {}

 private:
  static StatefulOp Make(const StatefulModel& m) {
    const std::vector<int64_t> iterations = ReloadableIterations(m);
    RC_PRE(!iterations.empty());
    StatefulOp op = Op(OpKind::kReload);
    op.iteration = *rc::gen::elementOf(iterations);
    // Half the reloads while an async save is pending pick its checkpoint: the one whose staged
    // buffers training has been writing into since.
    if (m.pending && *rc::gen::arbitrary<bool>() &&
        std::find(iterations.begin(), iterations.end(), m.pending->iteration) != iterations.end()) {
      op.iteration = m.pending->iteration;
    }
    return op;
  }
};

}  // namespace

void CheckStateful(const TargetFactory& factory, StatefulStats* stats) {
  RunSpec run = *gen::RunUpTo(8);
  // Swarm-style: half the scenarios freeze the torch.optim way in every module, so that a
  // parameter is trained, frozen and unfrozen often enough (the config generator draws the
  // family per module, a third of the time).
  if (*rc::gen::arbitrary<bool>()) run = gen::WithTorchOptimFreezing(std::move(run));
  RC_LOG() << "initial run:\n  " << DescribeRun(run) << "\n";
  RC_CLASSIFY(run.configs.size() > 1, "heterogeneous");
  int64_t world = run.layout.world_size();
  RC_TAG(world == 1 ? "world 1" : world <= 4 ? "world 2-4" : "world 5-8");
  bool ep = false;
  for (const ModuleLayout& m : run.layout.modules()) ep = ep || m.layout.ep() > 1;
  RC_CLASSIFY(ep, "EP > 1");

  // On a target that holds several async saves at once: a bound of 1 to 3 of them and retention
  // (keep_last 0 to 2), so saves overlap and retention runs between their commits.
  TargetOptions options;
  if (factory.capabilities.overlapping_async) {
    options.max_async_in_flight = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(1, 4));
    options.keep_last = *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0, 3));
    RC_LOG() << "  at most " << options.max_async_in_flight
             << " async save(s) in flight, keep_last " << options.keep_last << "\n";
  }

  StatefulModel initial;
  StatefulSut sut;
  CKPTSPEC_RC_ASSERT_OK(StartScenario(factory, run, &initial, &sut, options));
  sut.stats = stats;

  // Sequences of up to ~60% of RapidCheck's size (about 60 commands at the default max_size 100,
  // 16 on average over a default run): long enough for save / crash / restart stories, short
  // enough to shrink quickly. Train, Save, RerunFault, Freeze, Unfreeze and Reload appear more
  // often (a listed type is picked with equal weight; RerunFault, Freeze, Unfreeze and Reload
  // discard themselves where they do not apply, and so does OverlappingSave, an async Save drawn
  // where another is in flight).
  const auto commands = *rc::gen::scale(
      0.6, rc::state::gen::commands(
               initial, rc::state::gen::execOneOfWithArgs<
                            Train, Train, Train, Save, Save, OverlappingSave, OverlappingSave,
                            OverlappingSave, Finalize, RerunFault, RerunFault, Crash, Restart,
                            Freeze, Freeze, Heal, Unfreeze, Unfreeze, Reload, Reload>()));
  rc::state::runAll(commands, initial, sut);
  for (const std::string& event : sut.events) RC_TAG(event);
}

}  // namespace ckptspec
