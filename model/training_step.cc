#include "model/training_step.h"

#include <cmath>

#include "model/content.h"
#include "model/float_codec.h"

namespace ckptspec {

std::vector<float> Gradient(const TrainingState& s, int param,
                            const std::vector<int64_t>& samples) {
  const ParameterSpec& spec = s.specs[param];
  const size_t n = s.params[param].model.size();
  const uint64_t key = KeyHash(spec.name);
  std::vector<double> sum(n, 0.0);
  for (int64_t sample : samples) {
    const uint64_t seed = s.config.seed ^ Mix64(static_cast<uint64_t>(sample));
    for (size_t i = 0; i < n; ++i) sum[i] += ContentUnitFloat(ContentBits(seed, key, i));
  }
  std::vector<float> g(n);
  const double count = static_cast<double>(samples.size());
  for (size_t i = 0; i < n; ++i) g[i] = static_cast<float>(sum[i] / count);
  return g;
}

namespace {

// `x` rounded to nearest even in `dtype` (a floating dtype), as an fp32 value.
float RoundTo(DType dtype, float x) {
  return dtype == DType::kFloat32
             ? x
             : static_cast<float>(DecodeToDouble(dtype, EncodeFloat(dtype, x)));
}

void AdamUpdate(TrainingState* s, int param, const ParamGroup& group, int64_t t,
                const std::vector<float>& grad) {
  ParamState& p = s->params[param];
  const DType dt = s->config.model.params_dtype;
  const DType moments = s->config.optimizer.moment_dtype;
  const double b1 = group.beta1, b2 = group.beta2, eps = group.eps;
  const double lr = group.lr, wd = group.weight_decay;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
  const double sqrt_bc2 = std::sqrt(1.0 - std::pow(b2, static_cast<double>(t)));
  const double step_size = lr / bc1;
  const double decay = 1.0 - lr * wd;
  for (size_t i = 0; i < p.model.size(); ++i) {
    const double g = grad[i];
    // The moments as the optimizer stores them (in moment_dtype); the update uses the stored ones.
    const float m = RoundTo(moments, static_cast<float>(b1 * p.exp_avg[i] + (1.0 - b1) * g));
    const float v = RoundTo(moments, static_cast<float>(b2 * p.exp_avg_sq[i] + (1.0 - b2) * g * g));
    p.exp_avg[i] = m;
    p.exp_avg_sq[i] = v;
    const double x = MasterValue(*s, param, static_cast<int64_t>(i));
    const float updated =
        static_cast<float>(x * decay - step_size * static_cast<double>(m) /
                                           (std::sqrt(static_cast<double>(v)) / sqrt_bc2 + eps));
    if (!p.offload.empty()) p.offload[i] = updated;
    if (!p.main.empty()) p.main[i] = updated;
    p.model[i] = static_cast<uint32_t>(EncodeFloat(dt, updated));
  }
}

}  // namespace

Status TrainStep(TrainingState* s) {
  const DataConfig& dc = s->config.data;
  CKPTSPEC_RETURN_IF_ERROR(CheckDataIterator(dc, s->data));
  RerunContext ctx{s->rng.empty() ? nullptr : &s->rng[0], &s->data};
  std::vector<std::vector<float>> grads(s->params.size());
  // Megatron's `while rerun_state_machine.should_run_forward_backward(...)` loop. Fault-free, it
  // runs once (twice in REPORT_DETERMINISM_STATS mode, from the restored RNG snapshot).
  // Every rank's machine snapshots its own RNG; the model's machine holds rank 0's, the others
  // are restored here on a rerun.
  const std::vector<RankRngState> rng_at_start = s->rng;
  bool run = false;
  int passes = 0;
  for (;;) {
    CKPTSPEC_RETURN_IF_ERROR(ShouldRunForwardBackward(&s->rerun, ctx, &run));
    if (!run) break;
    if (++passes > 2) {
      return Status::FailedPrecondition("rerun state machine keeps rerunning a fault-free step");
    }
    for (size_t r = 1; r < s->rng.size(); ++r) s->rng[r] = rng_at_start[r];
    const std::vector<int64_t> samples = FlatSamplesOfStep(dc, s->data);
    for (RankRngState& r : s->rng) AdvanceAll(&r, static_cast<uint64_t>(GradAccumSteps(dc)));
    double loss = 0.0;
    bool have_loss = false;
    for (size_t i = 0; i < s->params.size(); ++i) {
      if (s->params[i].frozen) continue;
      grads[i] = Gradient(*s, static_cast<int>(i), samples);
      if (!have_loss) {
        double sum = 0.0;
        for (float g : grads[i]) sum += g;
        loss = grads[i].empty() ? 0.0 : sum / static_cast<double>(grads[i].size());
        have_loss = true;
      }
    }
    ValidationInput in;
    in.result = loss;
    CKPTSPEC_RETURN_IF_ERROR(ValidateResult(&s->rerun, "loss", 0, in));
  }
  if (passes == 0) {
    return Status::FailedPrecondition(std::string("rerun state machine in state ") +
                                      RerunStateName(s->rerun.state) +
                                      " does not run the forward/backward pass");
  }
  const CheckpointAndExit exit = ShouldCheckpointAndExit(&s->rerun);
  if (exit.checkpoint || exit.exit) {
    return Status::FailedPrecondition(std::string("rerun state machine asks to exit (state ") +
                                      RerunStateName(s->rerun.state) + ") in a fault-free step");
  }

  const bool per_group = s->config.optimizer.step_counter == StepCounter::kPerGroup;
  for (SubOptimizer& o : s->optimizers) {
    for (ParamGroup& g : o.groups) {
      if (per_group) ++g.step;
      for (int idx : g.params) {
        ParamState& p = s->params[idx];
        if (p.frozen) continue;
        if (!HasOptimizerState(p)) CreateOptimizerState(s, idx);  // torch.optim: lazily
        if (!per_group) ++p.step;
        AdamUpdate(s, idx, g, per_group ? g.step : p.step, grads[idx]);
      }
    }
  }
  s->scheduler.num_steps += dc.global_batch_size;
  for (SubOptimizer& o : s->optimizers) ApplySchedule(s->scheduler, &o.groups);
  AdvanceDataIterator(dc, &s->data);
  s->iteration += 1;
  return Status::OK();
}

Status Train(TrainingState* s, int64_t n) {
  if (n < 0) return Status::InvalidArgument("Train: n = " + std::to_string(n) + " is negative");
  for (int64_t i = 0; i < n; ++i) {
    CKPTSPEC_RETURN_IF_ERROR(
        TrainStep(s).WithContext("iteration " + std::to_string(s->iteration + 1)));
  }
  return Status::OK();
}

}  // namespace ckptspec
