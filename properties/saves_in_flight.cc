#include "properties/saves_in_flight.h"

#include <algorithm>

#include <rapidcheck.h>

#include "harness/harness.h"
#include "harness/storage_util.h"

namespace ckptspec {

std::vector<int64_t> CheckpointsThatMustSurvive(const std::vector<int64_t>& committed,
                                                int keep_last) {
  std::vector<int64_t> all = committed;
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (keep_last <= 0 || committed.empty()) return all;
  std::vector<int64_t> kept(all.end() - std::min<size_t>(all.size(), keep_last), all.end());
  if (std::find(kept.begin(), kept.end(), committed.back()) == kept.end()) {
    kept.insert(std::lower_bound(kept.begin(), kept.end(), committed.back()), committed.back());
  }
  return kept;
}

std::string JudgeSurvivors(Target& target, const RunSpec& run, const std::vector<int64_t>& saves,
                           const std::vector<bool>& failed, size_t at_least, int keep_last,
                           size_t* t) {
  *t = saves.size();
  if (at_least >= saves.size())
    return "no save reported success at index " + std::to_string(at_least);
  std::vector<TrainingState> resumed, expected;
  const Status resume = ResumeRun(target, run, ResumeOptions(), &resumed);
  if (!resume.ok()) return "a fresh process cannot resume: " + resume.ToString();
  const int64_t got = resumed.front().iteration;
  // The last save of that iteration (a later save of an iteration replaces its checkpoint).
  for (size_t j = saves.size(); j-- > 0 && *t == saves.size();) {
    if (saves[j] == got) *t = j;
  }
  if (*t == saves.size())
    return "resumes iteration " + std::to_string(got) + ", which no save made";
  if (*t < at_least) {
    return "resumes iteration " + std::to_string(got) + ", though the save of " +
           std::to_string(saves[at_least]) + " had reported success";
  }
  Status status = ExpectedAtIteration(run, got, &expected);
  if (!status.ok())
    return "the spec's state of iteration " + std::to_string(got) + ": " + status.ToString();
  std::string difference = FirstRunDifference(resumed, expected);
  if (!difference.empty()) {
    return "the resumed state is not iteration " + std::to_string(got) + "'s: " + difference;
  }
  const std::vector<int64_t> up_to_t(saves.begin(), saves.begin() + static_cast<ptrdiff_t>(*t) + 1);
  for (int64_t it : CheckpointsThatMustSurvive(up_to_t, keep_last)) {
    bool sure = it == got;
    for (size_t j = 0; j <= *t; ++j) sure = sure || (saves[j] == it && !failed[j]);
    if (!sure || it == got) continue;
    ResumeOptions explicitly;
    explicitly.iteration = it;
    std::vector<TrainingState> loaded;
    status = ResumeRun(target, run, explicitly, &loaded);
    if (!status.ok()) {
      return "iteration " + std::to_string(it) + " must survive (keep_last " +
             std::to_string(keep_last) + " of the checkpoints committed up to " +
             std::to_string(got) + "), but its load fails: " + status.ToString();
    }
    status = ExpectedAtIteration(run, it, &expected);
    if (!status.ok())
      return "the spec's state of iteration " + std::to_string(it) + ": " + status.ToString();
    difference = FirstRunDifference(loaded, expected);
    if (!difference.empty()) {
      return "iteration " + std::to_string(it) + " loads another state: " + difference;
    }
  }
  return "";
}

InFlightSchedule DrawInFlightSchedule(bool bound_covers_saves) {
  InFlightSchedule schedule;
  const size_t saves = *rc::gen::inRange<size_t>(2, 4);
  for (size_t j = 0; j < saves; ++j) {
    schedule.steps.push_back(*rc::gen::inRange<int64_t>(1, 3));
    schedule.poll_after.push_back(*rc::gen::inRange(0, 3) == 0);
  }
  schedule.bound = bound_covers_saves ? static_cast<int>(saves) : *rc::gen::inRange(2, 4);
  schedule.keep_last = *rc::gen::inRange(1, 3);
  return schedule;
}

std::string DescribeInFlightSchedule(const InFlightSchedule& schedule,
                                     const std::vector<int64_t>& iterations) {
  std::string text = std::to_string(schedule.saves()) + " async saves at";
  for (size_t j = 0; j < iterations.size(); ++j) {
    text += (j == 0 ? " " : ", ") + std::to_string(iterations[j]);
  }
  text += " with at most " + std::to_string(schedule.bound) + " in flight, keep_last " +
          std::to_string(schedule.keep_last);
  std::string polls;
  for (size_t j = 0; j < schedule.poll_after.size(); ++j) {
    if (schedule.poll_after[j]) polls += (polls.empty() ? "" : ", ") + std::to_string(j + 1);
  }
  if (!polls.empty()) text += ", polling after save(s) " + polls;
  return text;
}

const char* OutcomeName(InFlightDriver::Outcome outcome) {
  switch (outcome) {
    case InFlightDriver::Outcome::kInFlight:
      return "in flight";
    case InFlightDriver::Outcome::kSucceeded:
      return "succeeded";
    case InFlightDriver::Outcome::kFailed:
      return "failed";
    case InFlightDriver::Outcome::kUnknown:
      return "completed, succeeded or failed";
  }
  return "?";
}

size_t InFlightDriver::InFlight() const {
  return static_cast<size_t>(std::count(outcomes_.begin(), outcomes_.end(), Outcome::kInFlight));
}

void InFlightDriver::CompleteOldest(const Status& status) {
  const auto oldest = std::find(outcomes_.begin(), outcomes_.end(), Outcome::kInFlight);
  if (oldest != outcomes_.end()) *oldest = status.ok() ? Outcome::kSucceeded : Outcome::kFailed;
}

void InFlightDriver::Note(const std::string& call, const Status& status) {
  if (!status.ok()) ++errors_;
  trace_ += "    " + call + ": " + status.ToString() + "\n";
}

Status InFlightDriver::Save(const std::function<Status()>& save) {
  const bool full = InFlight() >= static_cast<size_t>(std::max(1, bound_));
  const Status status = save();
  if (full) CompleteOldest(status);
  if (status.ok()) outcomes_.push_back(Outcome::kInFlight);
  Note("Save #" + std::to_string(outcomes_.size() + (status.ok() ? 0 : 1)), status);
  return status;
}

Status InFlightDriver::Poll() {
  bool complete = false;
  const Status status = engine_->Poll(&complete);
  if (InFlight() > 0) CompleteOldest(status);
  Note(std::string("Poll") + (complete ? " (none left in flight)" : ""), status);
  return status;
}

Status InFlightDriver::Finalize() {
  const Status status = engine_->Finalize();
  for (Outcome& outcome : outcomes_) {
    if (outcome == Outcome::kInFlight)
      outcome = status.ok() ? Outcome::kSucceeded : Outcome::kUnknown;
  }
  Note("Finalize", status);
  return status;
}

size_t InFlightDriver::reported() const {
  size_t n = 0;
  while (n < outcomes_.size() && outcomes_[n] == Outcome::kSucceeded) ++n;
  return n;
}

}  // namespace ckptspec
