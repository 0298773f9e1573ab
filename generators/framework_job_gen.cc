#include "generators/framework_job_gen.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "generators/size_guard.h"

namespace ckptspec {
namespace gen {
namespace {

// The powers of two up to `max` that divide n (parallel sizes: vocabularies and heads are powers
// of two here).
std::vector<int64_t> Divisors(int64_t n, int64_t max) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n && d <= max; d *= 2) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// Sizes along one dimension: 1 first (what shrinking goes to), then what `declared` allows.
int64_t SizeAlong(const FrameworkSupport& s, const char* dim, int64_t room, int64_t max) {
  if (!s.Has(s.parallelism, dim)) return 1;
  return *rc::gen::elementOf(Divisors(room, max));
}

// A layout of `world` ranks inside the support.
Layout LayoutOf(const FrameworkSupport& s, int64_t world) {
  const int64_t tp = SizeAlong(s, "tp", world, 4);
  const int64_t pp = SizeAlong(s, "pp", world / tp, 4);
  const int64_t cp = SizeAlong(s, "cp", world / tp / pp, 2);
  ParallelSizes sizes;
  sizes.tp = tp;
  sizes.pp = pp;
  sizes.cp = cp;
  const int64_t dp = world / tp / pp / cp;
  // EP divides dp x cp (expert TP = TP) and needs experts.
  if (s.Has(s.model, "moe")) sizes.ep = SizeAlong(s, "ep", dp * cp, 4);
  Layout layout;
  if (!Layout::Make(world, sizes, RankOrder(), &layout).ok())
    RC_FAIL("generated an invalid layout");
  return layout;
}

// A tiny model that fits `layout`, with the support's features.
ModelConfig ModelFor(const FrameworkSupport& s, const Layout& layout) {
  ModelConfig m;
  const int64_t tp = layout.tp(), pp = layout.pp();
  m.num_layers = static_cast<int>(pp * *rc::gen::inRange<int64_t>(1, 3));
  m.num_attention_heads = static_cast<int>(tp * *rc::gen::elementOf(std::vector<int64_t>{2, 1, 4}));
  const int kv = *rc::gen::elementOf(std::vector<int>{8, 16});
  m.hidden_size = m.num_attention_heads * kv;
  m.num_query_groups = 0;
  if (s.Has(s.model, "query_groups") && OneIn(3)) {
    std::vector<int> groups;
    for (int g = static_cast<int>(tp); g < m.num_attention_heads; g += static_cast<int>(tp)) {
      if (m.num_attention_heads % g == 0) groups.push_back(g);
    }
    if (!groups.empty()) m.num_query_groups = *rc::gen::elementOf(groups);
  }
  m.ffn_hidden_size = m.hidden_size * *rc::gen::elementOf(std::vector<int>{2, 4});
  m.vocab_size = *rc::gen::elementOf(std::vector<int>{64, 128});
  m.gated_linear_unit = s.Has(s.model, "gated_linear_unit") && OneIn(3);
  m.add_bias = s.Has(s.model, "add_bias") && OneIn(3);
  m.tie_embeddings = !(s.Has(s.model, "untied_embeddings") && OneIn(3));
  if ((s.Has(s.model, "moe") && OneIn(4)) || layout.ep() > 1) {
    m.num_experts = static_cast<int>(layout.ep() * *rc::gen::inRange<int64_t>(1, 3));
    m.moe_ffn_hidden_size = m.hidden_size;
  }
  m.params_dtype = *rc::gen::elementOf(s.dtypes);
  if (s.Has(s.model, "pipeline_split") && pp > 1 && OneIn(4)) {
    m.num_layers += 1;
    m.pipeline_split.first_stage_layers =
        static_cast<int>(m.num_layers - (pp - 1) * ((m.num_layers - 1) / (pp - 1)));
  }
  return m;
}

// A pattern of `names` that matches some parameter name of the job's models, or "".
std::string PatternOf(const std::vector<std::string>& candidates) {
  return *rc::gen::elementOf(candidates);
}

FrameworkOptimizer OptimizerFor(const FrameworkSupport& s, double max_lr) {
  FrameworkOptimizer o;
  o.distributed = s.Has(s.optimizer, "distributed") && !OneIn(3);  // shrinks to distributed
  std::vector<OptimizerFormat> formats;
  for (OptimizerFormat f : s.optimizer_formats) {
    if (f == OptimizerFormat::kFullyReshardable || o.distributed) formats.push_back(f);
  }
  if (formats.empty()) {
    o.distributed = true;  // dp_reshardable alone: the distributed optimizer it needs
    formats = s.optimizer_formats;
  }
  o.format = *rc::gen::elementOf(formats);
  GroupingConfig& g = o.grouping;
  g.weight_decay = *rc::gen::elementOf(std::vector<double>{0.01, 0.0, 0.1});
  g.beta2 = *rc::gen::elementOf(std::vector<double>{0.999, 0.95});
  if (o.distributed && s.Has(s.optimizer, "cpu_offload") && OneIn(3)) {
    o.cpu_offload_fraction = *rc::gen::elementOf(std::vector<double>{1.0, 0.5});
  }
  if (s.Has(s.optimizer, "lr_mult") && OneIn(3)) {
    g.lr_mult_overrides.push_back({PatternOf({"output_layer", "word_embeddings", "linear_fc2"}),
                                   *rc::gen::elementOf(std::vector<double>{2.0, 0.5})});
  }
  if (s.Has(s.optimizer, "lr_bounds") && OneIn(3)) {
    LrBoundOverride b;
    b.name_contains = PatternOf({"linear_fc1", "linear_proj"});
    b.max_lr = max_lr * *rc::gen::elementOf(std::vector<double>{0.5, 3.0});
    if (OneIn(2)) b.min_lr = b.max_lr / 7;
    g.lr_bound_overrides.push_back(b);
  }
  if (s.Has(s.optimizer, "decoupled_lr") && OneIn(4)) {
    g.decoupled_lr = max_lr / 4;
    if (OneIn(2)) g.decoupled_min_lr = max_lr / 40;
  }
  return o;
}

SchedulerConfig SchedulerFor(int64_t global_batch) {
  SchedulerConfig c;
  c.lr_decay_style = *rc::gen::elementOf(std::vector<LrDecayStyle>{
      LrDecayStyle::kConstant, LrDecayStyle::kCosine, LrDecayStyle::kLinear,
      LrDecayStyle::kInverseSquareRoot, LrDecayStyle::kWSD});
  c.max_lr = *rc::gen::elementOf(std::vector<double>{1e-3, 3e-4});
  c.min_lr = c.lr_decay_style == LrDecayStyle::kConstant
                 ? c.max_lr
                 : *rc::gen::elementOf(std::vector<double>{1e-5, 3e-5, 0.0});
  c.lr_decay_steps = global_batch * *rc::gen::elementOf(std::vector<int64_t>{50, 8});
  c.lr_warmup_steps = OneIn(3) ? global_batch * 2 : 0;
  if (c.lr_decay_style == LrDecayStyle::kWSD) c.wsd_decay_steps = c.lr_decay_steps / 2;
  c.start_wd = c.end_wd = 0.01;
  c.wd_incr_steps = c.lr_decay_steps;
  if (OneIn(4)) {
    c.wd_incr_style =
        *rc::gen::elementOf(std::vector<WdIncrStyle>{WdIncrStyle::kLinear, WdIncrStyle::kCosine});
    c.start_wd = 0.0;
    c.end_wd = 0.1;
  }
  return c;
}

int64_t Lcm(int64_t a, int64_t b) { return a / std::gcd(a, b) * b; }

}  // namespace

bool OneIn(int n) { return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange(0, n)) == n - 1; }

rc::Gen<FrameworkJob> JobWithin(const FrameworkSupport& support, bool plan_cache, int max_world) {
  return AtNonNegativeSize(rc::gen::exec([support, plan_cache, max_world] {
    const FrameworkSupport& s = support;
    const int64_t world = std::max(1, std::min(max_world, s.max_world_size));
    FrameworkJob job;
    job.seed = *rc::gen::inRange<uint64_t>(1, 1000);
    const bool two = s.max_modules > 1 && world >= 2 && OneIn(4);
    const std::vector<std::string> names =
        two ? std::vector<std::string>{"vision", "language"} : std::vector<std::string>{""};
    int64_t left = world;
    for (size_t i = 0; i < names.size(); ++i) {
      const int64_t rest = static_cast<int64_t>(names.size() - i - 1);
      const int64_t ranks = *rc::gen::inRange<int64_t>(1, left - rest + 1);
      left -= ranks;
      FrameworkModule m;
      m.name = names[i];
      m.layout = LayoutOf(s, ranks);
      m.model = ModelFor(s, m.layout);
      m.model.name = m.name;
      job.modules.push_back(std::move(m));
    }
    int64_t dps = 1;
    for (const FrameworkModule& m : job.modules) dps = Lcm(dps, m.layout.dp());
    job.global_batch_size = dps * *rc::gen::elementOf(std::vector<int64_t>{4, 2, 8});
    job.scheduler = SchedulerFor(job.global_batch_size);
    job.optimizer = OptimizerFor(s, job.scheduler.max_lr);
    if (s.Has(s.optimizer, "frozen") && OneIn(4)) {
      // Patterns that name a kind of parameter in every layer: the spec stacks a kind's layers
      // under one key and saves its optimizer state whole.
      job.frozen.push_back(
          PatternOf({"linear_fc1", "word_embeddings", "final_layernorm", "linear_qkv"}));
    }
    job.rerun_mode = *rc::gen::elementOf(s.rerun_modes);
    job.assume_constant_structure = plan_cache && OneIn(2);
    for (const std::string& option : s.options) job.options[option] = *rc::gen::arbitrary<bool>();
    const Status valid = ValidateFrameworkJob(job);
    if (!valid.ok()) RC_FAIL("generated an invalid job: " + valid.ToString());
    return job;
  }));
}

rc::Gen<FrameworkJob> ResumeJobFor(const FrameworkJob& saved, const FrameworkSupport& support,
                                   int max_world, bool change_layout) {
  return AtNonNegativeSize(rc::gen::exec([saved, support, max_world, change_layout] {
    if (!change_layout) return saved;
    FrameworkJob job = saved;
    const int64_t budget = std::min<int64_t>(max_world, support.max_world_size);
    int64_t used = 0;
    for (size_t i = 0; i < job.modules.size(); ++i) {
      FrameworkModule& m = job.modules[i];
      const int64_t rest = static_cast<int64_t>(job.modules.size() - i - 1);
      std::vector<Layout> fits;
      for (int64_t world = 1; world <= budget - used - rest; ++world) {
        for (int64_t tp : Divisors(world, 4)) {
          if (tp > 1 && !support.Has(support.parallelism, "tp")) continue;
          for (int64_t pp : Divisors(world / tp, 4)) {
            if (pp > 1 && !support.Has(support.parallelism, "pp")) continue;
            ParallelSizes sizes;  // CP and EP kept where they fit
            sizes.tp = tp;
            sizes.pp = pp;
            sizes.cp = (world / tp / pp) % m.layout.cp() == 0 ? m.layout.cp() : 1;
            sizes.ep = m.layout.ep();
            Layout l;
            if (!Layout::Make(world, sizes, RankOrder(), &l).ok()) continue;
            if (!ValidateModelForLayout(m.model, l).ok()) continue;
            if (job.global_batch_size % l.dp() != 0) continue;
            fits.push_back(l);
          }
        }
      }
      if (!fits.empty()) m.layout = *rc::gen::elementOf(fits);  // else it keeps its layout
      used += m.layout.world_size();
    }
    const Status valid = ValidateFrameworkJob(job);
    if (!valid.ok()) RC_FAIL("generated an invalid resume job: " + valid.ToString());
    return job;
  }));
}

rc::Gen<LoadFlags> LoadFlagsWithin(const FrameworkSupport& support, bool allow_conflict) {
  return AtNonNegativeSize(rc::gen::exec([support, allow_conflict] {
    LoadFlags f;
    auto sometimes = [&support](const char* name) {
      return support.Has(support.load_flags, name) && OneIn(5);
    };
    f.finetune = sometimes("finetune");
    f.no_load_optim = sometimes("no_load_optim");
    f.no_load_rng = sometimes("no_load_rng");
    f.override_scheduler = sometimes("override_scheduler");
    f.use_checkpoint_scheduler = sometimes("use_checkpoint_scheduler");
    if (f.override_scheduler && f.use_checkpoint_scheduler && !allow_conflict) {
      f.use_checkpoint_scheduler = false;
    }
    return f;
  }));
}

}  // namespace gen

void showValue(const FrameworkJob& job, std::ostream& os) { os << DescribeJob(job); }

}  // namespace ckptspec
