#include "targets/mutants/framework_edits.h"

#include <memory>
#include <utility>

namespace ckptspec {
namespace {

class EditedFramework : public CanonicalFramework {
 public:
  explicit EditedFramework(FrameworkEdits edits) : edits_(std::move(edits)) {}

  Status ToStateDicts(const HeterogeneousLayout& layout, const std::vector<TrainingState>& states,
                      const ShardingConfig& sharding,
                      std::vector<ShardedStateDict>* every_rank) const override {
    std::vector<TrainingState> edited;
    if (edits_.before_save) {
      edited = states;
      CKPTSPEC_RETURN_IF_ERROR(edits_.before_save(&edited));
    }
    CKPTSPEC_RETURN_IF_ERROR(CanonicalFramework::ToStateDicts(
        layout, edits_.before_save ? edited : states, sharding, every_rank));
    return edits_.after_save ? edits_.after_save(states, every_rank) : Status::OK();
  }

  Status LoadTemplates(const HeterogeneousLayout& layout,
                       const std::vector<TrainingConfig>& configs, const CheckpointInfo& saved,
                       const LoadFlags& flags,
                       std::vector<ShardedStateDict>* every_rank) const override {
    CheckpointInfo edited;
    if (edits_.before_templates) {
      edited = saved;
      CKPTSPEC_RETURN_IF_ERROR(edits_.before_templates(configs, &edited));
    }
    CKPTSPEC_RETURN_IF_ERROR(CanonicalFramework::LoadTemplates(
        layout, configs, edits_.before_templates ? edited : saved, flags, every_rank));
    return edits_.after_templates ? edits_.after_templates(saved, every_rank) : Status::OK();
  }

  Status FromStateDicts(const LoadedCheckpoint& load,
                        std::vector<TrainingState>* states) const override {
    if (edits_.before_rebuild) {
      std::vector<ShardedStateDict> loaded = load.loaded;
      std::vector<ShardedStateDict> requested = load.requested;
      CKPTSPEC_RETURN_IF_ERROR(edits_.before_rebuild(load, &loaded, &requested));
      const LoadedCheckpoint edited{loaded,       requested,  load.saved, load.layout,
                                    load.configs, load.flags, load.live};
      CKPTSPEC_RETURN_IF_ERROR(CanonicalFramework::FromStateDicts(edited, states));
    } else {
      CKPTSPEC_RETURN_IF_ERROR(CanonicalFramework::FromStateDicts(load, states));
    }
    return edits_.after_rebuild ? edits_.after_rebuild(load, states) : Status::OK();
  }

 private:
  const FrameworkEdits edits_;
};

}  // namespace

ReplacedParts EditedFrameworkParts(FrameworkEdits edits) {
  ReplacedParts parts;
  parts.framework = std::make_unique<EditedFramework>(std::move(edits));
  return parts;
}

}  // namespace ckptspec
