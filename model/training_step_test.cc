#include "model/training_step.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <sstream>

#include "model/float_codec.h"

namespace ckptspec {
namespace {

// A small random configuration: every optimizer, scheduler, data and rerun option varies.
TrainingConfig GenConfig() {
  TrainingConfig c;
  c.model.num_layers = *rc::gen::inRange(1, 3);
  c.model.hidden_size = *rc::gen::element(8, 16);
  c.model.num_attention_heads = 2;
  c.model.vocab_size = *rc::gen::element(16, 32);
  c.model.ffn_hidden_size = *rc::gen::element(0, 16);
  c.model.num_experts = *rc::gen::element(0, 0, 2);
  c.model.tie_embeddings = *rc::gen::arbitrary<bool>();
  c.model.add_bias = *rc::gen::arbitrary<bool>();
  c.model.params_dtype = *rc::gen::element(DType::kBFloat16, DType::kFloat32, DType::kFloat16);
  c.seed = *rc::gen::arbitrary<uint64_t>();
  c.optimizer.step_counter = *rc::gen::element(StepCounter::kPerParameter, StepCounter::kPerGroup);
  c.optimizer.chaining = *rc::gen::element(Chaining::kSingle, Chaining::kDenseExpert);
  c.optimizer.cpu_offload_fraction = *rc::gen::element(0.0, 0.3, 1.0);
  if (*rc::gen::arbitrary<bool>())
    c.optimizer.grouping.lr_mult_overrides.push_back({"linear_proj", 0.5});
  if (*rc::gen::arbitrary<bool>()) c.optimizer.grouping.decoupled_lr = 3e-3;
  c.data.num_samples = *rc::gen::inRange<int64_t>(3, 40);
  c.data.micro_batch_size = *rc::gen::inRange<int64_t>(1, 3);
  c.data.dp_size = *rc::gen::inRange<int64_t>(1, 3);
  c.data.global_batch_size =
      c.data.micro_batch_size * c.data.dp_size * *rc::gen::inRange<int64_t>(1, 3);
  c.data.seed = *rc::gen::arbitrary<uint64_t>();
  c.data.shuffle = *rc::gen::arbitrary<bool>();
  SchedulerConfig& s = c.scheduler;
  s.lr_decay_style =
      *rc::gen::element(LrDecayStyle::kConstant, LrDecayStyle::kLinear, LrDecayStyle::kCosine,
                        LrDecayStyle::kInverseSquareRoot, LrDecayStyle::kWSD);
  const int64_t gbs = c.data.global_batch_size;
  s.lr_warmup_steps = gbs * *rc::gen::inRange<int64_t>(0, 3);
  s.lr_decay_steps = s.lr_warmup_steps + gbs * *rc::gen::inRange<int64_t>(1, 6);
  s.wsd_decay_steps = gbs;
  s.init_lr = 1e-4;
  s.max_lr = 1e-2;
  s.min_lr = 1e-4;
  s.start_wd = 0.0;
  s.end_wd = 0.1;
  s.wd_incr_steps = gbs * 4;
  s.wd_incr_style = *rc::gen::element(WdIncrStyle::kLinear, WdIncrStyle::kCosine);
  const auto specs = ModelParameters(c.model);
  for (const ParameterSpec& p : specs) {
    if (*rc::gen::inRange(0, 8) == 0) c.frozen.push_back(p.name);
  }
  c.ranks.clear();
  const int nranks = *rc::gen::inRange(1, 3);
  for (int r = 0; r < nranks; ++r) {
    RankCoords rc_;
    rc_.tp = *rc::gen::inRange(0, 2);
    rc_.pp = *rc::gen::inRange(0, 2);
    rc_.dp = r;
    c.ranks.push_back(rc_);
  }
  c.data_parallel_random_init = *rc::gen::arbitrary<bool>();
  c.rerun_mode = *rc::gen::element(RerunMode::kDisabled, RerunMode::kValidateResults,
                                   RerunMode::kReportDeterminismStats);
  c.optimizer.moment_dtype = *rc::gen::element(DType::kFloat32, DType::kBFloat16);
  return c;
}

std::string Describe(const TrainingConfig& c) {
  std::ostringstream os;
  os << "layers=" << c.model.num_layers << " hidden=" << c.model.hidden_size
     << " experts=" << c.model.num_experts << " dtype=" << DTypeName(c.model.params_dtype)
     << " seed=" << c.seed
     << " step_counter=" << (c.optimizer.step_counter == StepCounter::kPerGroup ? "group" : "param")
     << " chained=" << (c.optimizer.chaining == Chaining::kDenseExpert)
     << " offload=" << c.optimizer.cpu_offload_fraction
     << " moments=" << DTypeName(c.optimizer.moment_dtype) << " frozen=" << c.frozen.size()
     << " N=" << c.data.num_samples << " gbs=" << c.data.global_batch_size
     << " mbs=" << c.data.micro_batch_size << " dp=" << c.data.dp_size
     << " decay=" << LrDecayStyleName(c.scheduler.lr_decay_style)
     << " rerun=" << RerunModeName(c.rerun_mode);
  return os.str();
}

// REQUIRED: train k, then m == train k + m, bit for bit; and the same across a process restart
// (which loses the rerun machine's in-memory state).
RC_GTEST_PROP(TrainingStep, TrainKThenMEqualsTrainKPlusM, ()) {
  const TrainingConfig cfg = GenConfig();
  const int k = *rc::gen::inRange(0, 5), m = *rc::gen::inRange(1, 5);
  RC_LOG() << Describe(cfg) << " k=" << k << " m=" << m << "\n";
  TrainingState init;
  RC_ASSERT(InitialTrainingState(cfg, &init).ok());
  TrainingState straight = init;
  RC_ASSERT(Train(&straight, k + m).ok());
  TrainingState split = init;
  RC_ASSERT(Train(&split, k).ok());
  TrainingState restarted = Restarted(split);
  RC_ASSERT(Train(&split, m).ok());
  RC_ASSERT(Train(&restarted, m).ok());
  const std::string d1 = FirstDifference(straight, split);
  RC_LOG() << "split: " << d1 << "\n";
  RC_ASSERT(d1.empty());
  const std::string d2 = FirstDifference(straight, restarted);
  RC_LOG() << "restarted: " << d2 << "\n";
  RC_ASSERT(d2.empty());
  RC_ASSERT(straight.iteration == k + m);
  RC_ASSERT(straight.data.consumed_samples == SamplesForIterations(cfg.data, k + m));
  RC_ASSERT(straight.scheduler.num_steps == (k + m) * cfg.data.global_batch_size);
}

TrainingConfig FixedConfig() {
  TrainingConfig c;
  c.model.num_layers = 2;
  c.model.hidden_size = 16;
  c.model.num_attention_heads = 2;
  c.model.vocab_size = 32;
  c.model.num_experts = 2;
  c.seed = 7;
  c.data.num_samples = 24;
  c.data.global_batch_size = 8;
  c.data.micro_batch_size = 2;
  c.data.dp_size = 2;
  c.scheduler.max_lr = 1e-2;
  c.scheduler.min_lr = 1e-3;
  c.scheduler.lr_decay_steps = 80;
  c.scheduler.lr_decay_style = LrDecayStyle::kLinear;
  return c;
}

TEST(TrainingStep, DataOrderMatters) {
  TrainingConfig a = FixedConfig(), b = FixedConfig();
  b.data.seed = a.data.seed + 1;
  TrainingState sa, sb;
  ASSERT_TRUE(InitialTrainingState(a, &sa).ok());
  ASSERT_TRUE(InitialTrainingState(b, &sb).ok());
  ASSERT_TRUE(Train(&sa, 1).ok());
  ASSERT_TRUE(Train(&sb, 1).ok());
  for (size_t i = 0; i < sa.params.size(); ++i)
    EXPECT_NE(sa.params[i].exp_avg, sb.params[i].exp_avg);
}

TEST(TrainingStep, GradientIsTheOrderedMeanOverSamples) {
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(FixedConfig(), &s).ok());
  const auto g12 = Gradient(s, 0, {1, 2});
  const auto g1 = Gradient(s, 0, {1});
  const auto g2 = Gradient(s, 0, {2});
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(g12[i], static_cast<float>((static_cast<double>(g1[i]) + g2[i]) / 2.0));
  }
  EXPECT_NE(Gradient(s, 0, {1, 3}), g12);
}

TEST(TrainingStep, FrozenParametersAreUntouchedAndTrainedOnesMove) {
  TrainingConfig cfg = FixedConfig();
  TrainingState init;
  ASSERT_TRUE(InitialTrainingState(cfg, &init).ok());
  cfg.frozen = {init.specs[1].name};
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  ASSERT_TRUE(Train(&s, 3).ok());
  EXPECT_EQ(s.params[1].model, init.params[1].model);
  EXPECT_TRUE(s.params[1].exp_avg.empty());
  EXPECT_EQ(s.params[1].step, 0);
  EXPECT_NE(s.params[2].main, init.params[2].main);
  EXPECT_EQ(s.params[2].step, 3);
}

// torch.optim's family: a frozen parameter stays in its group and keeps its state untouched;
// unfrozen, it trains on from exactly that state. State is created at a parameter's first step.
TEST(TrainingStep, TorchOptimFreezingKeepsGroupAndStateAndUnfreezingResumesThem) {
  TrainingConfig cfg = FixedConfig();
  cfg.optimizer.freeze_family = FreezeFamily::kTorchOptim;
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  size_t grouped = 0;
  for (const SubOptimizer& o : s.optimizers) {
    for (const ParamGroup& g : o.groups) grouped += g.params.size();
  }
  EXPECT_EQ(grouped, s.params.size());
  for (const ParamState& p : s.params) EXPECT_FALSE(HasOptimizerState(p));  // lazy

  ASSERT_TRUE(Train(&s, 2).ok());
  for (const ParamState& p : s.params) ASSERT_EQ(p.step, 2);
  const std::string name = s.specs[1].name;
  const ParamState kept = s.params[1];
  const std::vector<SubOptimizer> groups = s.optimizers;
  ASSERT_TRUE(FreezeParameter(&s, name).ok());
  ASSERT_TRUE(Train(&s, 2).ok());
  EXPECT_EQ(s.params[1].model, kept.model);
  EXPECT_EQ(s.params[1].main, kept.main);
  EXPECT_EQ(s.params[1].exp_avg, kept.exp_avg);
  EXPECT_EQ(s.params[1].exp_avg_sq, kept.exp_avg_sq);
  EXPECT_EQ(s.params[1].step, 2);
  EXPECT_EQ(s.params[2].step, 4);
  ASSERT_EQ(s.optimizers.size(), groups.size());
  for (size_t o = 0; o < groups.size(); ++o) {
    ASSERT_EQ(s.optimizers[o].groups.size(), groups[o].groups.size());
    for (size_t g = 0; g < groups[o].groups.size(); ++g) {
      EXPECT_EQ(s.optimizers[o].groups[g].params, groups[o].groups[g].params);
    }
  }
  ASSERT_TRUE(UnfreezeParameter(&s, name).ok());
  EXPECT_EQ(s.params[1].exp_avg, kept.exp_avg);
  ASSERT_TRUE(Train(&s, 1).ok());
  EXPECT_EQ(s.params[1].step, 3);  // on from the kept step, not from 0
  EXPECT_NE(s.params[1].model, kept.model);

  // Frozen from the start: in its group without state; unfrozen, its state starts at step 1.
  cfg.frozen = {name};
  TrainingState lazy;
  ASSERT_TRUE(InitialTrainingState(cfg, &lazy).ok());
  const std::vector<uint32_t> initial_model = lazy.params[1].model;
  ASSERT_TRUE(Train(&lazy, 2).ok());
  EXPECT_FALSE(HasOptimizerState(lazy.params[1]));
  EXPECT_EQ(lazy.params[1].model, initial_model);
  ASSERT_TRUE(UnfreezeParameter(&lazy, name).ok());
  EXPECT_FALSE(HasOptimizerState(lazy.params[1]));
  ASSERT_TRUE(Train(&lazy, 1).ok());
  ASSERT_TRUE(HasOptimizerState(lazy.params[1]));
  EXPECT_EQ(lazy.params[1].step, 1);
  EXPECT_EQ(lazy.params[2].step, 3);
}

TEST(TrainingStep, ZeroLrMultLeavesAGroupUnchanged) {
  TrainingConfig cfg = FixedConfig();
  cfg.optimizer.grouping.lr_mult_overrides.push_back({"linear_proj", 0.0});
  TrainingState init, s;
  ASSERT_TRUE(InitialTrainingState(cfg, &init).ok());
  s = init;
  ASSERT_TRUE(Train(&s, 2).ok());
  int checked = 0;
  for (size_t i = 0; i < s.specs.size(); ++i) {
    const bool proj = s.specs[i].name.find("linear_proj") != std::string::npos;
    if (proj) {
      EXPECT_EQ(s.params[i].main, init.params[i].main) << s.specs[i].name;
      ++checked;
    } else {
      EXPECT_NE(s.params[i].main, init.params[i].main) << s.specs[i].name;
    }
  }
  EXPECT_EQ(checked, 2);
}

// Megatron's precision-aware optimizer with bf16 moments: each update computes in fp32 and stores
// its moments rounded to bf16, so they differ from an fp32-moment run's while the masters stay fp32.
TEST(TrainingStep, Bf16MomentsAreStoredRoundedAndChangeTheRun) {
  TrainingConfig cfg = FixedConfig();
  TrainingState fp32_moments;
  ASSERT_TRUE(InitialTrainingState(cfg, &fp32_moments).ok());
  cfg.optimizer.moment_dtype = DType::kBFloat16;
  TrainingState bf16_moments;
  ASSERT_TRUE(InitialTrainingState(cfg, &bf16_moments).ok());
  ASSERT_TRUE(Train(&fp32_moments, 3).ok());
  ASSERT_TRUE(Train(&bf16_moments, 3).ok());
  bool moments_differ = false, some_not_bf16 = false;
  for (size_t p = 0; p < bf16_moments.params.size(); ++p) {
    const ParamState& b = bf16_moments.params[p];
    for (size_t e = 0; e < b.exp_avg.size(); ++e) {
      for (float m : {b.exp_avg[e], b.exp_avg_sq[e]}) {
        EXPECT_EQ(DecodeToDouble(DType::kBFloat16, EncodeFloat(DType::kBFloat16, m)), m)
            << bf16_moments.specs[p].name << " element " << e;
      }
      const float f = fp32_moments.params[p].exp_avg[e];
      some_not_bf16 |= DecodeToDouble(DType::kBFloat16, EncodeFloat(DType::kBFloat16, f)) != f;
      moments_differ |= f != b.exp_avg[e];
    }
  }
  EXPECT_TRUE(some_not_bf16);  // the fp32 run's moments are not all bf16 values
  EXPECT_TRUE(moments_differ);
  EXPECT_FALSE(FirstDifference(fp32_moments, bf16_moments).empty());
}

TEST(TrainingStep, TheConfiguredStepCounterAdvances) {
  for (StepCounter sc : {StepCounter::kPerParameter, StepCounter::kPerGroup}) {
    TrainingConfig cfg = FixedConfig();
    cfg.optimizer.step_counter = sc;
    TrainingState s;
    ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
    ASSERT_TRUE(Train(&s, 2).ok());
    const std::string frozen = s.specs[0].name;
    ASSERT_TRUE(FreezeParameter(&s, frozen).ok());
    ASSERT_TRUE(Train(&s, 3).ok());
    const bool per_group = sc == StepCounter::kPerGroup;
    for (const ParamGroup& g : s.optimizers[0].groups) EXPECT_EQ(g.step, per_group ? 5 : 0);
    EXPECT_EQ(s.params[1].step, per_group ? 0 : 5);
    EXPECT_EQ(s.params[0].step, 0);
  }
}

TEST(TrainingStep, BiasCorrectionUsesTheStepCounter) {
  // A first step of Adam moves every element by about lr (|m / sqrt(v)| = 1 after correction).
  TrainingConfig cfg = FixedConfig();
  cfg.model.params_dtype = DType::kFloat32;
  cfg.scheduler.start_wd = cfg.scheduler.end_wd = 0.0;
  TrainingState init, s;
  ASSERT_TRUE(InitialTrainingState(cfg, &init).ok());
  s = init;
  ASSERT_TRUE(Train(&s, 1).ok());
  const double lr = init.optimizers[0].groups[0].lr;
  const int p = init.optimizers[0].groups[0].params[0];
  for (size_t e = 0; e < 8; ++e) {
    const double moved = std::fabs(MasterValue(s, p, e) - MasterValue(init, p, e));
    EXPECT_NEAR(moved, lr, lr * 1e-3) << e;
  }
}

// B03's mechanism: after a model-only load, a CPU-offloaded optimizer whose fp32 copies were not
// refreshed steps from stale values and writes them back over the loaded weights.
TEST(TrainingStep, StaleOffloadCopiesEraseLoadedWeights) {
  TrainingConfig cfg = FixedConfig();
  cfg.optimizer.cpu_offload_fraction = 1.0;
  TrainingState original;
  ASSERT_TRUE(InitialTrainingState(cfg, &original).ok());
  TrainingConfig other = cfg;
  other.seed = 99;
  TrainingState donor;
  ASSERT_TRUE(InitialTrainingState(other, &donor).ok());

  TrainingState correct = original, stale = original, untouched = original;
  for (size_t i = 0; i < original.params.size(); ++i) {
    correct.params[i].model = stale.params[i].model = donor.params[i].model;
  }
  RefreshMastersFromModel(&correct);
  for (ParamState& p : stale.params) {  // refresh the main copies only
    for (size_t e = 0; e < p.model.size(); ++e) {
      p.main[e] = static_cast<float>(DecodeToDouble(DType::kBFloat16, p.model[e]));
    }
  }
  ASSERT_TRUE(Train(&correct, 1).ok());
  ASSERT_TRUE(Train(&stale, 1).ok());
  ASSERT_TRUE(Train(&untouched, 1).ok());
  EXPECT_EQ(stale.params[0].model, untouched.params[0].model);  // the loaded weights are gone
  EXPECT_NE(correct.params[0].model, untouched.params[0].model);
}

TEST(TrainingStep, RerunModesDoNotChangeTheMath) {
  TrainingState a, b, c;
  TrainingConfig cfg = FixedConfig();
  RankCoords tp1;
  tp1.tp = 1;
  cfg.ranks = {RankCoords{}, tp1};
  cfg.rerun_mode = RerunMode::kValidateResults;
  ASSERT_TRUE(InitialTrainingState(cfg, &a).ok());
  cfg.rerun_mode = RerunMode::kReportDeterminismStats;
  ASSERT_TRUE(InitialTrainingState(cfg, &b).ok());
  ASSERT_TRUE(Train(&a, 3).ok());
  ASSERT_TRUE(Train(&b, 3).ok());
  ASSERT_EQ(b.rerun.stats["loss"].size(), 3u);
  for (double d : b.rerun.stats["loss"]) EXPECT_EQ(d, 0.0);  // deterministic
  b.rerun.mode = a.rerun.mode;
  EXPECT_TRUE(b.rerun.sharded.rerun_requested);  // REPORT mode requests a rerun every iteration
  b.rerun.sharded = a.rerun.sharded;
  EXPECT_EQ(FirstDifference(a, b), "");
}

TEST(TrainingStep, APendingRerunStopsTraining) {
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(FixedConfig(), &s).ok());
  s.rerun.state = RerunState::kRerunningAgainFromCheckpoint;
  const Status st = Train(&s, 1);
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("iteration 1"), std::string::npos);
  EXPECT_EQ(Train(&s, -1).code(), Status::Code::kInvalidArgument);
}

TEST(TrainingStep, SmallModelsTrainFast) {
  TrainingConfig cfg = FixedConfig();  // about 11,000 elements
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  size_t elements = 0;
  for (const ParamState& p : s.params) elements += p.model.size();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(Train(&s, 50).ok());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("elements", static_cast<int>(elements));
  RecordProperty("us_per_step", static_cast<int>(ms * 1000 / 50));
  std::printf("%zu elements, %.1f us per step\n", elements, ms * 1000 / 50);
}

}  // namespace
}  // namespace ckptspec
