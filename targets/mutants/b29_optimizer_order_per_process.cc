// B29 optimizer-order-per-process. Upstream: https://github.com/HorizonRobotics/alf/pull/891
// (fixes #889; the guard PyTorch added against the same mistake: pytorch PR #6031).
//
// Mechanism: alf's _setup_optimizers_() gathered each optimizer's parameters in a Python set, so
// their order followed the tensors' hashes (their addresses), which differ from one process to
// the next. torch.optim's state dict is positional (a parameter's state is keyed by its index in
// the param groups), so a resume in the process that saved finds the same order and loads
// correctly, while a relaunched process gives each parameter the state of another one: a size
// mismatch where the shapes differ, silently wrong moments where they agree.
// The mutant: the framework keeps a per-process order of every optimizer's parameters, a rotation
// of their sorted names that moves by one position in every new process (as an address order,
// two consecutive processes never agree on it; the rotation is the process's ordinal over the
// target's storage plus one, so that a run's report does not depend on what else ran in the OS
// process), and names each parameter's optimizer state (exp_avg, exp_avg_sq, fp32_param, step;
// the per-parameter, fully_reshardable form) after the parameter at the same position of the
// canonical order. Its load templates and its rebuild use the order of the process that loads.
// Invisible to a load in the saving process; a resume in a new process (P1, P2, P3 since they
// restart) loads other parameters' state. S->L.
// Killers: its entry in targets/mutants/catalog.cc.
#include "targets/mutants/mutant_parts.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "targets/mutants/framework_edits.h"

namespace ckptspec {
namespace {

// The per-parameter optimizer state entries: their key is prefix + "state." + slot + "." + the
// parameter's key (model/state_entries.cc).
constexpr const char* kSlots[] = {"exp_avg_sq", "exp_avg", "fp32_param", "step"};

// Splits an optimizer state key into (optimizer prefix + "state." + slot + ".", parameter key);
// false for any other key.
bool SplitStateKey(const std::string& key, std::string* head, std::string* param) {
  for (const char* slot : kSlots) {
    const std::string marker = std::string("state.") + slot + ".";
    const size_t at = key.find(marker);
    if (at == std::string::npos || key.rfind("optimizer.", at) == std::string::npos) continue;
    *head = key.substr(0, at + marker.size());
    *param = key.substr(at + marker.size());
    return !param->empty();
  }
  return false;
}

// Renames every rank's optimizer state entries from the canonical order to the order of the
// process with `salt` (to_process), or back (!to_process). Each optimizer (the text before
// "state.") has its own order over the parameter keys any rank holds state for.
void Reorder(uint64_t salt, bool to_process, std::vector<ShardedStateDict>* every_rank) {
  std::map<std::string, std::set<std::string>> params_of;  // optimizer prefix -> parameter keys
  std::string head, param;
  for (const ShardedStateDict& d : *every_rank) {
    for (const ShardedTensor& t : d.tensors) {
      if (SplitStateKey(t.spec.key, &head, &param))
        params_of[head.substr(0, head.find("state."))].insert(param);
    }
  }
  std::map<std::string, std::map<std::string, std::string>> rename;  // prefix -> key -> key
  for (const auto& [prefix, keys] : params_of) {
    const std::vector<std::string> sorted(keys.begin(), keys.end());
    const size_t n = sorted.size();
    for (size_t i = 0; i < n; ++i) {
      const std::string& process_name = sorted[(i + salt) % n];
      if (to_process) {
        rename[prefix][sorted[i]] = process_name;
      } else {
        rename[prefix][process_name] = sorted[i];
      }
    }
  }
  for (ShardedStateDict& d : *every_rank) {
    for (ShardedTensor& t : d.tensors) {
      if (!SplitStateKey(t.spec.key, &head, &param)) continue;
      t.spec.key = head + rename[head.substr(0, head.find("state."))][param];
    }
  }
}

}  // namespace

ReplacedParts B29Parts(int process) {
  // This process's order (kept for the life of the process, as the set's order is).
  const uint64_t salt = static_cast<uint64_t>(process) + 1;
  FrameworkEdits edits;
  edits.after_save = [salt](const std::vector<TrainingState>&,
                            std::vector<ShardedStateDict>* every_rank) {
    Reorder(salt, true, every_rank);
    return Status::OK();
  };
  edits.after_templates = [salt](const CheckpointInfo&, std::vector<ShardedStateDict>* every_rank) {
    Reorder(salt, true, every_rank);
    return Status::OK();
  };
  edits.before_rebuild = [salt](const LoadedCheckpoint&, std::vector<ShardedStateDict>* loaded,
                                std::vector<ShardedStateDict>* requested) {
    Reorder(salt, false, loaded);
    Reorder(salt, false, requested);
    return Status::OK();
  };
  return EditedFrameworkParts(std::move(edits));
}

}  // namespace ckptspec
