// Several async saves in flight (docs/SEMANTICS.md §3, "Several async saves in flight"): the
// schedules P13, P14 and P20 draw, a driver that runs one on a target and records how each save
// ended by the Engine contract (targets/target.h), and the rule a crash is judged by.
//
// Contracts:
//  - CheckpointsThatMustSurvive is the rule's crash clause: the checkpoints a fresh process must
//    find and load after a power loss, given what had committed.
//  - InFlightDriver runs on an engine under deferred execution (TargetOptions::deferred_async),
//    where the contract says which saves each call completes: an async Save with `bound` saves in
//    flight the oldest (one), a Poll the oldest (one), a Finalize all of them until one fails.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/run_spec.h"
#include "model/status.h"
#include "targets/target.h"

namespace ckptspec {

// The checkpoints that must survive a crash and load: `committed` holds the iterations of the
// complete checkpoints before the saves and of every save that had committed, in schedule order,
// the last being the one the tracker names. That one and the `keep_last` newest (by iteration) of
// them; every one when keep_last is 0. Ascending, each once; empty for an empty `committed`.
std::vector<int64_t> CheckpointsThatMustSurvive(const std::vector<int64_t>& committed,
                                                int keep_last);

// Judges a fresh process on what a schedule of saves left on storage (docs/SEMANTICS.md §3, the
// crash and retention clauses): `saves` are the iterations of the checkpoint the tracker named
// before the schedule and of the schedule's saves, in schedule order, and `failed[j]` whether
// save j reported a failure or may have (such a save may still have committed before it failed).
// The tracker must name saves[t] for some t >= at_least (saves[at_least]: the last one that had
// reported success, at_least < saves.size()), and its load give ExpectedAtIteration's
// state; every checkpoint that must survive whatever the failed saves up to t did
// (CheckpointsThatMustSurvive of saves[0..t], keeping only those that did not fail, and saves[t])
// must load by its iteration with its state. Returns the first violation in words ("" when none)
// and sets *t. Loads only: `target` keeps its storage as it was.
std::string JudgeSurvivors(Target& target, const RunSpec& run, const std::vector<int64_t>& saves,
                           const std::vector<bool>& failed, size_t at_least, int keep_last,
                           size_t* t);

// A drawn schedule of async saves with several in flight.
struct InFlightSchedule {
  int bound = 2;      // TargetOptions::max_async_in_flight
  int keep_last = 1;  // TargetOptions::keep_last, > 0
  // Per save, in schedule order: the training steps before it (>= 1), and whether the loop polls
  // right after scheduling it.
  std::vector<int64_t> steps;
  std::vector<bool> poll_after;
  size_t saves() const { return steps.size(); }
};

// Draws 2 or 3 async saves, 1 or 2 training steps before each, a Poll after one in three, a bound
// of 2 or 3 (at least the number of saves when `bound_covers_saves`: no Save then waits for a
// place) and keep_last 1 or 2. Inside a RapidCheck property only.
InFlightSchedule DrawInFlightSchedule(bool bound_covers_saves);

// "3 async saves at 4, 5, 7 with at most 2 in flight, keep_last 1, polling after the 2nd".
std::string DescribeInFlightSchedule(const InFlightSchedule& schedule,
                                     const std::vector<int64_t>& iterations);

// Runs the calls of a schedule on one engine (deferred execution) and records how each async
// save ended, by the Engine contract.
class InFlightDriver {
 public:
  enum class Outcome { kInFlight, kSucceeded, kFailed, kUnknown };

  InFlightDriver(Engine* engine, int bound) : engine_(engine), bound_(bound) {}

  // An async Save through `save` (which calls Engine::Save for save `scheduled()`): with `bound`
  // saves in flight it first completes the oldest, and on an error it schedules nothing.
  Status Save(const std::function<Status()>& save);
  Status Poll();
  Status Finalize();

  // Per save scheduled, in schedule order. A Finalize that fails does not say how many saves
  // completed before the failing one: every save then in flight becomes kUnknown (and stays so).
  const std::vector<Outcome>& outcomes() const { return outcomes_; }
  size_t scheduled() const { return outcomes_.size(); }
  // The leading saves that succeeded: those that had reported success.
  size_t reported() const;
  // Calls that returned an error.
  int errors() const { return errors_; }
  // One line per call: "Save #2: OK", "Poll: IOError: ...".
  const std::string& trace() const { return trace_; }

 private:
  size_t InFlight() const;
  // The oldest save in flight ended with `status`.
  void CompleteOldest(const Status& status);
  void Note(const std::string& call, const Status& status);

  Engine* engine_;
  int bound_;
  std::vector<Outcome> outcomes_;
  int errors_ = 0;
  std::string trace_;
};

const char* OutcomeName(InFlightDriver::Outcome outcome);

}  // namespace ckptspec
