// B04 cached-plan-drops-rerun. Upstream: https://github.com/NVIDIA/Megatron-LM/pull/4448
// (issue #4378).
//
// Mechanism: with --ckpt-assume-constant-structure the save plan is cached after the first save
// and create_local_plan() never runs again (the local plan is frozen), with sharding validation
// off. Through v0.17 RerunStateMachine.state_dict() returned None in steady state and a
// ShardedObject "rerun_state_machine_state" only in a fault: the stale plan silently omits it while
// the common state marks the machine active; the tracker moves on; the resume raises "Missing key
// ... rerun_state_machine_state/shard_X_<ws>". Two parts, both reproduced:
//  - the deviation: StaleKeySetPlanCache::Lookup returns the cached plan whatever the fingerprint
//    (the reference re-plans whenever the structure changed: P7);
//  - the trigger it needs, Megatron before v0.18: the framework emits the rerun object only when the
//    machine is not in steady state (payload state != NOT_RUNNING_YET), requests it on load only
//    when the checkpoint's common state marks the machine active, and otherwise rebuilds with the
//    steady-state sentinel. On its own this framework is correct (the reference cache re-plans).
// S->L: the fault save "succeeds", the resume fails.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {
namespace {

constexpr const char* kRerunKey = "rerun_state_machine_state";

class StaleKeySetPlanCache : public PlanCache {
 public:
  const SavePlan* Lookup(uint64_t /*fingerprint*/) const override {
    if (!plan_) return nullptr;
    ++hits_;
    return &*plan_;
  }
};

bool SteadyPayload(const std::string& data) {
  const nlohmann::json j = nlohmann::json::parse(data, nullptr, false);
  return j.is_object() && j.contains("state") && j["state"] == 0;
}

bool RerunActive(const nlohmann::json& common) {
  return common.contains("rerun_state_machine") &&
         common["rerun_state_machine"].contains("state") &&
         common["rerun_state_machine"]["state"] != 0;
}

// Removes every rank's rerun object (with `steady_only`, only one whose payload is the steady
// state).
void EraseRerunObjects(bool steady_only, std::vector<ShardedStateDict>* every_rank) {
  for (ShardedStateDict& d : *every_rank) {
    auto& objs = d.objects;
    for (size_t i = objs.size(); i-- > 0;) {
      if (objs[i].spec.key == kRerunKey && (!steady_only || SteadyPayload(objs[i].data)))
        objs.erase(objs.begin() + i);
    }
  }
}

}  // namespace

ReplacedParts B04Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_save = [](const std::vector<TrainingState>&,
                        std::vector<ShardedStateDict>* every_rank) {
    EraseRerunObjects(true, every_rank);  // state_dict() returns None in steady state
    return Status::OK();
  };
  // Requests the rerun object only when the checkpoint's common state marks the machine active.
  edits.after_templates = [](const CheckpointInfo& saved,
                             std::vector<ShardedStateDict>* every_rank) {
    if (!RerunActive(saved.common)) EraseRerunObjects(false, every_rank);
    return Status::OK();
  };
  // Rebuilds with the steady-state sentinel where the rerun object was not requested.
  edits.before_rebuild = [](const LoadedCheckpoint& load, std::vector<ShardedStateDict>* loaded,
                            std::vector<ShardedStateDict>* /*requested*/) {
    const nlohmann::json head =
        load.saved.common.value("rerun_state_machine", nlohmann::json::object());
    nlohmann::json sentinel;
    CKPTSPEC_RETURN_IF_ERROR(CheckpointPayload(RerunStateMachine(), &sentinel));
    for (const char* f : {"mode", "state", "current_iteration"}) {
      if (head.contains(f)) sentinel[f] = head[f];
    }
    MissingEntryFill fill;
    fill.object = [&](size_t, ShardedObject* o) {
      if (o->spec.key != kRerunKey) return false;
      o->data = sentinel.dump();
      return true;
    };
    return ToCanonicalLoad(load, fill, loaded);
  };
  ReplacedParts parts = EditedFrameworkParts(std::move(edits));
  parts.plan_cache = std::make_unique<StaleKeySetPlanCache>();
  return parts;
}

}  // namespace ckptspec
