#include "harness/spec_job.h"

#include <utility>

#include "model/float_codec.h"
#include "model/observation_digest.h"
#include "model/training_step.h"
#include "harness/harness.h"
#include "harness/rerun_fault.h"

namespace ckptspec {
namespace {

// Which elements of a parameter a rank holds as their main replica (see the header).
struct Holding {
  bool holds = false;  // the rank holds the parameter at all (its stage, its expert)
  bool main = false;   // ... and is the main replica of some of its elements
  int axis = -1;       // split along this axis (TP or expert-TP); -1: every element
  int64_t slice = 0, slices = 1;
};

Holding HoldingOf(const ParameterSpec& p, const ModelConfig& model, const Layout& layout,
                  const PipelineStages& stages, const RankCoords& c) {
  Holding h;
  const int64_t stage = p.placement == ParamPlacement::kEmbedding ? 0
                        : p.placement == ParamPlacement::kOutput  ? stages.num_stages() - 1
                                                                  : stages.StageOfLayer(p.layer);
  if (c.pp != stage) return h;
  if (p.is_expert()) {
    const int64_t per_rank = model.num_experts / layout.ep();
    if (p.expert / per_rank != c.ep) return h;
    h.holds = true;
    h.axis = p.tp_axis;
    h.slices = layout.etp();
    h.slice = c.etp;
    h.main = c.edp == 0 && (p.tp_axis >= 0 || c.etp == 0);
  } else {
    h.holds = true;
    h.axis = p.tp_axis;
    h.slices = layout.tp();
    h.slice = c.tp;
    h.main = c.dp == 0 && c.cp == 0 && (p.tp_axis >= 0 || c.tp == 0);
  }
  if (h.axis < 0) h.slices = 1, h.slice = 0;
  return h;
}

// The digest of the elements `h` makes main on this rank, of values value(i).
template <typename Value>
uint64_t DigestOf(const ParameterSpec& p, const Holding& h, Value value) {
  int64_t n = 1;
  for (int64_t d : p.shape) n *= d;
  // Row-major: the split axis's coordinate of element i is (i / inner) % extent.
  int64_t inner = 1;
  for (size_t a = p.shape.size(); a-- > static_cast<size_t>(h.axis < 0 ? 0 : h.axis + 1);) {
    inner *= p.shape[a];
  }
  const int64_t extent = h.axis < 0 ? 1 : p.shape[static_cast<size_t>(h.axis)];
  const int64_t width = extent / h.slices;
  uint64_t sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (h.axis >= 0 && ((i / inner) % extent) / width != h.slice) continue;
    sum += ElementDigest(static_cast<uint64_t>(i), FloatToBits(static_cast<float>(value(i))));
  }
  return sum;
}

uint64_t TextDigest(const std::string& text) { return ContentDigest(text.data(), text.size()); }

}  // namespace

Status SpecJob::NeedsJob(const char* op) const {
  if (!job_) return Status::FailedPrecondition(std::string(op) + " before build");
  return Status::OK();
}

Status SpecJob::Build(const FrameworkJob& job) {
  if (job_) return Status::FailedPrecondition("build: a job is built already");
  RunSpec run;
  CKPTSPEC_RETURN_IF_ERROR(JobRunSpec(job, &run));
  std::vector<TrainingState> states;
  CKPTSPEC_RETURN_IF_ERROR(InitialStates(run, &states));
  job_ = job;
  run_ = std::move(run);
  states_ = std::move(states);
  return Status::OK();
}

Status SpecJob::Train(int64_t steps, bool fault, TrainResult* result) {
  CKPTSPEC_RETURN_IF_ERROR(NeedsJob("train"));
  CKPTSPEC_RETURN_IF_ERROR(TrainRun(&states_, steps));
  *result = TrainResult();
  if (fault) {
    for (TrainingState& s : states_) {
      if (!CanRerunFault(s)) {
        return Status::FailedPrecondition(
            "train: a fault needs rerun mode validate_results and an iteration completed in this "
            "process");
      }
      CKPTSPEC_RETURN_IF_ERROR(RerunFaultStep(&s));
      result->checkpoint_and_exit |= ShouldCheckpointAndExit(&s.rerun).checkpoint;
    }
  }
  result->iteration = states_.front().iteration;
  return Status::OK();
}

Status SpecJob::Save(Target& target, bool async, FrameworkSaveResult* result) {
  CKPTSPEC_RETURN_IF_ERROR(NeedsJob("save"));
  std::vector<ShardedStateDict> dicts;
  CKPTSPEC_RETURN_IF_ERROR(target.framework()
                               .ToStateDicts(run_.layout, states_, run_.sharding, &dicts)
                               .WithContext("framework"));
  GlobalSignature signature;
  for (size_t r = 0; r < dicts.size(); ++r) {
    signature.ranks.push_back(SignatureOf(static_cast<int64_t>(r), dicts[r]));
  }
  SaveOptions options;
  options.assume_constant_structure = job_->assume_constant_structure;
  options.async = async;
  const int64_t iteration = states_.front().iteration;
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Save(iteration, std::move(dicts), options));
  result->iteration = iteration;
  result->signature = std::move(signature);
  return Status::OK();
}

Status SpecJob::Load(Target& target, const FrameworkLoad& load, int64_t* iteration) {
  CKPTSPEC_RETURN_IF_ERROR(NeedsJob("load"));
  ResumeOptions options;
  options.flags = load.flags;
  options.strict = load.strict;
  options.iteration = load.iteration;
  std::vector<TrainingState> states;
  CKPTSPEC_RETURN_IF_ERROR(ResumeRun(target, run_, options, &states));
  states_ = std::move(states);
  *iteration = states_.front().iteration;
  return Status::OK();
}

Status SpecJob::Observe(Observation* out) const {
  CKPTSPEC_RETURN_IF_ERROR(NeedsJob("observe"));
  out->assign(static_cast<size_t>(run_.layout.world_size()), RankObservation());
  for (size_t m = 0; m < states_.size(); ++m) {
    const TrainingState& s = states_[m];
    const ModuleLayout& module = run_.layout.modules()[m];
    const Layout& layout = module.layout;
    PipelineStages stages;
    CKPTSPEC_RETURN_IF_ERROR(PipelineStages::Make(s.config.model, layout.pp(), &stages));
    const DType dtype = s.config.model.params_dtype;
    const bool group_steps = s.config.optimizer.step_counter == StepCounter::kPerGroup;
    const std::string prefix = module.name.empty() ? "" : module.name + "/";
    for (int64_t local = 0; local < layout.world_size(); ++local) {
      RankObservation& o = (*out)[static_cast<size_t>(module.first_rank + local)];
      const RankCoords c = layout.Coords(local);
      o.iteration = s.iteration;
      std::vector<bool> held(s.specs.size());
      for (size_t p = 0; p < s.specs.size(); ++p) {
        const ParameterSpec& spec = s.specs[p];
        const ParamState& ps = s.params[p];
        const Holding h = HoldingOf(spec, s.config.model, layout, stages, c);
        held[p] = h.holds;
        if (!h.holds) continue;
        if (HasOptimizerState(ps) && !group_steps) o.param_steps[spec.name] = ps.step;
        if (!h.main) continue;
        o.copy(Copy::kModel)[spec.name] = DigestOf(spec, h, [&](int64_t i) {
          return DecodeToDouble(dtype, ps.model[static_cast<size_t>(i)]);
        });
        const std::pair<Copy, const std::vector<float>*> copies[] = {
            {Copy::kMain, &ps.main},
            {Copy::kOffload, &ps.offload},
            {Copy::kExpAvg, &ps.exp_avg},
            {Copy::kExpAvgSq, &ps.exp_avg_sq}};
        for (const auto& [copy, values] : copies) {
          if (values->empty()) continue;
          const std::vector<float>& v = *values;  // a lambda may not capture a binding (C++17)
          o.copy(copy)[spec.name] =
              DigestOf(spec, h, [&v](int64_t i) { return v[static_cast<size_t>(i)]; });
        }
      }
      for (const SubOptimizer& sub : s.optimizers) {
        for (const ParamGroup& g : sub.groups) {
          GroupObservation go;
          for (int p : g.params) {
            if (held[static_cast<size_t>(p)]) go.params.push_back(s.specs[p].name);
          }
          if (go.params.empty()) continue;
          go.optimizer = prefix + sub.name;
          go.lr = g.lr;
          go.weight_decay = g.weight_decay;
          go.beta1 = g.beta1;
          go.beta2 = g.beta2;
          go.eps = g.eps;
          if (group_steps) go.step = g.step;
          go.identity = g.identity;
          go.identity.Remove(IdentityField::kLrBoundsDeclared);  // not observed
          go.identity.declares_max_lr = go.identity.declares_min_lr = false;
          o.groups.push_back(std::move(go));
        }
      }
      o.scheduler = s.scheduler;
      o.rng = TextDigest(RankRngStateToJson(s.rng[static_cast<size_t>(local)]).dump());
      o.consumed_samples = s.data.consumed_samples;
      o.rerun.mode = RerunModeName(s.rerun.mode);
      o.rerun.state = RerunStateName(s.rerun.state);
      o.rerun.current_iteration = s.rerun.current_iteration;
      nlohmann::json payload;
      o.rerun.digest =
          CheckpointPayload(s.rerun, &payload).ok() ? TextDigest(payload["sharded"].dump()) : 0;
    }
  }
  return Status::OK();
}

}  // namespace ckptspec
