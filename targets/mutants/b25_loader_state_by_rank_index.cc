// B25 loader-state-by-rank-index. Upstream:
// https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/5637.
//
// Mechanism: Megatron-Bridge saved one Energon dataloader state file per DP rank and, on resume,
// checked only that the current rank's file existed. A DP=2 checkpoint resumed at DP=1 found
// rank 0's file and restored it; rank 1's state was dropped, and Energon re-sharded the dataset
// for the new world size, so the loader went on from rank 0's old position in a shard it had
// never read: samples skipped and repeated, the load reported success. A larger DP size failed
// (the new ranks' files were missing). The fix refuses any DP change. The mutant: under
// per-DP-rank loaders (data_iterator.h), a load whose DP size shrank gives new DP rank r the
// position saved by DP rank r, in shard r of the new DP size, and the run's consumed_samples.
// Every other load, a grown DP size included, is the canonical one (which refuses a DP change).
// Silent; visible to a property that resumes per-DP-rank loaders under a smaller DP size (the
// spec refuses it, L9).
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <map>

#include "model/load_semantics.h"
#include "model/state_entries.h"

namespace ckptspec {
namespace {

class LoaderByRankIndexFramework : public CanonicalFramework {
 public:
  Status FromStateDicts(const LoadedCheckpoint& load,
                        std::vector<TrainingState>* states) const override {
    const std::vector<ModuleLayout>& now = load.layout.modules();
    const std::vector<ModuleLayout>& was = load.saved.layout.modules();
    std::vector<bool> loads_data(now.size(), false), by_index(now.size(), false);
    bool any = false;
    for (size_t m = 0; m < now.size() && m < was.size(); ++m) {
      loads_data[m] =
          StateClassesToLoad(load.flags, load.configs[m], was[m].layout, now[m].layout).data;
      by_index[m] = loads_data[m] && load.configs[m].data.sampler == DataSampler::kPerRank &&
                    was[m].layout.dp() > now[m].layout.dp();
      any = any || by_index[m];
    }
    if (!any) return CanonicalFramework::FromStateDicts(load, states);

    // Every module's saved data iterator as the loaded objects hold it: the shared position and
    // the loaders by the saved DP rank that saved them (the templates request every saved DP
    // rank's object). The canonical rebuild then runs as if the loaders were reset, without
    // them, and each module's iterator is resumed here: by rank index where the DP size shrank,
    // else by the load rules.
    std::vector<std::string> data_key;
    for (const ModuleLayout& ml : now) {
      data_key.push_back(StatePlan::DataIteratorObjectSpec(ml.name, ml.layout, 0, {0}).key);
    }
    std::vector<DataIteratorState> saved(now.size());
    std::vector<std::map<int64_t, RankLoaderState>> saved_loaders(now.size());
    std::vector<ShardedStateDict> without_data = load.loaded;
    for (size_t r = 0; r < without_data.size(); ++r) {
      const int m = load.layout.ModuleOf(static_cast<int64_t>(r));
      std::vector<ShardedObject> kept;
      for (ShardedObject& o : without_data[r].objects) {
        if (o.spec.key != data_key[m]) {
          kept.push_back(std::move(o));
          continue;
        }
        int64_t dp_size = 0;
        RankLoaderState loader;
        CKPTSPEC_RETURN_IF_ERROR(DataIteratorRankFromJson(
            nlohmann::json::parse(o.data, nullptr, false), &saved[m], &dp_size, &loader));
        if (dp_size > 0) saved_loaders[m][o.spec.global_offset.at(0)] = loader;
      }
      without_data[r].objects = std::move(kept);
    }
    for (size_t m = 0; m < now.size(); ++m) {
      for (const auto& [dp, loader] : saved_loaders[m]) saved[m].loaders.push_back(loader);
    }
    LoadFlags reset = load.flags;
    reset.reset_dataloader = true;
    const LoadedCheckpoint rebuilt{without_data, load.requested, load.saved,
                                   load.layout,  load.configs,   reset};
    CKPTSPEC_RETURN_IF_ERROR(CanonicalFramework::FromStateDicts(rebuilt, states));
    for (size_t m = 0; m < states->size(); ++m) {
      if (!loads_data[m]) continue;
      TrainingState& s = (*states)[m];
      const DataConfig& c = s.config.data;
      if (!by_index[m]) {
        CKPTSPEC_RETURN_IF_ERROR(ResumeDataIterator(c, saved[m], &s.data));
        continue;
      }
      s.data.consumed_samples = saved[m].consumed_samples;
      s.data.epoch = saved[m].epoch;
      for (int64_t r = 0; r < c.dp_size; ++r) {
        auto it = saved_loaders[m].find(r);
        if (it == saved_loaders[m].end()) {
          return Status::NotFound("no saved data loader state for DP rank " + std::to_string(r));
        }
        RankLoaderState& l = s.data.loaders[static_cast<size_t>(r)];
        l.position = it->second.position;
        l.epoch = l.position / ShardSize(c.num_samples, l.shard, l.num_shards);
      }
    }
    return Status::OK();
  }
};

}  // namespace

ReplacedParts B25Parts(int /*process*/) {
  ReplacedParts parts;
  parts.framework = std::make_unique<LoaderByRankIndexFramework>();
  return parts;
}

}  // namespace ckptspec
