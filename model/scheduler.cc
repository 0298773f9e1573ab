#include "model/scheduler.h"
#include "model/json_fields.h"
#include "model/number_text.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ckptspec {

namespace {
constexpr double kPi = 3.14159265358979323846;

}  // namespace

const char* LrDecayStyleName(LrDecayStyle s) {
  switch (s) {
    case LrDecayStyle::kConstant:
      return "constant";
    case LrDecayStyle::kLinear:
      return "linear";
    case LrDecayStyle::kCosine:
      return "cosine";
    case LrDecayStyle::kInverseSquareRoot:
      return "inverse-square-root";
    case LrDecayStyle::kWSD:
      return "WSD";
  }
  return "?";
}

const char* WdIncrStyleName(WdIncrStyle s) {
  switch (s) {
    case WdIncrStyle::kConstant:
      return "constant";
    case WdIncrStyle::kLinear:
      return "linear";
    case WdIncrStyle::kCosine:
      return "cosine";
  }
  return "?";
}

bool ParseLrDecayStyle(const std::string& name, LrDecayStyle* out) {
  for (LrDecayStyle s : {LrDecayStyle::kConstant, LrDecayStyle::kLinear, LrDecayStyle::kCosine,
                         LrDecayStyle::kInverseSquareRoot, LrDecayStyle::kWSD}) {
    if (name == LrDecayStyleName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

bool ParseWdIncrStyle(const std::string& name, WdIncrStyle* out) {
  for (WdIncrStyle s : {WdIncrStyle::kConstant, WdIncrStyle::kLinear, WdIncrStyle::kCosine}) {
    if (name == WdIncrStyleName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

const char* WsdDecayStyleName(WsdDecayStyle s) {
  switch (s) {
    case WsdDecayStyle::kLinear:
      return "linear";
    case WsdDecayStyle::kCosine:
      return "cosine";
    case WsdDecayStyle::kExponential:
      return "exponential";
    case WsdDecayStyle::kMinusSqrt:
      return "minus_sqrt";
  }
  return "?";
}

bool ParseWsdDecayStyle(const std::string& name, WsdDecayStyle* out) {
  for (WsdDecayStyle s : {WsdDecayStyle::kLinear, WsdDecayStyle::kCosine,
                          WsdDecayStyle::kExponential, WsdDecayStyle::kMinusSqrt}) {
    if (name == WsdDecayStyleName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

bool SchedulerConfig::operator==(const SchedulerConfig& o) const {
  return init_lr == o.init_lr && max_lr == o.max_lr && min_lr == o.min_lr &&
         lr_warmup_steps == o.lr_warmup_steps && lr_decay_steps == o.lr_decay_steps &&
         lr_decay_style == o.lr_decay_style && wsd_decay_steps == o.wsd_decay_steps &&
         lr_wsd_decay_style == o.lr_wsd_decay_style && start_wd == o.start_wd &&
         end_wd == o.end_wd && wd_incr_steps == o.wd_incr_steps && wd_incr_style == o.wd_incr_style;
}

Status ValidateSchedulerConfig(const SchedulerConfig& c) {
  auto bad = [](const std::string& m) { return Status::InvalidArgument("scheduler: " + m); };
  if (!(c.min_lr >= 0.0)) return bad("min_lr = " + ExactDecimal(c.min_lr) + " must be >= 0");
  if (!(c.max_lr >= c.min_lr)) {
    return bad("max_lr = " + ExactDecimal(c.max_lr) +
               " must be >= min_lr = " + ExactDecimal(c.min_lr));
  }
  if (!(c.init_lr >= 0.0 && c.init_lr <= c.max_lr)) {
    return bad("init_lr = " + ExactDecimal(c.init_lr) + " must be in [0, max_lr]");
  }
  if (c.lr_decay_steps <= 0) {
    return bad("lr_decay_steps = " + std::to_string(c.lr_decay_steps) + " must be positive");
  }
  if (c.lr_warmup_steps < 0 || c.lr_warmup_steps >= c.lr_decay_steps) {
    return bad("lr_warmup_steps = " + std::to_string(c.lr_warmup_steps) +
               " must be in [0, lr_decay_steps = " + std::to_string(c.lr_decay_steps) + ")");
  }
  if (!(c.start_wd >= 0.0 && c.end_wd >= c.start_wd)) {
    return bad("weight decay must satisfy 0 <= start_wd (" + ExactDecimal(c.start_wd) +
               ") <= end_wd (" + ExactDecimal(c.end_wd) + ")");
  }
  if (c.wd_incr_style == WdIncrStyle::kConstant) {
    if (c.start_wd != c.end_wd) return bad("constant wd_incr_style needs start_wd == end_wd");
  } else if (c.wd_incr_steps <= 0) {
    return bad("wd_incr_steps = " + std::to_string(c.wd_incr_steps) + " must be positive");
  }
  if (c.lr_decay_style == LrDecayStyle::kWSD &&
      (c.wsd_decay_steps <= 0 || c.wsd_decay_steps > c.lr_decay_steps)) {
    return bad("WSD needs 0 < wsd_decay_steps (" + std::to_string(c.wsd_decay_steps) +
               ") <= lr_decay_steps");
  }
  return Status::OK();
}

double SchedulerLr(const SchedulerConfig& c, int64_t num_steps, double max_lr, double min_lr) {
  const double n = static_cast<double>(num_steps);
  if (c.lr_warmup_steps > 0 && num_steps <= c.lr_warmup_steps) {
    return c.init_lr + (max_lr - c.init_lr) * n / static_cast<double>(c.lr_warmup_steps);
  }
  if (c.lr_decay_style == LrDecayStyle::kConstant) return max_lr;
  if (num_steps > c.lr_decay_steps) return min_lr;
  if (c.lr_decay_style == LrDecayStyle::kInverseSquareRoot) {
    const double warmup = static_cast<double>(std::max<int64_t>(c.lr_warmup_steps, 1));
    const double steps = static_cast<double>(std::max<int64_t>(num_steps, 1));
    return std::max(min_lr, max_lr * std::sqrt(warmup) / std::sqrt(steps));
  }
  const double ratio = static_cast<double>(num_steps - c.lr_warmup_steps) /
                       static_cast<double>(c.lr_decay_steps - c.lr_warmup_steps);
  double coeff = 1.0;
  switch (c.lr_decay_style) {
    case LrDecayStyle::kLinear:
      coeff = 1.0 - ratio;
      break;
    case LrDecayStyle::kCosine:
      coeff = 0.5 * (std::cos(kPi * ratio) + 1.0);
      break;
    case LrDecayStyle::kWSD: {
      const int64_t anneal_start = c.lr_decay_steps - c.wsd_decay_steps;
      if (num_steps <= anneal_start) {
        coeff = 1.0;
      } else {
        const double r =
            static_cast<double>(num_steps - anneal_start) / static_cast<double>(c.wsd_decay_steps);
        switch (c.lr_wsd_decay_style) {
          case WsdDecayStyle::kLinear:
            coeff = 1.0 - r;
            break;
          case WsdDecayStyle::kCosine:
            coeff = 0.5 * (std::cos(kPi * r) + 1.0);
            break;
          case WsdDecayStyle::kExponential:
            coeff = 2.0 * std::pow(0.5, r) - 1.0;
            break;
          case WsdDecayStyle::kMinusSqrt:
            coeff = 1.0 - std::sqrt(r);
            break;
        }
      }
      break;
    }
    default:
      break;
  }
  return min_lr + coeff * (max_lr - min_lr);
}

double SchedulerWd(const SchedulerConfig& c, int64_t num_steps) {
  if (num_steps > c.wd_incr_steps) return c.end_wd;
  if (c.wd_incr_style == WdIncrStyle::kConstant) return c.end_wd;
  const double r = static_cast<double>(num_steps) / static_cast<double>(c.wd_incr_steps);
  const double coeff =
      c.wd_incr_style == WdIncrStyle::kLinear ? r : 0.5 * (std::cos(kPi * (1.0 - r)) + 1.0);
  return c.start_wd + coeff * (c.end_wd - c.start_wd);
}

void ApplySchedule(const SchedulerState& state, std::vector<ParamGroup>* groups) {
  const double wd = SchedulerWd(state.config, state.num_steps);
  for (ParamGroup& g : *groups) {
    const ParamGroupIdentity& id = g.identity;
    const double max_lr = id.max_lr ? *id.max_lr : state.config.max_lr;
    const double min_lr = id.min_lr ? *id.min_lr : state.config.min_lr;
    const double lr_mult = id.Has(IdentityField::kLrMult) ? id.lr_mult : 1.0;
    const double wd_mult = id.Has(IdentityField::kWdMult) ? id.wd_mult : 1.0;
    g.lr = SchedulerLr(state.config, state.num_steps, max_lr, min_lr) * lr_mult;
    g.weight_decay = wd * wd_mult;
  }
}

void SchedulerStep(SchedulerState* state, int64_t increment, std::vector<ParamGroup>* groups) {
  state->num_steps += increment;
  ApplySchedule(*state, groups);
}

nlohmann::json SchedulerStateToJson(const SchedulerState& s) {
  const SchedulerConfig& c = s.config;
  return nlohmann::json{{"max_lr", c.max_lr},
                        {"min_lr", c.min_lr},
                        {"lr_warmup_steps", c.lr_warmup_steps},
                        {"lr_decay_steps", c.lr_decay_steps},
                        {"lr_decay_style", LrDecayStyleName(c.lr_decay_style)},
                        {"num_steps", s.num_steps},
                        {"start_wd", c.start_wd},
                        {"end_wd", c.end_wd},
                        {"wd_incr_steps", c.wd_incr_steps},
                        {"wd_incr_style", WdIncrStyleName(c.wd_incr_style)}};
}

namespace {

// The saved fields into s (its other config fields kept); InvalidArgument naming the field.
Status ReadSchedulerState(const JsonField& f, SchedulerState* s) {
  SchedulerConfig& c = s->config;
  CKPTSPEC_RETURN_IF_ERROR(f.Member("max_lr").GetDouble(&c.max_lr));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("min_lr").GetDouble(&c.min_lr));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("lr_warmup_steps").GetInt64(&c.lr_warmup_steps));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("lr_decay_steps").GetInt64(&c.lr_decay_steps));
  CKPTSPEC_RETURN_IF_ERROR(
      f.Member("lr_decay_style").GetEnum(ParseLrDecayStyle, &c.lr_decay_style));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("num_steps").GetNonNegativeInt64(&s->num_steps));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("start_wd").GetDouble(&c.start_wd));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("end_wd").GetDouble(&c.end_wd));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("wd_incr_steps").GetInt64(&c.wd_incr_steps));
  return f.Member("wd_incr_style").GetEnum(ParseWdIncrStyle, &c.wd_incr_style);
}

}  // namespace

Status SchedulerStateFromJson(const nlohmann::json& j, const SchedulerConfig& args,
                              SchedulerState* out) {
  SchedulerState s;
  s.config = args;
  CKPTSPEC_RETURN_IF_ERROR(
      AsCorruption(ReadSchedulerState(JsonField(j, "opt_param_scheduler"), &s)));
  *out = s;
  return Status::OK();
}

Status LoadSchedulerState(const SchedulerState& ckpt, const SchedulerConfig& args,
                          bool override_scheduler, bool use_checkpoint_scheduler,
                          SchedulerState* out) {
  if (override_scheduler && use_checkpoint_scheduler) {
    return Status::InvalidArgument(
        "both override_opt_param_scheduler and use_checkpoint_opt_param_scheduler are set");
  }
  SchedulerState s;
  s.num_steps = ckpt.num_steps;  // always from the checkpoint
  s.config = args;               // init_lr and WSD fields are never saved
  if (override_scheduler) {
    *out = s;
    return Status::OK();
  }
  const SchedulerConfig& c = ckpt.config;
  auto check = [&](const char* name, const std::string& arg, const std::string& saved) -> Status {
    if (use_checkpoint_scheduler || arg == saved) return Status::OK();
    return Status::InvalidArgument(std::string("scheduler ") + name + ": args value " + arg +
                                   " differs from the checkpoint value " + saved +
                                   " (set override_opt_param_scheduler or "
                                   "use_checkpoint_opt_param_scheduler)");
  };
  CKPTSPEC_RETURN_IF_ERROR(check("max_lr", ExactDecimal(args.max_lr), ExactDecimal(c.max_lr)));
  CKPTSPEC_RETURN_IF_ERROR(check("min_lr", ExactDecimal(args.min_lr), ExactDecimal(c.min_lr)));
  CKPTSPEC_RETURN_IF_ERROR(check("lr_warmup_steps", std::to_string(args.lr_warmup_steps),
                                 std::to_string(c.lr_warmup_steps)));
  CKPTSPEC_RETURN_IF_ERROR(check("lr_decay_steps", std::to_string(args.lr_decay_steps),
                                 std::to_string(c.lr_decay_steps)));
  CKPTSPEC_RETURN_IF_ERROR(check("lr_decay_style", LrDecayStyleName(args.lr_decay_style),
                                 LrDecayStyleName(c.lr_decay_style)));
  CKPTSPEC_RETURN_IF_ERROR(
      check("start_wd", ExactDecimal(args.start_wd), ExactDecimal(c.start_wd)));
  CKPTSPEC_RETURN_IF_ERROR(check("end_wd", ExactDecimal(args.end_wd), ExactDecimal(c.end_wd)));
  CKPTSPEC_RETURN_IF_ERROR(
      check("wd_incr_steps", std::to_string(args.wd_incr_steps), std::to_string(c.wd_incr_steps)));
  CKPTSPEC_RETURN_IF_ERROR(check("wd_incr_style", WdIncrStyleName(args.wd_incr_style),
                                 WdIncrStyleName(c.wd_incr_style)));
  s.config.max_lr = c.max_lr;
  s.config.min_lr = c.min_lr;
  s.config.lr_warmup_steps = c.lr_warmup_steps;
  s.config.lr_decay_steps = c.lr_decay_steps;
  s.config.lr_decay_style = c.lr_decay_style;
  s.config.start_wd = c.start_wd;
  s.config.end_wd = c.end_wd;
  s.config.wd_incr_steps = c.wd_incr_steps;
  s.config.wd_incr_style = c.wd_incr_style;
  *out = s;
  return Status::OK();
}

}  // namespace ckptspec
