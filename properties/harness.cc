#include "properties/harness.h"

#include "model/chunk_resolve.h"

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

Status JoinFromPeer(const FrameworkLayer& joiner, const RunSpec& run,
                    const std::vector<ShardedStateDict>& peer_dicts,
                    std::vector<TrainingState>* states) {
  if (peer_dicts.empty()) return Status::InvalidArgument("the peer handed over no state dicts");
  CheckpointInfo saved;
  CKPTSPEC_RETURN_IF_ERROR(
      joiner.ReadCheckpointInfo(peer_dicts[0].common, &saved).WithContext("framework"));
  const LoadFlags flags;
  std::vector<ShardedStateDict> templates;
  CKPTSPEC_RETURN_IF_ERROR(joiner.LoadTemplates(run.layout, run.configs, saved, flags, &templates)
                               .WithContext("framework"));
  const std::vector<ShardedStateDict> requested = RequestedSpecs(templates);
  for (ShardedStateDict& d : templates) {
    CKPTSPEC_RETURN_IF_ERROR(ResolveFromSaved(peer_dicts, &d).WithContext("peer state"));
  }
  const LoadedCheckpoint load{templates, requested, saved, run.layout, run.configs, flags};
  return joiner.FromStateDicts(load, states).WithContext("framework");
}

}  // namespace ckptspec
