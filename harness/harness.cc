#include "harness/harness.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "model/chunk_resolve.h"

namespace ckptspec {

Status SaveRun(Target& target, const RunSpec& run, const std::vector<TrainingState>& states,
               int64_t iteration, const SaveOptions& options) {
  std::vector<ShardedStateDict> dicts;
  CKPTSPEC_RETURN_IF_ERROR(target.framework()
                               .ToStateDicts(run.layout, states, run.sharding, &dicts)
                               .WithContext("framework"));
  return target.engine().Save(iteration, std::move(dicts), options);
}

size_t WriteStateInPlace(const std::vector<ShardedStateDict>& fresh,
                         std::vector<ShardedStateDict>* live) {
  size_t written = 0;
  for (size_t r = 0; r < fresh.size() && r < live->size(); ++r) {
    ShardedStateDict& d = (*live)[r];
    for (size_t i = 0; i < d.tensors.size() && i < fresh[r].tensors.size(); ++i) {
      const ShardedTensor& from = fresh[r].tensors[i];
      ShardedTensor& to = d.tensors[i];
      if (!(from.spec == to.spec) || from.data.size() != to.data.size()) continue;
      std::copy(from.data.begin(), from.data.end(), to.data.begin());
      ++written;
    }
    for (size_t i = 0; i < d.objects.size() && i < fresh[r].objects.size(); ++i) {
      if (fresh[r].objects[i].spec == d.objects[i].spec)
        d.objects[i].data = fresh[r].objects[i].data;
    }
    d.common = fresh[r].common;
  }
  return written;
}

namespace {

// Fills every rank's templates; returns the filled dicts in *loaded (the templates are moved in).
using FillTemplates = std::function<Status(std::vector<ShardedStateDict> templates,
                                           std::vector<ShardedStateDict>* loaded)>;

// The framework's side of a load, whatever fills the templates: the saved info from `common`,
// the templates for `run` under `flags`, `fill`, then FromStateDicts (with the reloading
// process's `live` states, or null).
Status LoadThroughFramework(const FrameworkLayer& framework, const RunSpec& run,
                            const LoadFlags& flags, const nlohmann::json& common,
                            const FillTemplates& fill, const std::vector<TrainingState>* live,
                            std::vector<TrainingState>* states, CheckpointInfo* info) {
  CheckpointInfo saved;
  CKPTSPEC_RETURN_IF_ERROR(framework.ReadCheckpointInfo(common, &saved).WithContext("framework"));
  std::vector<ShardedStateDict> templates;
  CKPTSPEC_RETURN_IF_ERROR(
      framework.LoadTemplates(run.layout, run.configs, saved, flags, &templates)
          .WithContext("framework"));
  const std::vector<ShardedStateDict> requested = RequestedSpecs(templates);
  std::vector<ShardedStateDict> loaded;
  CKPTSPEC_RETURN_IF_ERROR(fill(std::move(templates), &loaded));
  const LoadedCheckpoint load{loaded, requested, saved, run.layout, run.configs, flags, live};
  CKPTSPEC_RETURN_IF_ERROR(framework.FromStateDicts(load, states).WithContext("framework"));
  if (info) *info = std::move(saved);
  return Status::OK();
}

// ResumeRun, with the reloading process's `live` states (or null) handed to the framework.
Status LoadFromStorage(Target& target, const RunSpec& run, const ResumeOptions& options,
                       const std::vector<TrainingState>* live, std::vector<TrainingState>* states,
                       CheckpointInfo* info) {
  // Read the common state first: one empty template per rank requests no key.
  LoadRequest probe;
  probe.iteration = options.iteration;
  probe.templates.resize(run.layout.world_size());
  LoadResult probed;
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Load(std::move(probe), &probed));
  if (probed.state.empty()) return Status::Corruption("the engine returned no common state");
  const FillTemplates from_storage = [&](std::vector<ShardedStateDict> templates,
                                         std::vector<ShardedStateDict>* loaded) -> Status {
    LoadRequest request;
    request.iteration = probed.iteration;
    request.strict = options.strict;
    request.templates = std::move(templates);
    LoadResult result;
    CKPTSPEC_RETURN_IF_ERROR(target.engine().Load(std::move(request), &result));
    *loaded = std::move(result.state);
    return Status::OK();
  };
  return LoadThroughFramework(target.framework(), run, options.flags, probed.state[0].common,
                              from_storage, live, states, info);
}

}  // namespace

Status ResumeRun(Target& target, const RunSpec& run, const ResumeOptions& options,
                 std::vector<TrainingState>* states, CheckpointInfo* info) {
  return LoadFromStorage(target, run, options, nullptr, states, info);
}

Status ReloadInProcess(Target& target, const RunSpec& run, const std::vector<TrainingState>& live,
                       const ResumeOptions& options, std::vector<TrainingState>* states) {
  std::vector<TrainingState> reloaded;
  CKPTSPEC_RETURN_IF_ERROR(LoadFromStorage(target, run, options, &live, &reloaded, nullptr));
  *states = std::move(reloaded);
  return Status::OK();
}

Status JoinFromPeer(const FrameworkLayer& joiner, const RunSpec& run,
                    const std::vector<ShardedStateDict>& peer_dicts,
                    std::vector<TrainingState>* states) {
  if (peer_dicts.empty()) return Status::InvalidArgument("the peer handed over no state dicts");
  const FillTemplates from_peer = [&](std::vector<ShardedStateDict> templates,
                                      std::vector<ShardedStateDict>* loaded) -> Status {
    for (size_t r = 0; r < templates.size(); ++r) {
      CKPTSPEC_RETURN_IF_ERROR(ResolveFromSaved(peer_dicts, static_cast<int64_t>(r), &templates[r])
                                   .WithContext("peer state"));
    }
    *loaded = std::move(templates);
    return Status::OK();
  };
  return LoadThroughFramework(joiner, run, LoadFlags(), peer_dicts[0].common, from_peer, nullptr,
                              states, nullptr);
}

}  // namespace ckptspec
