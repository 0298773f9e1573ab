// The operations (stateful_ops.h): preconditions, the spec's view, the run on a target.
//
// | op            | the operation                                    | postconditions beyond the common ones          |
// |---------------|--------------------------------------------------|------------------------------------------------|
// | Train(n)      | n spec training steps on both sides; the SUT     | the same status                                |
// |               | writes its new state into a pending async save's |                                                |
// |               | input in place (a training loop's live dicts)    |                                                |
// | Save(a, c)    | SaveRun at the current iteration, sync or async  | OK exactly when the spec says: the rerun state  |
// |               | (async: the process's own dicts, tensors on the  | is persistable, a pending save's error surfaces,|
// |               | host), plan cache on or off                      | the tracker's iteration is never overwritten    |
// | Finalize      | Engine::Finalize                                 | OK exactly when the pending save commits        |
// | RerunFault    | RerunFaultStep on both sides                     | WILL_RERUN_FROM_CHECKPOINT, exit code 16        |
// | Crash(j, k)   | j Polls (each completes the oldest async save in | k < kMinSaveOps: nothing of it (nor of a pending|
// |               | flight), then a sync save crashing at its storage| save) commits; after: committed as a sync save, |
// |               | op k (or a power loss right after it returned),  | a pending save is lost; a completed save used   |
// |               | then power loss; the process dies, unfinished    | >= kMinSaveOps operations                       |
// |               | writes too                                       |                                                 |
//
// Several async saves in flight (StatefulModel::max_in_flight) commit in schedule order, an async
// Save with the bound reached completing the oldest first; retention (keep_last) runs after every
// commit, so a Reload or Restart finds exactly what docs/SEMANTICS.md §3 says must survive.
// | Restart(r, f) | clean exit of the process (Finalize), a new one  | resumed states == ExpectedResume(committed, r,  |
// |               | resumes run r (new layout, or one more parameter)| f) or both refuse; without a checkpoint both    |
// |               | under flags f                                    | start fresh; same run, no flags: == the         |
// |               |                                                  | checkpoint's states as restarted (P1)           |
// | Freeze(key)   | FreezeParameter of every instance of a key       | the same status                                 |
// | Unfreeze(key) | UnfreezeParameter of every instance of a frozen  | the same status; it trains on from the state it |
// |               | key (torch.optim freezing family)                | kept while frozen (the common postconditions)   |
// | Heal          | live recovery: the process hands its state dicts | the joiner's states == ExpectedResume of the    |
// |               | to a joining replica (a fresh process of the     | live states under the same run, no flags (a     |
// |               | same run, no storage: JoinFromPeer) and exits    | fresh process's view of its peers' state, LR per|
// |               | (its pending save finalized); training goes on in| group included), or both refuse; a state the   |
// |               | the joiner                                       | framework cannot hand over stays with the peer  |
// | Reload(k)     | the live process reloads the checkpoint of       | the process == ExpectedResume(checkpoint k,     |
// |               | iteration k (an older one, or the tracker's) in  | current run, no flags), or both refuse and the  |
// |               | place: no new process, its framework and engine  | process keeps its state; k saved by this very   |
// |               | keep what they cached; a pending save completes  | run: == the state at k as restarted (P1); the   |
// |               | first (the load finalizes)                       | tracker is unchanged                            |
#include "harness/stateful_ops.h"

#include <algorithm>
#include <iterator>
#include <memory>

#include "model/describe.h"
#include "model/layout.h"
#include "harness/harness.h"
#include "harness/rerun_fault.h"
#include "targets/reference/save_plan.h"

namespace ckptspec {
namespace {

int64_t Iteration(const std::vector<TrainingState>& states) {
  return states.empty() ? 0 : states.front().iteration;
}

// The spec's rule for what a save (or a heal's hand-over) can hold: every module's rerun machine is
// in a persistable state and its stacked keys' optimizer state is whole (CheckStackedKeysWhole).
bool Persistable(const std::vector<TrainingState>& states) {
  for (const TrainingState& s : states) {
    if (!IsPersistableRerunState(s.rerun.state) || !CheckStackedKeysWhole(s).ok()) return false;
  }
  return true;
}

// Retention after a commit (docs/SEMANTICS.md §3): the keep_last newest of the iterations on
// storage and the tracker's stay. A checkpoint outside the newest of on_disk is removed; one
// outside the newest once the maybe_on_disk ones are counted may be, so it becomes one of them.
void ApplyRetention(StatefulModel* m) {
  if (m->keep_last <= 0 || !m->committed) return;
  const size_t keep = static_cast<size_t>(m->keep_last);
  std::set<int64_t> known, counted(m->maybe_on_disk.begin(), m->maybe_on_disk.end());
  for (const auto& entry : m->on_disk) {
    known.insert(entry.first);
    counted.insert(entry.first);
  }
  const auto newest = [keep](const std::set<int64_t>& of, int64_t it) {
    return static_cast<size_t>(std::distance(of.upper_bound(it), of.end())) < keep;
  };
  const int64_t tracker = m->committed->iteration;
  for (auto it = m->on_disk.begin(); it != m->on_disk.end();) {
    const int64_t iteration = it->first;
    if (iteration == tracker || newest(counted, iteration)) {
      ++it;
      continue;
    }
    if (newest(known, iteration)) m->maybe_on_disk.insert(iteration);
    it = m->on_disk.erase(it);
  }
  for (auto it = m->maybe_on_disk.begin(); it != m->maybe_on_disk.end();) {
    it = newest(counted, *it) && m->on_disk.count(*it) == 0 ? std::next(it)
                                                            : m->maybe_on_disk.erase(it);
  }
}

// A save commits: its directory replaces any of the same iteration and the tracker names it.
void Commit(StatefulCheckpoint ckpt, StatefulModel* m) {
  m->maybe_on_disk.erase(ckpt.iteration);
  m->on_disk[ckpt.iteration] = ckpt;
  m->committed = std::move(ckpt);
  ApplyRetention(m);
}

// The oldest async save in flight is written and commits.
void ResolveOldest(StatefulModel* m) {
  if (!m->earlier_pending.empty()) {
    StatefulCheckpoint ckpt = std::move(m->earlier_pending.front());
    m->earlier_pending.pop_front();
    Commit(std::move(ckpt), m);
  } else if (m->pending) {
    StatefulCheckpoint ckpt = std::move(*m->pending);
    m->pending.reset();
    Commit(std::move(ckpt), m);
  }
}

// What the target does first at every sync Save / Load / Finalize / clean exit: the async saves
// in flight are written and commit, oldest first (a save that could not commit was refused when
// called: ApplySave).
void ResolvePending(StatefulModel* m) {
  while (SavesInFlight(*m) > 0) ResolveOldest(m);
}

// A save of `iteration` crashed: it may have moved aside the directory it was replacing, unless
// the tracker names that one (such a save is refused before anything is written).
void ForgetCrashedSave(int64_t iteration, StatefulModel* m) {
  if (m->committed && m->committed->iteration == iteration) return;
  if (m->on_disk.erase(iteration) > 0) m->maybe_on_disk.insert(iteration);
}

// The spec's view of a save of the current states (sync, or the staging of an async one). The
// framework refuses a state that is not persistable before the engine sees the call (a pending
// save stays pending); the engine then writes every save in flight first (sync), or the oldest
// while max_in_flight are in flight (async).
void ApplySave(StatefulModel* m, bool async) {
  if (!Persistable(m->states)) {
    m->expect_ok = false;
    return;
  }
  if (!async) ResolvePending(m);
  while (SavesInFlight(*m) >= static_cast<size_t>(std::max(1, m->max_in_flight))) {
    ResolveOldest(m);
  }
  StatefulCheckpoint ckpt{m->run, m->run_version, m->runtime_frozen, m->states.Share(),
                          Iteration(m->states)};
  // The tracker's iteration is never overwritten, nor the one the newest save in flight will make
  // it name: a save of it is refused when called, sync or async (nothing is staged).
  const std::optional<StatefulCheckpoint>& named = m->pending ? m->pending : m->committed;
  if (named && named->iteration == ckpt.iteration) {
    m->expect_ok = false;
    return;
  }
  if (async) {
    if (m->pending) m->earlier_pending.push_back(std::move(*m->pending));
    m->pending = std::move(ckpt);
  } else {
    Commit(std::move(ckpt), m);
  }
  m->expect_ok = true;
}

// The common postconditions: the status, and the SUT process against the model's.
std::string CheckAfter(const std::string& what, const Status& status, const StatefulModel& next,
                       const StatefulSut& sut) {
  if (status.ok() != next.expect_ok) {
    return what + " returned " + status.ToString() + "; the spec expects " +
           (next.expect_ok ? "OK" : "an error");
  }
  if (sut.alive != next.alive) {
    return "after " + what + ", the SUT process is " + (sut.alive ? "alive" : "gone") +
           "; the spec's is " + (next.alive ? "alive" : "gone");
  }
  if (!sut.alive) return "";
  const std::string difference = FirstRunDifference(sut.states, next.states);
  if (difference.empty()) return "";
  return "after " + what + ", the SUT process differs from the spec: " + difference;
}

void Count(StatefulSut* sut, const std::string& kind) {
  if (!sut->stats) return;
  ++sut->stats->commands;
  ++sut->stats->by_kind[kind];
}

// Restart: the same run is the model's run when the op runs (shrinking may drop earlier ops).
RunSpec ResumeRunOf(const StatefulOp& op, const StatefulModel& m) {
  return op.restart == RestartKind::kSameRun ? m.run : op.run;
}

// Freeze or Unfreeze (by op.kind) of every instance of op.key.
Status ChangeKeyFrozen(const StatefulOp& op, TrainingState* s) {
  for (size_t p = 0; p < s->specs.size(); ++p) {
    if (s->specs[p].key != op.key) continue;
    CKPTSPEC_RETURN_IF_ERROR(op.kind == OpKind::kFreeze ? FreezeParameter(s, s->specs[p].name)
                                                        : UnfreezeParameter(s, s->specs[p].name));
  }
  return Status::OK();
}

void ApplyCrash(const StatefulOp& op, StatefulModel* m) {
  if (op.at_op >= 0) {
    m->expect_ok = false;
    // The process completes the oldest saves in flight first (a Poll each); the next one is
    // written first by the crashing save, and crashes too.
    for (int64_t i = 0; i < op.completed_first; ++i) ResolveOldest(m);
    if (!m->earlier_pending.empty()) {
      ForgetCrashedSave(m->earlier_pending.front().iteration, m);
    } else if (m->pending) {
      ForgetCrashedSave(m->pending->iteration, m);
    }
    if (m->alive) ForgetCrashedSave(Iteration(m->states), m);
  } else {
    ApplySave(m, /*async=*/false);
  }
  // Whatever is still pending dies with the process.
  m->pending.reset();
  m->earlier_pending.clear();
  m->alive = false;
  m->must_exit = false;
  m->states.clear();
}

void ApplyRestart(const StatefulOp& op, StatefulModel* m) {
  const RunSpec resume_run = ResumeRunOf(op, *m);
  if (m->alive) ResolvePending(m);
  m->pending.reset();
  m->earlier_pending.clear();
  m->must_exit = false;
  m->runtime_frozen = false;
  if (!m->committed) {
    // Nothing to resume: the resume fails and the new process starts from scratch.
    m->expect_ok = false;
    m->alive = InitialStates(resume_run, m->states.Mutable()).ok();
  } else {
    std::vector<TrainingState> expected;
    m->expect_ok =
        ExpectedResume(m->committed->run, *m->committed->states, resume_run, op.flags, &expected)
            .ok();
    m->alive = m->expect_ok;
    m->states = m->expect_ok ? std::move(expected) : std::vector<TrainingState>();
  }
  if (m->alive && op.restart != RestartKind::kSameRun) {
    m->run = resume_run;
    ++m->run_version;
  }
}

// torch.optim family: a trainable parameter not stepped yet (its state is created lazily).
bool SomeTrainableParameterLacksState(const std::vector<TrainingState>& states) {
  for (const TrainingState& s : states) {
    for (const ParamState& p : s.params) {
      if (!p.frozen && !HasOptimizerState(p)) return true;
    }
  }
  return false;
}

// n training steps of the SUT process, each written into the live dicts of the async saves in
// flight, in place.
Status TrainSut(int64_t n, StatefulSut* sut) {
  const Status status = TrainRun(&sut->states, n);
  std::vector<ShardedStateDict> fresh;
  if (status.ok() && sut->live &&
      sut->under_test->target()
          .framework()
          .ToStateDicts(sut->run.layout, sut->states, sut->run.sharding, &fresh)
          .ok()) {
    WriteStateInPlace(fresh, sut->live.get());
  }
  return status;
}

std::string RunSave(const StatefulOp& op, const StatefulModel& next, StatefulSut* sut) {
  Count(sut,
        std::string(op.async ? "Save async" : "Save sync") + (op.cached ? ", plan cache" : ""));
  if (op.train_first > 0) {
    const Status trained = TrainSut(op.train_first, sut);
    if (!trained.ok()) return CheckAfter("the training before the Save", trained, next, *sut);
  }
  if (op.async) sut->events.insert("async save");
  SaveOptions options;
  options.async = op.async;
  options.assume_constant_structure = op.cached;
  Target& target = sut->under_test->target();
  auto dicts = std::make_shared<std::vector<ShardedStateDict>>();
  Status status = target.framework()
                      .ToStateDicts(sut->run.layout, sut->states, sut->run.sharding, &*dicts)
                      .WithContext("framework");
  if (status.ok()) {
    // An async save while another is in flight gets the loop's same dicts, the current state
    // written into them in place (a loop whose state dict's tensors are views of its parameters),
    // while their structure is unchanged; a sync save completes every save in flight first.
    if (op.async && sut->live && StructureFingerprint(*sut->live) == StructureFingerprint(*dicts)) {
      WriteStateInPlace(*dicts, sut->live.get());
      dicts = sut->live;
    }
    if (!op.async) sut->live.reset();
    status = target.engine().Save(
        Iteration(sut->states), SaveInput(dicts, EveryTensorOn(*dicts, Placement::kHost)), options);
    if (status.ok() && op.async) sut->live = std::move(dicts);
    if (status.ok() && op.async && SavesInFlight(next) > 1) {
      sut->events.insert("several async saves in flight");
    }
  }
  if (status.ok() && SomeTrainableParameterLacksState(sut->states)) {
    sut->events.insert("saved a trainable parameter without optimizer state (lazy)");
  }
  return CheckAfter("Save", status, next, *sut);
}

std::string RunCrash(const StatefulOp& op, const StatefulModel& m, const StatefulModel& next,
                     StatefulSut* sut) {
  Count(sut, op.at_op >= 0 ? "Crash at op k" : "Crash after the save");
  sut->events.insert("crash");
  MemEnv* env = sut->under_test->mem_env();
  if (env == nullptr) return "Crash needs a target on an in-memory Env (fault injection)";
  if (SavesInFlight(m) > 0) sut->events.insert("crash with async saves in flight");
  for (int64_t i = 0; i < op.completed_first; ++i) {
    bool complete = false;
    const Status polled = sut->under_test->target().engine().Poll(&complete);
    if (!polled.ok()) {
      return "the Poll completing an async save before the crash returned " + polled.ToString() +
             "; the spec expects OK";
    }
  }
  env->ResetOpCount();
  if (op.at_op >= 0) env->CrashAtOp(op.at_op);
  const Status status = SaveRun(sut->under_test->target(), sut->run, sut->states,
                                Iteration(sut->states), SaveOptions());
  if (op.at_op < 0 && status.ok() && !m.pending && env->op_count() < kMinSaveOps) {
    return "a completed save used " + std::to_string(env->op_count()) +
           " storage operations; the crash points rely on at least " + std::to_string(kMinSaveOps);
  }
  // The process dies with the machine: nothing it would still write (a pending async save in
  // its destructor) reaches storage.
  if (!env->crashed()) env->CrashAtOp(env->op_count());
  sut->under_test->NewProcess();
  sut->live.reset();
  sut->loads_in_process = 0;
  env->SimulatePowerLoss();
  env->ClearFaults();
  sut->alive = false;
  sut->states.clear();
  return CheckAfter("the crashing Save", status, next, *sut);
}

// "module/parameter" of every frozen parameter of `states`.
std::set<std::string> FrozenNames(const std::vector<TrainingState>& states) {
  std::set<std::string> out;
  for (size_t m = 0; m < states.size(); ++m) {
    for (size_t p = 0; p < states[m].params.size(); ++p) {
      if (states[m].params[p].frozen) out.insert(std::to_string(m) + "/" + states[m].specs[p].name);
    }
  }
  return out;
}

std::string RunRestart(const StatefulOp& op, const StatefulModel& m, const StatefulModel& next,
                       StatefulSut* sut) {
  Count(sut, op.restart == RestartKind::kSameRun    ? "Restart same run"
             : op.restart == RestartKind::kOtherRun ? "Restart other layout/flags"
                                                    : "Restart added parameter");
  const RunSpec resume_run = ResumeRunOf(op, m);
  if (sut->alive) {
    const Status exit = sut->under_test->target().engine().Finalize();
    if (!exit.ok()) {
      return "Finalize at the clean exit returned " + exit.ToString() + "; the spec expects OK";
    }
  }
  sut->under_test->NewProcess();
  sut->live.reset();
  ResumeOptions options;
  options.flags = op.flags;
  std::vector<TrainingState> resumed;
  const Status status = ResumeRun(sut->under_test->target(), resume_run, options, &resumed);
  sut->loads_in_process = status.ok() ? 1 : 0;
  sut->alive = status.ok();
  sut->states = std::move(resumed);
  if (!next.committed && !status.ok()) sut->alive = InitialStates(resume_run, &sut->states).ok();
  if (sut->alive) sut->run = resume_run;
  if (status.ok() && m.committed && FrozenNames(*m.committed->states) != FrozenNames(sut->states)) {
    sut->events.insert("frozen set changed across a restart");
  }
  if (!next.expect_ok && sut->stats) ++sut->stats->by_kind["  (restart refused by the spec)"];
  for (size_t i = 0; op.restart == RestartKind::kOtherRun && i < resume_run.layout.modules().size();
       ++i) {
    if (resume_run.layout.modules()[i].layout.ToString() !=
        m.run.layout.modules()[i].layout.ToString()) {
      sut->events.insert("layout change");
    }
  }
  for (size_t i = 0; op.restart == RestartKind::kOtherRun && m.committed &&
                     i < resume_run.configs.size() && i < m.committed->run.configs.size();
       ++i) {
    const TrainingConfig& was = m.committed->run.configs[i];
    if (resume_run.configs[i].model.params_dtype != was.model.params_dtype) {
      sut->events.insert("params dtype changed across a restart");
    }
    if (resume_run.configs[i].optimizer.moment_dtype != was.optimizer.moment_dtype) {
      sut->events.insert("moment dtype changed across a restart");
    }
  }
  const std::string after = CheckAfter("Restart", status, next, *sut);
  if (!after.empty()) return after;
  // P1 across restarts: the same run, no flags resumes exactly the checkpoint's states (as a
  // restarted process holds them), so training on equals the uninterrupted continuation.
  if (op.restart == RestartKind::kSameRun && next.committed &&
      next.committed->run_version == m.run_version && !next.committed->runtime_frozen &&
      status.ok()) {
    if (sut->stats) ++sut->stats->by_kind["  (P1 checked across the restart)"];
    std::vector<TrainingState> uninterrupted;
    for (const TrainingState& s : *next.committed->states) uninterrupted.push_back(Restarted(s));
    const std::string difference = FirstRunDifference(sut->states, uninterrupted);
    if (!difference.empty()) {
      return "P1: the resumed process differs from the checkpoint's run: " + difference;
    }
  }
  return "";
}

// Heal: the peer hands over what it can persist (ToStateDicts refuses the rest, and the peer stays);
// then it exits cleanly and the joiner loads its state as a fresh process of the same run.
void ApplyHeal(StatefulModel* m) {
  if (!Persistable(m->states)) {
    m->expect_ok = false;
    return;
  }
  ResolvePending(m);
  std::vector<TrainingState> joined;
  m->expect_ok = ExpectedResume(m->run, m->states, m->run, LoadFlags(), &joined).ok();
  m->alive = m->expect_ok;
  m->states = m->expect_ok ? std::move(joined) : std::vector<TrainingState>();
  m->runtime_frozen = false;  // the joiner is a fresh process: its groups in config order
}

std::string RunHeal(const StatefulModel& next, StatefulSut* sut) {
  Count(sut, "Heal");
  sut->events.insert("heal");
  Target& peer = sut->under_test->target();
  std::vector<ShardedStateDict> dicts;
  Status status =
      peer.framework().ToStateDicts(sut->run.layout, sut->states, sut->run.sharding, &dicts);
  if (status.ok()) {
    const Status exit = peer.engine().Finalize();
    if (!exit.ok()) {
      return "Finalize at the peer's exit returned " + exit.ToString() + "; the spec expects OK";
    }
    sut->under_test->NewProcess();
    sut->live.reset();
    std::vector<TrainingState> joined;
    status = JoinFromPeer(sut->under_test->target().framework(), sut->run, dicts, &joined);
    sut->loads_in_process = status.ok() ? 1 : 0;
    sut->alive = status.ok();
    sut->states = std::move(joined);
  }
  if (status.ok() && next.expect_ok && sut->alive && next.alive) {
    const std::string difference = FirstRunDifference(sut->states, next.states);
    if (difference.empty()) return "";
    return "after the heal the joining replica differs from its peers' state: " + difference;
  }
  return CheckAfter("Heal", status, next, *sut);
}

// Reload: the load completes a pending save first; then the process takes what a fresh process of
// its run would resume from checkpoint k, or keeps its state when the spec refuses.
void ApplyReload(const StatefulOp& op, StatefulModel* m) {
  ResolvePending(m);
  // Retention after those commits may have removed it: the load then fails (docs/SEMANTICS.md §3).
  const auto kept = m->on_disk.find(op.iteration);
  if (kept == m->on_disk.end()) {
    m->expect_ok = false;
    return;
  }
  const StatefulCheckpoint& ckpt = kept->second;
  std::vector<TrainingState> expected;
  m->expect_ok = ExpectedResume(ckpt.run, *ckpt.states, m->run, LoadFlags(), &expected).ok();
  if (!m->expect_ok) return;
  m->states = std::move(expected);
  m->must_exit = false;
  m->runtime_frozen = false;  // the reloaded groups are a fresh process's, in config order
}

std::string RunReload(const StatefulOp& op, const StatefulModel& m, const StatefulModel& next,
                      StatefulSut* sut) {
  Count(sut, "Reload");
  sut->events.insert("reload in the same process");
  if (m.committed && op.iteration < m.committed->iteration) {
    sut->events.insert("reload of a checkpoint older than the tracker's");
  }
  if (m.pending) sut->events.insert("reload while an async save was pending");
  if (m.pending && m.pending->iteration == op.iteration) {
    sut->events.insert("reload of the checkpoint an async save was still writing");
  }
  if (sut->loads_in_process > 0) sut->events.insert("reload after an earlier load in the process");
  ResumeOptions options;
  options.iteration = op.iteration;
  const Status status =
      ReloadInProcess(sut->under_test->target(), sut->run, sut->states, options, &sut->states);
  sut->live.reset();  // the load completed a pending save
  if (status.ok()) ++sut->loads_in_process;
  const std::string after = CheckAfter("Reload", status, next, *sut);
  if (!after.empty()) return after;
  // The state at k exactly: a checkpoint this very run saved (no freeze or run change since, no
  // runtime freeze in it) comes back as a restarted process holds it, whatever the process
  // trained, saved or cached since.
  const auto kept = next.on_disk.find(op.iteration);
  if (status.ok() && kept != next.on_disk.end() && kept->second.run_version == m.run_version &&
      !kept->second.runtime_frozen) {
    const StatefulCheckpoint& ckpt = kept->second;
    if (sut->stats) ++sut->stats->by_kind["  (the state at k checked after the reload)"];
    std::vector<TrainingState> at_k;
    for (const TrainingState& s : *ckpt.states) at_k.push_back(Restarted(s));
    const std::string difference = FirstRunDifference(sut->states, at_k);
    if (!difference.empty()) {
      return "the reloaded process differs from the state at iteration " +
             std::to_string(op.iteration) + ": " + difference;
    }
  }
  return "";
}

}  // namespace

bool OpApplies(const StatefulOp& op, const StatefulModel& m) {
  switch (op.kind) {
    case OpKind::kTrain:
      return m.alive && !m.must_exit;
    case OpKind::kSave:
      return m.alive && (op.train_first == 0 || !m.must_exit);
    case OpKind::kCrash:
      return m.alive && m.fault_injection &&
             static_cast<size_t>(op.completed_first) <= SavesInFlight(m);
    case OpKind::kFinalize:
      return m.alive && m.pending.has_value();
    case OpKind::kRerunFault:
      if (!m.alive || m.must_exit) return false;
      for (const TrainingState& s : m.states) {
        if (!CanRerunFault(s)) return false;
      }
      return true;
    case OpKind::kRestart:
      return op.restart == RestartKind::kSameRun || op.run.configs.size() == m.run.configs.size();
    case OpKind::kFreeze: {
      if (!m.alive || m.must_exit || op.module >= m.states.size()) return false;
      const TrainingState& s = m.states[op.module];
      int trainable_other = 0, trainable_this = 0;
      for (size_t p = 0; p < s.specs.size(); ++p) {
        if (s.params[p].frozen) continue;
        (s.specs[p].key == op.key ? trainable_this : trainable_other)++;
      }
      return trainable_this > 0 && trainable_other > 0;
    }
    case OpKind::kHeal:
      return m.alive && !m.must_exit;
    case OpKind::kUnfreeze: {
      if (!m.alive || m.must_exit || op.module >= m.states.size()) return false;
      const std::vector<std::string> keys = UnfreezableKeys(m, op.module);
      return std::find(keys.begin(), keys.end(), op.key) != keys.end();
    }
    case OpKind::kReload: {
      const std::vector<int64_t> its = ReloadableIterations(m);
      return std::find(its.begin(), its.end(), op.iteration) != its.end();
    }
  }
  return false;
}

void ApplyOp(const StatefulOp& op, StatefulModel* m) {
  switch (op.kind) {
    case OpKind::kTrain:
      m->expect_ok = TrainRun(m->states.Mutable(), op.n).ok();
      if (!m->expect_ok) m->must_exit = true;
      return;
    case OpKind::kSave:
      if (op.train_first > 0 && !TrainRun(m->states.Mutable(), op.train_first).ok()) {
        m->expect_ok = false;
        m->must_exit = true;
        return;
      }
      ApplySave(m, op.async);
      return;
    case OpKind::kFinalize:
      ResolvePending(m);
      m->expect_ok = true;
      return;
    case OpKind::kRerunFault:
      m->expect_ok = true;
      for (TrainingState& s : *m->states.Mutable())
        m->expect_ok = RerunFaultStep(&s).ok() && m->expect_ok;
      m->must_exit = true;
      return;
    case OpKind::kCrash:
      ApplyCrash(op, m);
      return;
    case OpKind::kRestart:
      ApplyRestart(op, m);
      return;
    case OpKind::kFreeze:
    case OpKind::kUnfreeze:
      m->expect_ok = ChangeKeyFrozen(op, &(*m->states.Mutable())[op.module]).ok();
      m->run.configs[op.module].frozen = m->states[op.module].config.frozen;
      ++m->run_version;
      // Only Megatron's freezing changes the groups (torch.optim's keep every parameter).
      if (m->states[op.module].config.optimizer.freeze_family == FreezeFamily::kMegatron) {
        m->runtime_frozen = true;
      }
      return;
    case OpKind::kHeal:
      ApplyHeal(m);
      return;
    case OpKind::kReload:
      ApplyReload(op, m);
      return;
  }
}

std::string RunOp(const StatefulOp& op, const StatefulModel& before, const StatefulModel& next,
                  StatefulSut* sut) {
  switch (op.kind) {
    case OpKind::kTrain:
      Count(sut, "Train");
      return CheckAfter("Train", TrainSut(op.n, sut), next, *sut);
    case OpKind::kSave:
      return RunSave(op, next, sut);
    case OpKind::kFinalize: {
      Count(sut, "Finalize");
      const Status status = sut->under_test->target().engine().Finalize();
      sut->live.reset();
      return CheckAfter("Finalize", status, next, *sut);
    }
    case OpKind::kRerunFault: {
      Count(sut, "RerunFault");
      sut->events.insert("rerun fault");
      Status status;
      for (TrainingState& s : sut->states) {
        const Status one = RerunFaultStep(&s);
        if (status.ok()) status = one;
      }
      return CheckAfter("RerunFault", status, next, *sut);
    }
    case OpKind::kCrash:
      return RunCrash(op, before, next, sut);
    case OpKind::kRestart:
      return RunRestart(op, before, next, sut);
    case OpKind::kFreeze: {
      Count(sut, "Freeze");
      sut->events.insert("freeze");
      const Status status = ChangeKeyFrozen(op, &sut->states[op.module]);
      sut->run.configs[op.module].frozen = sut->states[op.module].config.frozen;
      return CheckAfter("Freeze", status, next, *sut);
    }
    case OpKind::kHeal:
      return RunHeal(next, sut);
    case OpKind::kUnfreeze: {
      Count(sut, "Unfreeze");
      sut->events.insert("unfreeze");
      const TrainingState& s = sut->states[op.module];
      for (size_t p = 0; p < s.specs.size(); ++p) {
        if (s.specs[p].key == op.key && HasOptimizerState(s.params[p])) {
          sut->events.insert("unfreeze of a parameter that kept its optimizer state");
          break;
        }
      }
      const Status status = ChangeKeyFrozen(op, &sut->states[op.module]);
      sut->run.configs[op.module].frozen = sut->states[op.module].config.frozen;
      return CheckAfter("Unfreeze", status, next, *sut);
    }
    case OpKind::kReload:
      return RunReload(op, before, next, sut);
  }
  return "unknown operation";
}

std::string DescribeOp(const StatefulOp& op) {
  switch (op.kind) {
    case OpKind::kTrain:
      return "Train(" + std::to_string(op.n) + ")";
    case OpKind::kSave:
      return (op.train_first > 0 ? "Train(" + std::to_string(op.train_first) + "), then " : "") +
             std::string("Save(") + (op.async ? "async" : "sync") + ", plan cache " +
             (op.cached ? "on" : "off") + ")";
    case OpKind::kFinalize:
      return "Finalize";
    case OpKind::kRerunFault:
      return "RerunFault(NaN loss reproduced in place -> WILL_RERUN_FROM_CHECKPOINT, exit 16)";
    case OpKind::kCrash:
      if (op.at_op >= 0) {
        return "Crash(" +
               (op.completed_first > 0
                    ? "a Poll completes each of the " + std::to_string(op.completed_first) +
                          " oldest async saves in flight, then "
                    : std::string()) +
               "a sync save crashes at its storage op " + std::to_string(op.at_op) +
               "; power loss)";
      }
      return "Crash(power loss right after a sync save returned)";
    case OpKind::kRestart:
      switch (op.restart) {
        case RestartKind::kSameRun:
          return "Restart(the same run, no flags)";
        case RestartKind::kAddParameter:
          return "Restart(the run with " + op.added + ", no flags)";
        case RestartKind::kOtherRun:
          return "Restart(" + DescribeLoadFlags(op.flags) + "; " + DescribeRun(op.run) + ")";
      }
      break;
    case OpKind::kFreeze:
      return "Freeze(every instance of '" + op.key + "'" +
             (op.module ? " in module " + std::to_string(op.module) : "") + ")";
    case OpKind::kHeal:
      return "Heal(a joining replica takes the live state from its peer, which exits)";
    case OpKind::kUnfreeze:
      return "Unfreeze(every instance of '" + op.key + "'" +
             (op.module ? " in module " + std::to_string(op.module) : "") + ")";
    case OpKind::kReload:
      return "Reload(the checkpoint of iteration " + std::to_string(op.iteration) +
             ", in the same process)";
  }
  return "unknown operation";
}

size_t SavesInFlight(const StatefulModel& m) {
  return m.earlier_pending.size() + (m.pending ? 1 : 0);
}

Status StartScenario(const TargetFactory& factory, const RunSpec& run, StatefulModel* model,
                     StatefulSut* sut, const TargetOptions& options) {
  *model = StatefulModel();
  model->capabilities = factory.capabilities;
  model->max_in_flight = factory.capabilities.overlapping_async ? options.max_async_in_flight : 1;
  model->keep_last = options.keep_last;
  model->fault_injection = factory.fault_injection;
  model->run = run;
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(run, model->states.Mutable()));
  sut->under_test = factory.make(options);
  sut->run = run;
  sut->alive = true;
  sut->states = model->states;
  return Status::OK();
}

Status RunWithAddedParameter(const RunSpec& run, size_t module, bool prefer_bias, RunSpec* out,
                             std::string* added) {
  if (module >= run.configs.size()) {
    return Status::InvalidArgument("module " + std::to_string(module) + " does not exist");
  }
  RunSpec grown = run;
  TrainingConfig& c = grown.configs[module];
  const Layout& layout = grown.layout.modules()[module].layout;
  if (!c.model.add_bias && prefer_bias) {
    c.model.add_bias = true;
    *added = "biases";
  } else {
    c.model.num_layers += static_cast<int>(layout.pp());
    *added = std::to_string(layout.pp()) + " more layer(s)";
  }
  *added += c.model.name.empty() ? "" : " in module '" + c.model.name + "'";
  CKPTSPEC_RETURN_IF_ERROR(ValidateModelForLayout(c.model, layout));
  // A stacked key is frozen in every instance or none (state_sharding.h): the new layers'
  // instances of a frozen key are frozen too.
  std::vector<std::string> frozen_keys;
  for (const ParameterSpec& p : ModelParameters(run.configs[module].model)) {
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
  CKPTSPEC_RETURN_IF_ERROR(ValidateTrainingConfig(c));
  *out = std::move(grown);
  return Status::OK();
}

std::vector<int64_t> ReloadableIterations(const StatefulModel& m) {
  std::vector<int64_t> out;
  if (!m.alive) return out;
  auto add = [&m, &out](const StatefulCheckpoint& ckpt) {
    bool same_layout = ckpt.run.layout.modules().size() == m.run.layout.modules().size();
    for (size_t i = 0; same_layout && i < m.run.layout.modules().size(); ++i) {
      same_layout = ckpt.run.layout.modules()[i].layout.ToString() ==
                    m.run.layout.modules()[i].layout.ToString();
    }
    if (!same_layout && !m.capabilities.resharding) return;
    if (std::find(out.begin(), out.end(), ckpt.iteration) == out.end()) {
      out.push_back(ckpt.iteration);
    }
  };
  for (const auto& [iteration, ckpt] : m.on_disk) add(ckpt);
  for (const StatefulCheckpoint& ckpt : m.earlier_pending) add(ckpt);
  if (m.pending) add(*m.pending);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> FreezableKeys(const StatefulModel& m, size_t module) {
  std::vector<std::string> keys;
  if (!m.alive || module >= m.states.size()) return keys;
  const TrainingState& s = m.states[module];
  for (size_t p = 0; p < s.specs.size(); ++p) {
    const std::string& key = s.specs[p].key;
    if (!s.params[p].frozen && std::find(keys.begin(), keys.end(), key) == keys.end()) {
      keys.push_back(key);
    }
  }
  if (keys.size() < 2) keys.clear();
  return keys;
}

std::vector<std::string> UnfreezableKeys(const StatefulModel& m, size_t module) {
  std::vector<std::string> keys;
  if (!m.alive || module >= m.states.size()) return keys;
  const TrainingState& s = m.states[module];
  if (s.config.optimizer.freeze_family != FreezeFamily::kTorchOptim) return keys;
  for (size_t p = 0; p < s.specs.size(); ++p) {
    const std::string& key = s.specs[p].key;
    if (s.params[p].frozen && std::find(keys.begin(), keys.end(), key) == keys.end()) {
      keys.push_back(key);
    }
  }
  return keys;
}

}  // namespace ckptspec
