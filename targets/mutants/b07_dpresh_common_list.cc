// B07 dpresh-common-list. Upstream: https://github.com/radixark/Megatron-LM/pull/66 (cf. ms-swift
// #8240).
//
// Mechanism: under dp_reshardable the per-parameter param_state list went into rank-0 common
// state, but its length is per rank: with uneven parameter sizes the equal-byte DP bucket slices
// hold different parameters, and merging common state fails ("Cannot merge two lists with
// different lengths"). The mutant: ToStateDicts also writes each rank's slice index (the list the
// canonical sharding keeps in the per-DP-rank "...param_state" object) into that rank's common
// state as "optimizer_param_state". Common state becomes rank-variant: the reference's save
// validation refuses it (loud), and without validation only rank 0's list survives.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include "targets/mutants/framework_edits.h"

namespace ckptspec {

ReplacedParts B07Parts(int /*process*/) {
  FrameworkEdits edits;
  edits.after_save = [](const std::vector<TrainingState>&,
                        std::vector<ShardedStateDict>* every_rank) {
    for (ShardedStateDict& d : *every_rank) {
      nlohmann::json list = nlohmann::json::array();
      for (const ShardedObject& o : d.objects) {
        if (o.spec.origin.find("optimizer.param_state") == std::string::npos || o.data.empty())
          continue;
        for (const auto& item : nlohmann::json::parse(o.data)) list.push_back(item);
      }
      if (!list.empty()) (*d.common.Mutable())["optimizer_param_state"] = list;
    }
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
