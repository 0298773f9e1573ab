// The commands of the stateful test. Each: a constructor that generates its arguments from the
// model (discarding itself with RC_PRE where it does not apply), checkPreconditions, apply (the
// spec's view of the operation), run (the operation on the target and the SUT process, then the
// postconditions against nextState) and a readable show().
//
// | command       | the operation                                    | postconditions beyond the common ones          |
// |---------------|--------------------------------------------------|------------------------------------------------|
// | Train(n)      | n spec training steps on both sides              | the same status                                |
// | Save(a, c)    | SaveRun at the current iteration, sync or async, | OK exactly when the spec says: the rerun state  |
// |               | plan cache on or off                             | is persistable, a pending save's error surfaces,|
// |               |                                                  | the tracker's iteration is never overwritten    |
// | Finalize      | Engine::Finalize                                 | OK exactly when the pending save commits        |
// | RerunFault    | RerunFaultStep on both sides                     | WILL_RERUN_FROM_CHECKPOINT, exit code 16        |
// | Crash(k)      | a sync save crashing at its storage op k (or a   | k < kMinSaveOps: nothing of it (nor of a pending|
// |               | power loss right after it returned), then power  | save) commits; after: committed as a sync save, |
// |               | loss; the process dies, unfinished writes too    | a pending save is lost; a completed save used   |
// |               |                                                  | >= kMinSaveOps operations                       |
// | Restart(r, f) | clean exit of the process (Finalize), a new one  | resumed states == ExpectedResume(committed, r,  |
// |               | resumes run r (new layout, or one more parameter)| f) or both refuse; without a checkpoint both    |
// |               | under flags f                                    | start fresh; same run, no flags: == the         |
// |               |                                                  | checkpoint's states as restarted (P1)           |
// | Freeze(key)   | FreezeParameter of every instance of a key       | the same status                                 |
#include "properties/stateful_commands.h"

#include <algorithm>
#include <sstream>

#include "generators/config_gen.h"
#include "generators/run_gen.h"
#include "model/layout.h"
#include "properties/property_util.h"
#include "properties/rerun_fault.h"

namespace ckptspec {
namespace {

using CommandPtr = std::shared_ptr<const StatefulCommand>;

int64_t Iteration(const std::vector<TrainingState>& states) {
  return states.empty() ? 0 : states.front().iteration;
}

// The spec's rule for a save's payload: every module's rerun machine is in a persistable state.
bool Persistable(const std::vector<TrainingState>& states) {
  for (const TrainingState& s : states) {
    if (!IsPersistableRerunState(s.rerun.state)) return false;
  }
  return true;
}

// What the target does first at every Save / Load / Finalize / clean exit: the pending async save
// is written. Returns whether it committed (no pending save: true).
bool ResolvePending(StatefulModel* m) {
  if (!m->pending) return true;
  const bool ok = !m->pending_refused;
  if (ok) m->committed = std::move(*m->pending);
  m->pending.reset();
  m->pending_refused = false;
  return ok;
}

// The spec's view of a save of the current states (sync, or the staging of an async one). The
// framework refuses a state that is not persistable before the engine sees the call (a pending
// save stays pending); the engine then writes the pending save first and stops at its error.
void ApplySave(StatefulModel* m, bool async) {
  if (!Persistable(m->states) || !ResolvePending(m)) {
    m->expect_ok = false;
    return;
  }
  StatefulCheckpoint ckpt{m->run, m->run_version, m->runtime_frozen, m->states,
                          Iteration(m->states)};
  // The tracker's iteration is never overwritten.
  const bool refused = m->committed && m->committed->iteration == ckpt.iteration;
  if (async) {
    m->pending = std::move(ckpt);
    m->pending_refused = refused;
    m->expect_ok = true;  // the error surfaces when it is written
    return;
  }
  if (!refused) m->committed = std::move(ckpt);
  m->expect_ok = !refused;
}

// The common postconditions: the status, and the SUT process against the model's.
void CheckAfter(const char* what, const Status& status, const StatefulModel& next,
                const StatefulSut& sut) {
  if (status.ok() != next.expect_ok) {
    RC_FAIL(std::string(what) + " returned " + status.ToString() + "; the spec expects " +
            (next.expect_ok ? "OK" : "an error"));
  }
  RC_ASSERT(sut.alive == next.alive);
  if (sut.alive) {
    CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(sut.states, next.states),
                            std::string("after ") + what + ", the SUT process differs from the spec");
  }
}

void Count(StatefulSut& sut, const std::string& kind) {
  if (!sut.stats) return;
  ++sut.stats->commands;
  ++sut.stats->by_kind[kind];
}

// ---------------------------------------------------------------------------------------------

class Train : public StatefulCommand {
 public:
  explicit Train(const StatefulModel&) : n_(*rc::gen::inRange<int64_t>(1, 4)) {}
  void checkPreconditions(const StatefulModel& m) const override { RC_PRE(m.alive && !m.must_exit); }
  void apply(StatefulModel& m) const override {
    m.expect_ok = TrainRun(&m.states, n_).ok();
    if (!m.expect_ok) m.must_exit = true;
  }
  void run(const StatefulModel& m, StatefulSut& sut) const override {
    Count(sut, "Train");
    const Status status = TrainRun(&sut.states, n_);
    CheckAfter("Train", status, nextState(m), sut);
  }
  void show(std::ostream& os) const override { os << "Train(" << n_ << ")"; }

 private:
  int64_t n_;
};

class Save : public StatefulCommand {
 public:
  explicit Save(const StatefulModel& m)
      : async_(m.capabilities.async && *rc::gen::arbitrary<bool>()),
        cached_(m.capabilities.plan_cache && *rc::gen::arbitrary<bool>()) {}
  void checkPreconditions(const StatefulModel& m) const override { RC_PRE(m.alive); }
  void apply(StatefulModel& m) const override { ApplySave(&m, async_); }
  void run(const StatefulModel& m, StatefulSut& sut) const override {
    Count(sut, std::string(async_ ? "Save async" : "Save sync") + (cached_ ? ", plan cache" : ""));
    if (async_) sut.events.insert("async save");
    SaveOptions options;
    options.async = async_;
    options.assume_constant_structure = cached_;
    const Status status = SaveRun(sut.under_test->target(), sut.run, sut.states,
                                  Iteration(sut.states), options);
    CheckAfter("Save", status, nextState(m), sut);
  }
  void show(std::ostream& os) const override {
    os << "Save(" << (async_ ? "async" : "sync") << ", plan cache " << (cached_ ? "on" : "off")
       << ")";
  }

 private:
  bool async_, cached_;
};

class Finalize : public StatefulCommand {
 public:
  void checkPreconditions(const StatefulModel& m) const override {
    RC_PRE(m.alive && m.pending.has_value());
  }
  void apply(StatefulModel& m) const override { m.expect_ok = ResolvePending(&m); }
  void run(const StatefulModel& m, StatefulSut& sut) const override {
    Count(sut, "Finalize");
    const Status status = sut.under_test->target().engine().Finalize();
    CheckAfter("Finalize", status, nextState(m), sut);
  }
  void show(std::ostream& os) const override { os << "Finalize"; }
};

class RerunFault : public StatefulCommand {
 public:
  void checkPreconditions(const StatefulModel& m) const override {
    RC_PRE(m.alive && !m.must_exit);
    for (const TrainingState& s : m.states) RC_PRE(CanRerunFault(s));
  }
  void apply(StatefulModel& m) const override {
    m.expect_ok = true;
    for (TrainingState& s : m.states) m.expect_ok = RerunFaultStep(&s).ok() && m.expect_ok;
    m.must_exit = true;
  }
  void run(const StatefulModel& m, StatefulSut& sut) const override {
    Count(sut, "RerunFault");
    sut.events.insert("rerun fault");
    Status status;
    for (TrainingState& s : sut.states) {
      const Status one = RerunFaultStep(&s);
      if (status.ok()) status = one;
    }
    CheckAfter("RerunFault", status, nextState(m), sut);
  }
  void show(std::ostream& os) const override {
    os << "RerunFault(NaN loss reproduced in place -> WILL_RERUN_FROM_CHECKPOINT, exit 16)";
  }
};

class Crash : public StatefulCommand {
 public:
  explicit Crash(const StatefulModel&)
      : at_op_(*rc::gen::weightedOneOf<int64_t>(
            {{3, rc::gen::inRange<int64_t>(0, kMinSaveOps)}, {1, rc::gen::just<int64_t>(-1)}})) {}
  void checkPreconditions(const StatefulModel& m) const override { RC_PRE(m.alive); }
  void apply(StatefulModel& m) const override {
    if (at_op_ >= 0) {
      m.expect_ok = false;  // a pending save is written first and crashes too
    } else {
      ApplySave(&m, /*async=*/false);
    }
    // Whatever is still pending dies with the process.
    m.pending.reset();
    m.pending_refused = false;
    m.alive = false;
    m.must_exit = false;
    m.states.clear();
  }
  void run(const StatefulModel& m, StatefulSut& sut) const override {
    Count(sut, at_op_ >= 0 ? "Crash at op k" : "Crash after the save");
    sut.events.insert("crash");
    MemEnv* env = sut.under_test->mem_env();
    RC_ASSERT(env != nullptr);
    env->ResetOpCount();
    if (at_op_ >= 0) env->CrashAtOp(at_op_);
    const Status status = SaveRun(sut.under_test->target(), sut.run, sut.states,
                                  Iteration(sut.states), SaveOptions());
    if (at_op_ < 0 && status.ok() && !m.pending) {
      RC_ASSERT(env->op_count() >= kMinSaveOps);  // the contract kMinSaveOps relies on
    }
    // The process dies with the machine: nothing it would still write (a pending async save in
    // its destructor) reaches storage.
    if (!env->crashed()) env->CrashAtOp(env->op_count());
    sut.under_test->NewProcess();
    env->SimulatePowerLoss();
    env->ClearFaults();
    sut.alive = false;
    sut.states.clear();
    CheckAfter("the crashing Save", status, nextState(m), sut);
  }
  void show(std::ostream& os) const override {
    if (at_op_ >= 0) {
      os << "Crash(a sync save crashes at its storage op " << at_op_ << "; power loss)";
    } else {
      os << "Crash(power loss right after a sync save returned)";
    }
  }

 private:
  int64_t at_op_;
};

class Restart : public StatefulCommand {
 public:
  enum class Kind { kSameRun, kOtherRun, kAddParameter };

  explicit Restart(const StatefulModel& m)
      : kind_(*rc::gen::element(Kind::kSameRun, Kind::kOtherRun, Kind::kAddParameter)),
        run_(m.run) {
    if (kind_ == Kind::kOtherRun) {
      run_ = *gen::ResumeRunFor(m.run, 8, *rc::gen::arbitrary<bool>());
      flags_ = *gen::LoadFlagsGen(false);
    } else if (kind_ == Kind::kAddParameter) {
      const size_t i = *rc::gen::inRange<size_t>(0, m.run.configs.size());
      TrainingConfig& c = run_.configs[i];
      const Layout& layout = run_.layout.modules()[i].layout;
      if (!c.model.add_bias && *rc::gen::arbitrary<bool>()) {
        c.model.add_bias = true;
        added_ = "biases";
      } else {
        c.model.num_layers += static_cast<int>(layout.pp());
        added_ = std::to_string(layout.pp()) + " more layer(s)";
      }
      added_ += c.model.name.empty() ? "" : " in module '" + c.model.name + "'";
      RC_PRE(ValidateModelForLayout(c.model, layout).ok());
      // A stacked key is frozen in every instance or none (state_sharding.h): the new layers'
      // instances of a frozen key are frozen too.
      std::vector<std::string> frozen_keys;
      for (const ParameterSpec& p : ModelParameters(m.run.configs[i].model)) {
        if (std::find(c.frozen.begin(), c.frozen.end(), p.name) != c.frozen.end()) {
          frozen_keys.push_back(p.key);
        }
      }
      for (const ParameterSpec& p : ModelParameters(c.model)) {
        if (std::find(frozen_keys.begin(), frozen_keys.end(), p.key) != frozen_keys.end() &&
            std::find(c.frozen.begin(), c.frozen.end(), p.name) == c.frozen.end()) {
          c.frozen.push_back(p.name);
        }
      }
      RC_PRE(ValidateTrainingConfig(c).ok());
    }
  }
  void apply(StatefulModel& m) const override {
    const RunSpec resume_run = RunFor(m);
    m.expect_exit_ok = m.alive ? ResolvePending(&m) : true;
    m.pending.reset();
    m.pending_refused = false;
    m.must_exit = false;
    m.runtime_frozen = false;
    if (!m.committed) {
      // Nothing to resume: the resume fails and the new process starts from scratch.
      m.expect_ok = false;
      m.alive = InitialStates(resume_run, &m.states).ok();
    } else {
      std::vector<TrainingState> expected;
      m.expect_ok = ExpectedResume(m.committed->run, m.committed->states, resume_run, flags_, &expected).ok();
      m.alive = m.expect_ok;
      m.states = m.expect_ok ? std::move(expected) : std::vector<TrainingState>();
    }
    if (m.alive && kind_ != Kind::kSameRun) {
      m.run = resume_run;
      ++m.run_version;
    }
  }
  void run(const StatefulModel& m, StatefulSut& sut) const override {
    Count(sut, kind_ == Kind::kSameRun    ? "Restart same run"
               : kind_ == Kind::kOtherRun ? "Restart other layout/flags"
                                          : "Restart added parameter");
    const StatefulModel next = nextState(m);
    const RunSpec resume_run = RunFor(m);
    if (sut.alive) {
      const Status exit = sut.under_test->target().engine().Finalize();
      if (exit.ok() != next.expect_exit_ok) {
        RC_FAIL("Finalize at the clean exit returned " + exit.ToString() + "; the spec expects " +
                (next.expect_exit_ok ? "OK" : "an error"));
      }
    }
    sut.under_test->NewProcess();
    ResumeOptions options;
    options.flags = flags_;
    std::vector<TrainingState> resumed;
    const Status status = ResumeRun(sut.under_test->target(), resume_run, options, &resumed);
    sut.alive = status.ok();
    sut.states = std::move(resumed);
    if (!next.committed && !status.ok()) sut.alive = InitialStates(resume_run, &sut.states).ok();
    if (sut.alive) sut.run = resume_run;
    if (!next.expect_ok && sut.stats) ++sut.stats->by_kind["  (restart refused by the spec)"];
    for (size_t i = 0; kind_ == Kind::kOtherRun && i < resume_run.layout.modules().size(); ++i) {
      if (resume_run.layout.modules()[i].layout.ToString() != m.run.layout.modules()[i].layout.ToString()) {
        sut.events.insert("layout change");
      }
    }
    CheckAfter("Restart", status, next, sut);
    // P1 across restarts: the same run, no flags resumes exactly the checkpoint's states (as a
    // restarted process holds them), so training on equals the uninterrupted continuation.
    if (kind_ == Kind::kSameRun && next.committed && next.committed->run_version == m.run_version &&
        !next.committed->runtime_frozen && status.ok()) {
      if (sut.stats) ++sut.stats->by_kind["  (P1 checked across the restart)"];
      std::vector<TrainingState> uninterrupted;
      for (const TrainingState& s : next.committed->states) uninterrupted.push_back(Restarted(s));
      CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(sut.states, uninterrupted),
                              "P1: the resumed process differs from the checkpoint's run");
    }
  }
  void show(std::ostream& os) const override {
    switch (kind_) {
      case Kind::kSameRun: os << "Restart(the same run, no flags)"; return;
      case Kind::kAddParameter: os << "Restart(the run with " << added_ << ", no flags)"; return;
      case Kind::kOtherRun:
        os << "Restart(";
        showValue(flags_, os);
        os << "; " << DescribeRun(run_) << ")";
        return;
    }
  }

 private:
  // The same run is the model's run when the command runs (shrinking may drop earlier commands).
  RunSpec RunFor(const StatefulModel& m) const { return kind_ == Kind::kSameRun ? m.run : run_; }
  Kind kind_;
  RunSpec run_;
  LoadFlags flags_;
  std::string added_;
};

class Freeze : public StatefulCommand {
 public:
  explicit Freeze(const StatefulModel& m) {
    RC_PRE(m.alive && !m.states.empty());
    module_ = *rc::gen::inRange<size_t>(0, m.states.size());
    std::vector<std::string> keys;
    for (size_t p = 0; p < m.states[module_].specs.size(); ++p) {
      const std::string& key = m.states[module_].specs[p].key;
      if (!m.states[module_].params[p].frozen &&
          std::find(keys.begin(), keys.end(), key) == keys.end()) {
        keys.push_back(key);
      }
    }
    RC_PRE(keys.size() > 1);  // keep one trainable key
    key_ = *rc::gen::elementOf(keys);
  }
  void checkPreconditions(const StatefulModel& m) const override {
    RC_PRE(m.alive && !m.must_exit && module_ < m.states.size());
    const TrainingState& s = m.states[module_];
    int trainable_other = 0, trainable_this = 0;
    for (size_t p = 0; p < s.specs.size(); ++p) {
      if (s.params[p].frozen) continue;
      (s.specs[p].key == key_ ? trainable_this : trainable_other)++;
    }
    RC_PRE(trainable_this > 0 && trainable_other > 0);
  }
  void apply(StatefulModel& m) const override {
    m.expect_ok = FreezeKey(&m.states[module_]).ok();
    m.run.configs[module_].frozen = m.states[module_].config.frozen;
    ++m.run_version;
    m.runtime_frozen = true;
  }
  void run(const StatefulModel& m, StatefulSut& sut) const override {
    Count(sut, "Freeze");
    sut.events.insert("freeze");
    const Status status = FreezeKey(&sut.states[module_]);
    sut.run.configs[module_].frozen = sut.states[module_].config.frozen;
    CheckAfter("Freeze", status, nextState(m), sut);
  }
  void show(std::ostream& os) const override {
    os << "Freeze(every instance of '" << key_ << "'" << (module_ ? " in module " + std::to_string(module_) : "") << ")";
  }

 private:
  Status FreezeKey(TrainingState* s) const {
    for (size_t p = 0; p < s->specs.size(); ++p) {
      if (s->specs[p].key == key_) {
        CKPTSPEC_RETURN_IF_ERROR(FreezeParameter(s, s->specs[p].name));
      }
    }
    return Status::OK();
  }
  size_t module_ = 0;
  std::string key_;
};

}  // namespace

void CheckStateful(const TargetFactory& factory, StatefulStats* stats) {
  RC_PRE(factory.fault_injection);
  const RunSpec run = *gen::RunUpTo(8);
  RC_LOG() << "initial run:\n  " << DescribeRun(run) << "\n";
  RC_CLASSIFY(run.configs.size() > 1, "heterogeneous");
  int64_t world = run.layout.world_size();
  RC_TAG(world == 1 ? "world 1" : world <= 4 ? "world 2-4" : "world 5-8");
  bool ep = false;
  for (const ModuleLayout& m : run.layout.modules()) ep = ep || m.layout.ep() > 1;
  RC_CLASSIFY(ep, "EP > 1");

  StatefulModel initial;
  initial.capabilities = factory.capabilities;
  initial.run = run;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &initial.states));

  StatefulSut sut;
  sut.under_test = factory.make(TargetOptions());
  sut.run = run;
  sut.states = initial.states;
  sut.stats = stats;

  // Sequences of up to ~60% of RapidCheck's size (about 60 commands at the default max_size 100,
  // 16 on average over a default run): long enough for save / crash / restart stories, short
  // enough to shrink quickly. Train, Save and RerunFault appear more often (a listed type is
  // picked with equal weight; RerunFault discards itself where the spec allows no fault).
  const auto commands = *rc::gen::scale(
      0.6, rc::state::gen::commands(
               initial, rc::state::gen::execOneOfWithArgs<Train, Train, Train, Save, Save, Finalize,
                                                          RerunFault, RerunFault, Crash, Restart,
                                                          Freeze>()));
  rc::state::runAll(commands, initial, sut);
  for (const std::string& event : sut.events) RC_TAG(event);
}

}  // namespace ckptspec
