// Megatron's OptimizerParamScheduler (training/optimizer_param_scheduler.py), computed in double.
//
// Units: like Megatron, num_steps counts SAMPLES: training advances it by the global batch size per
// iteration, and lr_warmup_steps / lr_decay_steps / wd_incr_steps / wsd_decay_steps are in samples.
//
// LR at num_steps for bounds (max_lr, min_lr):
//   warmup (lr_warmup_steps > 0 and num_steps <= lr_warmup_steps):
//       init_lr + (max_lr - init_lr) * num_steps / lr_warmup_steps
//   constant: max_lr;  past decay (num_steps > lr_decay_steps): min_lr
//   inverse-square-root: max(min_lr, max_lr * sqrt(max(warmup,1)) / sqrt(max(num_steps,1)))
//   otherwise r = (num_steps - warmup) / (decay - warmup), lr = min_lr + coeff * (max_lr - min_lr)
//   with coeff = 1 - r (linear), 0.5 * (cos(pi r) + 1) (cosine), or for WSD: 1 until
//   decay - wsd_decay_steps, then by the WSD anneal style (linear, cosine, exponential,
//   minus_sqrt) of r' = (num_steps - anneal_start) / wsd_decay_steps.
// WD: end_wd past wd_incr_steps; constant: end_wd (start_wd must equal end_wd); else
//   start_wd + coeff * (end_wd - start_wd), coeff = r (linear) or 0.5 * (cos(pi (1 - r)) + 1)
//   (cosine), r = num_steps / wd_incr_steps.
// Per group: lr = Lr(group's max_lr or the scheduler's, group's min_lr or the scheduler's)
//   x lr_mult; weight_decay = Wd x wd_mult.
//
// Saved state (docs/SEMANTICS.md §5): max_lr, min_lr, lr_warmup_steps, lr_decay_steps, lr_decay_style,
// num_steps, start_wd, end_wd, wd_incr_steps, wd_incr_style. init_lr and the WSD fields are not
// saved (they always come from the arguments).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/param_groups.h"
#include "model/status.h"

namespace ckptspec {

enum class LrDecayStyle { kConstant, kLinear, kCosine, kInverseSquareRoot, kWSD };
enum class WdIncrStyle { kConstant, kLinear, kCosine };
enum class WsdDecayStyle { kLinear, kCosine, kExponential, kMinusSqrt };

// Megatron's spellings: "constant", "linear", "cosine", "inverse-square-root", "WSD";
// WSD anneal: "linear", "cosine", "exponential", "minus_sqrt".
const char* LrDecayStyleName(LrDecayStyle s);
const char* WdIncrStyleName(WdIncrStyle s);
bool ParseLrDecayStyle(const std::string& name, LrDecayStyle* out);
bool ParseWdIncrStyle(const std::string& name, WdIncrStyle* out);
const char* WsdDecayStyleName(WsdDecayStyle s);
bool ParseWsdDecayStyle(const std::string& name, WsdDecayStyle* out);

struct SchedulerConfig {
  double init_lr = 0.0;
  double max_lr = 1e-3;
  double min_lr = 1e-5;
  int64_t lr_warmup_steps = 0;
  int64_t lr_decay_steps = 1000;
  LrDecayStyle lr_decay_style = LrDecayStyle::kCosine;
  int64_t wsd_decay_steps = 0;
  WsdDecayStyle lr_wsd_decay_style = WsdDecayStyle::kLinear;
  double start_wd = 0.01;
  double end_wd = 0.01;
  int64_t wd_incr_steps = 1000;
  WdIncrStyle wd_incr_style = WdIncrStyle::kConstant;

  bool operator==(const SchedulerConfig& o) const;
  bool operator!=(const SchedulerConfig& o) const { return !(*this == o); }
};

struct SchedulerState {
  SchedulerConfig config;
  int64_t num_steps = 0;
};

// Megatron's constructor assertions as errors: 0 <= min_lr <= max_lr, init_lr <= max_lr,
// lr_decay_steps > 0, lr_warmup_steps < lr_decay_steps, 0 <= start_wd <= end_wd,
// wd_incr_steps > 0 (unless constant), start_wd == end_wd when constant, WSD: 0 <=
// wsd_decay_steps <= lr_decay_steps and > 0.
Status ValidateSchedulerConfig(const SchedulerConfig& c);

double SchedulerLr(const SchedulerConfig& c, int64_t num_steps, double max_lr, double min_lr);
double SchedulerWd(const SchedulerConfig& c, int64_t num_steps);

// Sets every group's lr and weight_decay for `state.num_steps` (Megatron's step(0) body).
void ApplySchedule(const SchedulerState& state, std::vector<ParamGroup>* groups);

// Megatron's step(increment): num_steps += increment, then ApplySchedule.
void SchedulerStep(SchedulerState* state, int64_t increment, std::vector<ParamGroup>* groups);

// The saved dict (the ten fields above, Megatron's names; styles as strings).
nlohmann::json SchedulerStateToJson(const SchedulerState& s);
// Fields missing from the dict or of the wrong type: Corruption naming the field's path from
// "opt_param_scheduler" ("opt_param_scheduler.num_steps: expected a non-negative integer, got
// -1"). The config fields not saved (init_lr, WSD) are taken from `args`.
Status SchedulerStateFromJson(const nlohmann::json& j, const SchedulerConfig& args,
                              SchedulerState* out);

// Megatron's load_state_dict / _check_and_set: each saved field is taken from the checkpoint,
// except under override_scheduler (from args). Without either flag, a field whose args value
// differs from the checkpoint's is an error naming the field and both values. Both flags set is an
// error. num_steps always comes from the checkpoint.
Status LoadSchedulerState(const SchedulerState& checkpoint, const SchedulerConfig& args,
                          bool override_scheduler, bool use_checkpoint_scheduler,
                          SchedulerState* out);

}  // namespace ckptspec
