#include "model/describe.h"

#include <sstream>

#include "model/scheduler.h"

namespace ckptspec {

std::string DescribeModel(const ModelConfig& m) {
  std::ostringstream os;
  if (!m.name.empty()) os << m.name << ": ";
  os << m.num_layers << " layers";
  if (m.pipeline_split.first_stage_layers >= 0 || m.pipeline_split.last_stage_layers >= 0) {
    os << " (first stage " << m.pipeline_split.first_stage_layers << ", last "
       << m.pipeline_split.last_stage_layers << ")";
  }
  os << ", hidden " << m.hidden_size << ", heads " << m.num_attention_heads << "/"
     << m.query_groups() << " groups, ffn " << m.ffn() << ", vocab " << m.vocab_size;
  if (m.num_experts > 0) {
    os << ", " << m.num_experts << " experts (ffn " << m.moe_ffn() << ", every " << m.moe_layer_freq
       << " layer)";
  }
  os << (m.tie_embeddings ? ", tied" : ", untied") << (m.gated_linear_unit ? ", glu" : "")
     << (m.add_bias ? ", bias" : "") << ", " << DTypeName(m.params_dtype);
  return os.str();
}

std::string DescribeLoadFlags(const LoadFlags& f) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += " ";
    s += name;
  };
  add(f.finetune, "--finetune");
  add(f.no_load_optim, "--no-load-optim");
  add(f.no_load_rng, "--no-load-rng");
  add(f.override_scheduler, "--override-opt_param-scheduler");
  add(f.use_checkpoint_scheduler, "--use-checkpoint-opt_param-scheduler");
  add(f.reset_dataloader, "--reset-dataloader");
  return s.empty() ? "(no flags)" : s;
}

std::string DescribeTrainingConfig(const TrainingConfig& c) {
  std::ostringstream os;
  os << "model " << DescribeModel(c.model) << "; seed " << c.seed << "; optimizer "
     << (c.optimizer.chaining == Chaining::kDenseExpert ? "dense+expert chained" : "single")
     << ", step per "
     << (c.optimizer.step_counter == StepCounter::kPerGroup ? "group" : "parameter");
  if (c.optimizer.freeze_family == FreezeFamily::kTorchOptim) {
    os << ", torch.optim freezing (frozen parameters keep group and state; state created lazily)";
  }
  if (c.optimizer.cpu_offload_fraction > 0)
    os << ", cpu offload " << c.optimizer.cpu_offload_fraction;
  if (c.optimizer.moment_dtype != DType::kFloat32)
    os << ", " << DTypeName(c.optimizer.moment_dtype) << " moments";
  for (const auto& o : c.optimizer.grouping.lr_mult_overrides) {
    os << ", lr_mult " << o.lr_mult << " for *" << o.name_contains << "*";
  }
  for (const auto& o : c.optimizer.grouping.lr_bound_overrides) {
    os << ", max_lr " << o.max_lr;
    if (o.min_lr) os << " min_lr " << *o.min_lr;
    os << " for *" << o.name_contains << "*";
  }
  if (c.optimizer.grouping.decoupled_lr)
    os << ", decoupled lr " << *c.optimizer.grouping.decoupled_lr;
  os << "; scheduler " << LrDecayStyleName(c.scheduler.lr_decay_style) << " warmup "
     << c.scheduler.lr_warmup_steps << " decay " << c.scheduler.lr_decay_steps << "; data "
     << c.data.num_samples << " samples, gbs " << c.data.global_batch_size << ", mbs "
     << c.data.micro_batch_size << ", dp " << c.data.dp_size << (c.data.shuffle ? ", shuffled" : "")
     << (c.data.sampler == DataSampler::kPerRank ? ", per-DP-rank loaders" : "") << "; rerun "
     << RerunModeName(c.rerun_mode);
  if (c.data_parallel_random_init) os << "; data_parallel_random_init";
  if (c.rng_saving == RngSaving::kRankLocal) os << "; RNG saved rank-local";
  if (!c.frozen.empty()) {
    os << "; frozen";
    for (const auto& name : c.frozen) os << " " << name;
  }
  return os.str();
}

}  // namespace ckptspec
