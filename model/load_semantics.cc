#include "model/load_semantics.h"

#include <set>

#include "model/dtype_conversion.h"
#include "model/float_codec.h"

namespace ckptspec {

namespace {

std::string Sizes(const Layout& l) {
  return "TP" + std::to_string(l.tp()) + "/PP" + std::to_string(l.pp()) + "/DP" +
         std::to_string(l.dp()) + "/CP" + std::to_string(l.cp()) + "/EP" + std::to_string(l.ep()) +
         "/ETP" + std::to_string(l.etp());
}

// L1's structural rule: the parameter lists agree by name and shape (the dtype may differ).
Status CheckModel(const TrainingState& saved, const TrainingState& fresh) {
  if (saved.specs.size() != fresh.specs.size()) {
    return Status::InvalidArgument("the model has " + std::to_string(fresh.specs.size()) +
                                   " parameters, the checkpoint " +
                                   std::to_string(saved.specs.size()));
  }
  for (size_t i = 0; i < saved.specs.size(); ++i) {
    if (saved.specs[i].name != fresh.specs[i].name ||
        saved.specs[i].shape != fresh.specs[i].shape) {
      return Status::InvalidArgument("model parameter " + std::to_string(i) + " '" +
                                     fresh.specs[i].name + "' does not match the checkpoint's '" +
                                     saved.specs[i].name + "' (name or shape)");
    }
  }
  return Status::OK();
}

// `bits` of `from` as an element of `to` (dtype_conversion.h), its error naming `what` and the
// element.
Status ConvertNamed(DType from, DType to, uint64_t bits, const std::string& what, size_t element,
                    uint64_t* out) {
  const Status s = ConvertElement(from, to, bits, out);
  if (s.ok()) return s;
  return s.WithContext(what + " element " + std::to_string(element));
}

// L1's conversion: every model weight of `saved` (elements of `held`) in the run's dtype.
Status ConvertWeights(const TrainingState& saved, DType held, TrainingState* s) {
  const DType now = s->config.model.params_dtype;
  for (size_t i = 0; i < s->params.size(); ++i) {
    const std::vector<uint32_t>& from = saved.params[i].model;
    std::vector<uint32_t>& to = s->params[i].model;
    if (held == now) {
      to = from;
      continue;
    }
    for (size_t e = 0; e < from.size(); ++e) {
      uint64_t bits = 0;
      CKPTSPEC_RETURN_IF_ERROR(
          ConvertNamed(held, now, from[e], "model weight of " + s->specs[i].name, e, &bits));
      to[e] = static_cast<uint32_t>(bits);
    }
  }
  return Status::OK();
}

// An fp32 value rounded into `dtype`, its error naming `what` and the element.
Status RoundInto(DType dtype, float value, const std::string& what, size_t element, float* out) {
  uint64_t bits = 0;
  CKPTSPEC_RETURN_IF_ERROR(
      ConvertNamed(DType::kFloat32, dtype, FloatToBits(value), what, element, &bits));
  *out = static_cast<float>(DecodeToDouble(dtype, bits));
  return Status::OK();
}

}  // namespace

Status CheckOptimizerDtypeChange(OptimizerFormat format, DType saved, DType now) {
  if (format == OptimizerFormat::kFullyReshardable || saved == now) return Status::OK();
  return Status::FailedPrecondition(
      std::string("dp_reshardable optimizer state cannot be loaded under a params dtype change ") +
      DTypeName(saved) + " -> " + DTypeName(now) +
      " (its buffers are keyed by and laid out for the model dtype); resume in " +
      DTypeName(saved) + ", without the optimizer state, or from a fully_reshardable checkpoint");
}

Status CheckOptimizerFormatChange(OptimizerFormat format, const Layout& was, const Layout& now) {
  if (format == OptimizerFormat::kFullyReshardable) return Status::OK();
  const struct {
    const char* name;
    int64_t a, b;
  } dims[] = {{"TP", was.tp(), now.tp()},
              {"PP", was.pp(), now.pp()},
              {"CP", was.cp(), now.cp()},
              {"EP", was.ep(), now.ep()},
              {"ETP", was.etp(), now.etp()}};
  for (const auto& d : dims) {
    if (d.a != d.b) {
      return Status::FailedPrecondition(
          std::string("dp_reshardable optimizer state cannot be loaded under a ") + d.name +
          " change " + std::to_string(d.a) + " -> " + std::to_string(d.b) + " (" + Sizes(was) +
          " -> " + Sizes(now) + "); only DP may change");
    }
  }
  return Status::OK();
}

Status CheckFreezeFamily(FreezeFamily saved, FreezeFamily now) {
  if (saved == now) return Status::OK();
  return Status::FailedPrecondition(std::string("the checkpoint's optimizer follows the ") +
                                    FreezeFamilyName(saved) + " freezing family, this run the " +
                                    FreezeFamilyName(now) +
                                    " one (their groups and state hold other parameters)");
}

int MatchRngRank(const std::vector<RankCoords>& saved, const RankCoords& want,
                 bool data_parallel_random_init) {
  int best = -1;
  for (size_t c = 0; c < saved.size(); ++c) {
    const RankCoords& have = saved[c];
    if (have.tp != want.tp || have.pp != want.pp || have.ep != want.ep || have.etp != want.etp)
      continue;
    if (data_parallel_random_init && have.dp != want.dp) continue;
    if (have.dp == want.dp && have.cp == want.cp) return static_cast<int>(c);  // its own state
    if (best < 0 || have.dp < saved[best].dp) best = static_cast<int>(c);
  }
  return best;
}

namespace {

// L3: the saved optimizer state, matched by identity, into `out` (fresh groups of the new config,
// L1's weights). `dtype_changed`: the checkpoint saved its weights in another dtype than the run's,
// so a parameter whose state loads takes its weights from its master value (L1).
Status LoadOptimizer(const TrainingState& saved, bool dtype_changed, TrainingState* out) {
  const FreezeFamily family = out->config.optimizer.freeze_family;
  CKPTSPEC_RETURN_IF_ERROR(CheckFreezeFamily(saved.config.optimizer.freeze_family, family));
  const bool torch_optim = family == FreezeFamily::kTorchOptim;
  for (size_t i = 0; i < out->params.size() && !torch_optim; ++i) {
    if (!out->params[i].frozen && saved.params[i].frozen) {
      return Status::NotFound(
          "parameter '" + out->specs[i].name +
          "' is trainable but has no optimizer state in the checkpoint (frozen when saved)");
    }
  }
  for (size_t o = 0; o < out->optimizers.size(); ++o) {
    std::vector<ParamGroup> saved_groups;
    for (const SubOptimizer& so : saved.optimizers) {
      if (so.name == out->optimizers[o].name)
        saved_groups.insert(saved_groups.end(), so.groups.begin(), so.groups.end());
    }
    std::vector<bool> frozen_now;
    for (const ParamState& p : out->params) frozen_now.push_back(p.frozen);
    std::vector<int> match;
    IdentityKeySet key_set = IdentityKeySet::kWithLrBounds;  // until the saved groups tell
    CKPTSPEC_RETURN_IF_ERROR(
        MatchSavedParamGroups(saved_groups, out->optimizers[o].groups, frozen_now, torch_optim,
                              &match, &key_set)
            .WithContext("optimizer " + out->optimizers[o].name +
                         (key_set == IdentityKeySet::kCore
                              ? " (saved groups of the older form: identity without LR bounds)"
                              : "")));
    for (size_t c = 0; c < match.size(); ++c) {
      ParamGroup& g = out->optimizers[o].groups[c];
      const ParamGroup& s = saved_groups[match[c]];
      // {**saved, params: current}, but the identity stays the current group's (equal under the
      // key; a group loaded from the older form thus records its declared bounds again), with
      // the saved LR bounds (L6 decides them).
      ParamGroupIdentity identity = g.identity;
      identity.max_lr = s.identity.max_lr;
      identity.min_lr = s.identity.min_lr;
      std::vector<int> params = std::move(g.params);
      g = s;
      g.identity = identity;
      g.params = std::move(params);
    }
  }
  for (size_t i = 0; i < out->params.size(); ++i) {
    ParamState& p = out->params[i];
    const ParamState& sp = saved.params[i];
    if (torch_optim) {
      // State goes with the parameter, frozen or not; without saved state it stays without
      // (torch.optim's load_state_dict: the state of the saved parameter ids).
      if (HasOptimizerState(sp)) CreateOptimizerState(out, static_cast<int>(i));
    }
    if (!HasOptimizerState(p)) continue;
    // Moments in the run's moment dtype (a checkpoint holds them in fp32).
    const DType moments = out->config.optimizer.moment_dtype;
    const DType model = out->config.model.params_dtype;
    const std::string& name = out->specs[i].name;
    for (size_t e = 0; e < p.model.size(); ++e) {
      CKPTSPEC_RETURN_IF_ERROR(
          RoundInto(moments, sp.exp_avg[e], "exp_avg of " + name, e, &p.exp_avg[e]));
      CKPTSPEC_RETURN_IF_ERROR(
          RoundInto(moments, sp.exp_avg_sq[e], "exp_avg_sq of " + name, e, &p.exp_avg_sq[e]));
    }
    p.step = sp.step;
    for (size_t e = 0; e < p.model.size(); ++e) {
      const float x =
          static_cast<float>(MasterValue(saved, static_cast<int>(i), static_cast<int64_t>(e)));
      if (!p.main.empty()) p.main[e] = x;
      if (!p.offload.empty()) p.offload[e] = x;
      if (dtype_changed) {
        uint64_t bits = 0;
        CKPTSPEC_RETURN_IF_ERROR(ConvertNamed(DType::kFloat32, model, FloatToBits(x),
                                              "master value of " + name, e, &bits));
        p.model[e] = static_cast<uint32_t>(bits);
      }
    }
  }
  return Status::OK();
}

// L7.
Status LoadRng(const CheckpointDescriptor& ckpt, const ResumeRequest& req, TrainingState* out) {
  const TrainingState& saved = ckpt.state;
  for (size_t r = 0; r < req.config.ranks.size(); ++r) {
    const RankCoords& want = req.config.ranks[r];
    const int best = MatchRngRank(saved.config.ranks, want, req.config.data_parallel_random_init);
    if (best < 0) {
      return Status::NotFound("the checkpoint holds no RNG state for the rank at " +
                              DescribeCoords(want));
    }
    out->rng[r] = saved.rng[best];
  }
  return Status::OK();
}

}  // namespace

LoadedStateClasses StateClassesToLoad(const LoadFlags& flags, const TrainingConfig& config,
                                      const Layout& saved, const Layout& now) {
  LoadedStateClasses c;
  c.optimizer = !flags.finetune && !flags.no_load_optim;
  c.rng = !flags.finetune && !flags.no_load_rng && saved.tp() == now.tp() && saved.pp() == now.pp();
  c.rerun = !flags.finetune && config.rerun_mode != RerunMode::kDisabled;
  c.data = !flags.finetune && !flags.reset_dataloader;
  return c;
}

bool RankLocalRngLoads(const Layout& saved, int64_t saved_first_rank, const Layout& now,
                       int64_t now_first_rank) {
  return saved_first_rank == now_first_rank && saved.ToString() == now.ToString();
}

Status ExpectedStateAfterLoad(const CheckpointDescriptor& ckpt, const ResumeRequest& req,
                              TrainingState* out) {
  const LoadFlags& f = req.flags;
  const LoadedStateClasses load = StateClassesToLoad(f, req.config, ckpt.layout, req.layout);
  // L0.
  if (f.override_scheduler && f.use_checkpoint_scheduler) {
    return Status::InvalidArgument(
        "override_opt_param_scheduler and use_checkpoint_opt_param_scheduler are both set");
  }
  if (req.config.data.dp_size != req.layout.dp()) {
    return Status::InvalidArgument(
        "new config: data.dp_size = " + std::to_string(req.config.data.dp_size) +
        " differs from the layout's DP = " + std::to_string(req.layout.dp()));
  }
  if (ckpt.state.config.data.dp_size != ckpt.layout.dp()) {
    return Status::InvalidArgument(
        "checkpoint: data.dp_size = " + std::to_string(ckpt.state.config.data.dp_size) +
        " differs from its layout's DP = " + std::to_string(ckpt.layout.dp()));
  }
  TrainingState s;
  CKPTSPEC_RETURN_IF_ERROR(InitialTrainingState(req.config, &s));
  const TrainingState& saved = ckpt.state;

  // L1. The weights held in `held`; the checkpoint saved them in `saved_dtype`.
  CKPTSPEC_RETURN_IF_ERROR(CheckModel(saved, s));
  const DType held = saved.config.model.params_dtype;
  const DType saved_dtype = ckpt.saved_params_dtype.value_or(held);
  const bool dtype_changed = saved_dtype != req.config.model.params_dtype;
  CKPTSPEC_RETURN_IF_ERROR(ConvertWeights(saved, held, &s));

  // L2. A rerun machine that L8 does not load starts at the resumed iteration: it counts the
  // training loop's iterations, and the loop resumes here.
  s.iteration = f.finetune ? 0 : saved.iteration;
  s.rerun.current_iteration = s.iteration;

  // L3 / L4.
  if (load.optimizer) {
    CKPTSPEC_RETURN_IF_ERROR(
        CheckOptimizerFormatChange(ckpt.optimizer_format, ckpt.layout, req.layout));
    CKPTSPEC_RETURN_IF_ERROR(CheckOptimizerDtypeChange(ckpt.optimizer_format, saved_dtype,
                                                       req.config.model.params_dtype));
    if (ckpt.optimizer_format == OptimizerFormat::kDpReshardable) {
      // dp_reshardable buffers are laid out over the trainable parameters: a parameter frozen
      // since the save changes every later offset, so its state cannot be dropped as
      // fully_reshardable's can.
      for (size_t i = 0; i < s.params.size(); ++i) {
        if (s.params[i].frozen && !saved.params[i].frozen) {
          return Status::FailedPrecondition(
              "dp_reshardable optimizer state cannot be loaded: parameter '" + s.specs[i].name +
              "' was trainable when saved and is frozen now (the buffer layout changed)");
        }
      }
    }
    CKPTSPEC_RETURN_IF_ERROR(LoadOptimizer(saved, dtype_changed, &s));
  } else {
    RefreshMastersFromModel(&s);
  }

  // L5 / L6.
  if (load.optimizer) {
    CKPTSPEC_RETURN_IF_ERROR(LoadSchedulerState(saved.scheduler, req.config.scheduler,
                                                f.override_scheduler, f.use_checkpoint_scheduler,
                                                &s.scheduler));
    if (f.override_scheduler) {
      TrainingState defaults;
      CKPTSPEC_RETURN_IF_ERROR(InitialTrainingState(req.config, &defaults));
      for (size_t o = 0; o < s.optimizers.size(); ++o) {
        for (size_t g = 0; g < s.optimizers[o].groups.size(); ++g) {
          s.optimizers[o].groups[g].identity.max_lr =
              defaults.optimizers[o].groups[g].identity.max_lr;
          s.optimizers[o].groups[g].identity.min_lr =
              defaults.optimizers[o].groups[g].identity.min_lr;
        }
      }
    }
  }
  for (SubOptimizer& o : s.optimizers) ApplySchedule(s.scheduler, &o.groups);

  // L7.
  const bool rank_local_rng = ckpt.state.config.rng_saving == RngSaving::kRankLocal;
  if (load.rng && ckpt.has_rng &&
      (!rank_local_rng ||
       RankLocalRngLoads(ckpt.layout, ckpt.first_rank, req.layout, req.first_rank))) {
    CKPTSPEC_RETURN_IF_ERROR(LoadRng(ckpt, req, &s));
  }

  // L8.
  nlohmann::json payload;
  if (load.rerun) {
    CKPTSPEC_RETURN_IF_ERROR(CheckpointPayload(saved.rerun, &payload));
    RerunLoadContext ctx;
    ctx.saved_world = static_cast<int>(ckpt.layout.world_size());
    ctx.saved_tp = static_cast<int>(ckpt.layout.tp());
    ctx.saved_pp = static_cast<int>(ckpt.layout.pp());
    ctx.saved_dp = static_cast<int>(ckpt.layout.dp());
    ctx.world = static_cast<int>(req.layout.world_size());
    // The payload is keyed by global rank: the module's ranks stay put only when the run's world
    // is unchanged too. A change of the run's world is a change for every module.
    const int64_t saved_run_world =
        ckpt.run_world_size > 0 ? ckpt.run_world_size : ckpt.layout.world_size();
    const int64_t run_world = req.run_world_size > 0 ? req.run_world_size : req.layout.world_size();
    if (saved_run_world != run_world) {
      ctx.saved_world = static_cast<int>(saved_run_world);
      ctx.world = static_cast<int>(run_world);
    }
    ctx.tp = static_cast<int>(req.layout.tp());
    ctx.pp = static_cast<int>(req.layout.pp());
    ctx.dp = static_cast<int>(req.layout.dp());
    CKPTSPEC_RETURN_IF_ERROR(LoadRerunPayload(payload, ctx, &s.rerun));
  }

  // L9: the global sampler's sequence continues under any DP size; per-DP-rank loaders need the
  // saved DP size (ResumeDataIterator).
  if (load.data) {
    CKPTSPEC_RETURN_IF_ERROR(ResumeDataIterator(req.config.data, saved.data, &s.data));
  }
  *out = std::move(s);
  return Status::OK();
}

}  // namespace ckptspec
