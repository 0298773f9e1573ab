// B06 rerun-inplace-resume. Upstream: https://github.com/NVIDIA/Megatron-LM/pull/3981 (#3884).
//
// Mechanism: a transient NaN leaves the RerunStateMachine in RERUNNING_IN_PLACE and a forensic
// checkpoint is saved (exit code 17). The state enum is persisted but saved_state (the in-memory
// RNG snapshot the in-place rerun restores) deliberately is not, so _restore_state() subscripts
// None on resume. The spec refuses to checkpoint that state (CheckpointPayload). The mutant:
// ToStateDicts persists it anyway -- it builds the payload as for a persistable state and writes
// RERUNNING_IN_PLACE into every rank's rerun object and the common state. The save succeeds; the
// resume fails (the payload names a state whose data was never saved). S->L.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {
namespace {

bool RerunningInPlace(const std::vector<TrainingState>& states) {
  return !states.empty() && states[0].rerun.state == RerunState::kRerunningInPlace;
}

}  // namespace

ReplacedParts B06Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.before_save = [](std::vector<TrainingState>* states) {
    if (!RerunningInPlace(*states)) return Status::OK();
    // The payload of every field that IS persisted.
    for (TrainingState& s : *states) s.rerun.state = RerunState::kWillRerunFromCheckpoint;
    return Status::OK();
  };
  edits.after_save = [](const std::vector<TrainingState>& states,
                        std::vector<ShardedStateDict>* every_rank) {
    if (!RerunningInPlace(states)) return Status::OK();
    const int in_place = static_cast<int>(RerunState::kRerunningInPlace);
    for (ShardedStateDict& d : *every_rank) {
      if (d.common->contains("rerun_state_machine"))
        (*d.common.Mutable())["rerun_state_machine"]["state"] = in_place;
      for (ShardedObject& o : d.objects) {
        if (o.spec.key != "rerun_state_machine_state" || o.data.empty()) continue;
        nlohmann::json j = nlohmann::json::parse(o.data);
        j["state"] = in_place;
        o.data = j.dump();
      }
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
