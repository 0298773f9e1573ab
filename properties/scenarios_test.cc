// The scenarios the resuming properties share (scenarios.h): every one resumes in a new process,
// which gets a fresh framework object over the same storage; and a framework that keeps
// per-process state which never changes its results (targets/target.h, FrameworkLayer) passes them.
#include "properties/scenarios.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "generators/run_gen.h"
#include "model/describe.h"
#include "harness/harness.h"
#include "properties/property_util.h"
#include "targets/mutants/mutant_target.h"

namespace ckptspec {
namespace {

// The frameworks of one factory: how many were made, and which made each call.
struct ProcessLog {
  std::mutex mu;
  int made = 0;
  std::set<int> saved_by, loaded_by;
};

// A framework as real ones are: it memoizes its load templates in a per-process cache (keyed by
// the run's description, the flags and the checkpoint's common state: enough here, where each
// process loads one run), which never changes a result; it records which process (object) saved
// and which loaded.
class MemoizingFramework : public CanonicalFramework {
 public:
  explicit MemoizingFramework(ProcessLog* log) : log_(log) {
    std::lock_guard<std::mutex> lock(log_->mu);
    process_ = ++log_->made;
  }
  Status ToStateDicts(const HeterogeneousLayout& layout, const std::vector<TrainingState>& states,
                      const ShardingConfig& sharding,
                      std::vector<ShardedStateDict>* every_rank) const override {
    Note(&log_->saved_by);
    return CanonicalFramework::ToStateDicts(layout, states, sharding, every_rank);
  }
  Status LoadTemplates(const HeterogeneousLayout& layout,
                       const std::vector<TrainingConfig>& configs, const CheckpointInfo& saved,
                       const LoadFlags& flags,
                       std::vector<ShardedStateDict>* every_rank) const override {
    Note(&log_->loaded_by);
    RunSpec run;
    run.layout = layout;
    run.configs = configs;
    const std::string key = DescribeRun(run) + DescribeLoadFlags(flags) + saved.common.dump();
    auto hit = templates_.find(key);
    if (hit == templates_.end()) {
      std::vector<ShardedStateDict> made;
      CKPTSPEC_RETURN_IF_ERROR(
          CanonicalFramework::LoadTemplates(layout, configs, saved, flags, &made));
      hit = templates_.emplace(key, std::move(made)).first;
    }
    *every_rank = hit->second;
    return Status::OK();
  }

 private:
  void Note(std::set<int>* by) const {
    std::lock_guard<std::mutex> lock(log_->mu);
    by->insert(process_);
  }
  ProcessLog* log_;
  int process_ = 0;
  // This process's cache: gone with the object, i.e. at the next NewProcess.
  mutable std::map<std::string, std::vector<ShardedStateDict>> templates_;
};

TargetFactory MemoizingFactory(ProcessLog* log) {
  return MutantTargetFactory("memoizing", [log](int /*process*/) {
    ReplacedParts parts;
    parts.framework = std::make_unique<MemoizingFramework>(log);
    return parts;
  });
}

RC_GTEST_PROP(Scenarios, ResumeEquivalenceSavesAndLoadsInTwoProcesses, ()) {
  const RunSpec run = *gen::RunUpTo(8);
  ProcessLog log;
  const TargetFactory factory = MemoizingFactory(&log);
  const int before = log.made;  // the factory made one target to read its capabilities
  CKPTSPEC_RC_ASSERT_OK(ResumeEquivalenceScenario(factory, run, 1, 1, false));
  RC_ASSERT(log.made == before + 2);
  RC_ASSERT(log.saved_by == std::set<int>{before + 1});
  RC_ASSERT(log.loaded_by == std::set<int>{before + 2});
}

RC_GTEST_PROP(Scenarios, RoundTripAndSaveRestartResumeLoadInANewProcess, ()) {
  const RunSpec run = *gen::RunUpTo(8);
  ProcessLog log;
  const TargetFactory factory = MemoizingFactory(&log);
  CKPTSPEC_RC_ASSERT_OK(RoundTripScenario(factory, run, 1));
  RC_ASSERT(log.saved_by.size() == 1 && log.loaded_by.size() == 1);
  RC_ASSERT(*log.saved_by.begin() != *log.loaded_by.begin());

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, 2));
  RestartedResume r;
  CKPTSPEC_RC_ASSERT_OK(SaveRestartResume(factory, run, states, run, LoadFlags(), &r));
  CKPTSPEC_RC_ASSERT_OK(r.spec);
  CKPTSPEC_RC_ASSERT_OK(r.got);
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(r.resumed, r.expected), "resumed vs the spec");
}

}  // namespace
}  // namespace ckptspec
