#include "properties/harness.h"

namespace ckptspec {

Status SaveRun(Target& target, const RunSpec& run, const std::vector<TrainingState>& states,
               int64_t iteration, const SaveOptions& options) {
  std::vector<ShardedStateDict> dicts;
  CKPTSPEC_RETURN_IF_ERROR(target.framework()
                               .ToStateDicts(run.layout, states, run.sharding, &dicts)
                               .WithContext("framework"));
  return target.engine().Save(iteration, dicts, options);
}

Status ResumeRun(Target& target, const RunSpec& run, const ResumeOptions& options,
                 std::vector<TrainingState>* states, CheckpointInfo* info) {
  // Read the common state first: one empty template per rank requests no key.
  LoadRequest probe;
  probe.iteration = options.iteration;
  probe.templates.resize(run.layout.world_size());
  LoadResult probed;
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Load(std::move(probe), &probed));
  if (probed.state.empty()) return Status::Corruption("the engine returned no common state");
  CheckpointInfo saved;
  CKPTSPEC_RETURN_IF_ERROR(target.framework()
                               .ReadCheckpointInfo(probed.state[0].common, &saved)
                               .WithContext("framework"));
  LoadRequest request;
  request.iteration = probed.iteration;
  request.strict = options.strict;
  CKPTSPEC_RETURN_IF_ERROR(
      target.framework()
          .LoadTemplates(run.layout, run.configs, saved, options.flags, &request.templates)
          .WithContext("framework"));
  const std::vector<ShardedStateDict> requested = RequestedSpecs(request.templates);
  LoadResult loaded;
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Load(std::move(request), &loaded));
  const LoadedCheckpoint load{loaded.state, requested,   saved,
                              run.layout,   run.configs, options.flags};
  CKPTSPEC_RETURN_IF_ERROR(
      target.framework().FromStateDicts(load, states).WithContext("framework"));
  if (info) *info = std::move(saved);
  return Status::OK();
}

}  // namespace ckptspec
