#include "model/load_semantics.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "model/float_codec.h"
#include "model/training_step.h"

namespace ckptspec {
namespace {

RankCoords Coords(int tp, int dp, int pp = 0) {
  RankCoords c;
  c.tp = tp;
  c.dp = dp;
  c.dp_cp = dp;
  c.pp = pp;
  return c;
}

TrainingConfig Config() {
  TrainingConfig c;
  c.model.num_layers = 2;
  c.model.hidden_size = 8;
  c.model.num_attention_heads = 2;
  c.model.vocab_size = 16;
  c.model.num_experts = 2;
  c.seed = 11;
  c.optimizer.cpu_offload_fraction = 0.5;
  c.optimizer.grouping.decoupled_lr = 4e-3;
  c.data.num_samples = 20;
  c.data.global_batch_size = 4;
  c.data.micro_batch_size = 1;
  c.data.dp_size = 2;
  c.scheduler.max_lr = 1e-2;
  c.scheduler.min_lr = 1e-3;
  c.scheduler.lr_warmup_steps = 4;
  c.scheduler.lr_decay_steps = 40;
  c.scheduler.lr_decay_style = LrDecayStyle::kCosine;
  c.ranks = {Coords(0, 0), Coords(1, 0), Coords(0, 1), Coords(1, 1)};
  return c;
}

// A TP x DP layout (PP = CP = EP = 1).
Layout Sizes(int tp, int dp) {
  ParallelSizes p;
  p.tp = tp;
  p.dp = dp;
  Layout l;
  EXPECT_TRUE(Layout::Make(tp * dp, p, RankOrder(), &l).ok());
  return l;
}

CheckpointDescriptor Checkpoint(int iterations, TrainingConfig cfg = Config()) {
  CheckpointDescriptor c;
  EXPECT_TRUE(InitialTrainingState(cfg, &c.state).ok());
  EXPECT_TRUE(Train(&c.state, iterations).ok());
  c.layout = Sizes(2, 2);
  return c;
}

ResumeRequest Request(TrainingConfig cfg = Config()) {
  ResumeRequest r;
  r.config = cfg;
  r.layout = Sizes(2, 2);
  return r;
}

// Resume equivalence through the load rules: load "train k" into the same config and layout,
// train m == train k + m.
RC_GTEST_PROP(LoadSemantics, LoadingOwnCheckpointResumesExactly, ()) {
  TrainingConfig cfg = Config();
  cfg.optimizer.step_counter =
      *rc::gen::element(StepCounter::kPerParameter, StepCounter::kPerGroup);
  cfg.optimizer.chaining = *rc::gen::element(Chaining::kSingle, Chaining::kDenseExpert);
  cfg.model.params_dtype = *rc::gen::element(DType::kBFloat16, DType::kFloat32);
  const int k = *rc::gen::inRange(0, 6), m = *rc::gen::inRange(1, 4);
  RC_LOG() << "k=" << k << " m=" << m << " dtype=" << DTypeName(cfg.model.params_dtype) << "\n";
  const CheckpointDescriptor ckpt = Checkpoint(k, cfg);
  TrainingState loaded;
  RC_ASSERT(ExpectedStateAfterLoad(ckpt, Request(cfg), &loaded).ok());
  TrainingState straight;
  RC_ASSERT(InitialTrainingState(cfg, &straight).ok());
  RC_ASSERT(Train(&straight, k + m).ok());
  RC_ASSERT(Train(&loaded, m).ok());
  const std::string d = FirstDifference(straight, loaded);
  RC_LOG() << d << "\n";
  RC_ASSERT(d.empty());
}

TEST(LoadSemantics, L0BothSchedulerFlagsAndDpMismatchAreErrors) {
  ResumeRequest r = Request();
  r.flags.override_scheduler = r.flags.use_checkpoint_scheduler = true;
  TrainingState out;
  EXPECT_EQ(ExpectedStateAfterLoad(Checkpoint(1), r, &out).code(), Status::Code::kInvalidArgument);
  r = Request();
  r.layout = Sizes(2, 4);
  EXPECT_NE(ExpectedStateAfterLoad(Checkpoint(1), r, &out).message().find("data.dp_size"),
            std::string::npos);
}

TEST(LoadSemantics, L1ModelLoadsUnderAnyLayoutChangeAndMustMatch) {
  const CheckpointDescriptor ckpt = Checkpoint(2);
  ResumeRequest r = Request();
  r.layout = Sizes(4, 2);
  r.flags.no_load_optim = true;
  TrainingState out;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, r, &out).ok());
  for (size_t i = 0; i < out.params.size(); ++i)
    EXPECT_EQ(out.params[i].model, ckpt.state.params[i].model);
  TrainingConfig other = Config();
  other.model.hidden_size = 16;
  const Status s = ExpectedStateAfterLoad(ckpt, Request(other), &out);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("does not match the checkpoint"), std::string::npos) << s.ToString();
}

TrainingConfig WithDtype(DType dtype, TrainingConfig cfg = Config()) {
  cfg.model.params_dtype = dtype;
  return cfg;
}

// Without the optimizer state, each weight goes from the checkpoint's dtype into the run's through
// its exact value, rounded to nearest even (dtype_conversion.h).
TEST(LoadSemantics, L1WeightsConvertIntoTheRunsDtype) {
  for (DType saved : {DType::kBFloat16, DType::kFloat32, DType::kFloat16}) {
    const CheckpointDescriptor ckpt = Checkpoint(2, WithDtype(saved));
    for (DType now : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      ResumeRequest r = Request(WithDtype(now));
      r.flags.no_load_optim = true;
      TrainingState out;
      const Status st = ExpectedStateAfterLoad(ckpt, r, &out);
      ASSERT_TRUE(st.ok()) << DTypeName(saved) << " -> " << DTypeName(now) << ": " << st.ToString();
      EXPECT_EQ(out.config.model.params_dtype, now);
      for (size_t i = 0; i < out.params.size(); ++i) {
        for (size_t e = 0; e < out.params[i].model.size(); ++e) {
          const float v = static_cast<float>(DecodeToDouble(saved, ckpt.state.params[i].model[e]));
          ASSERT_EQ(out.params[i].model[e], EncodeFloat(now, v))
              << DTypeName(saved) << " -> " << DTypeName(now) << " " << out.specs[i].name << "["
              << e << "]";
          // L4: the masters follow the converted weights.
          if (!out.params[i].main.empty()) {
            ASSERT_EQ(out.params[i].main[e], DecodeToDouble(now, out.params[i].model[e]));
          }
        }
      }
    }
  }
}

// Under a dtype change, a parameter whose optimizer state loads continues from its fp32 master:
// an fp32 run takes the bf16 checkpoint's main copy as its weights (not the bf16 weights), a bf16
// run takes an fp32 checkpoint's weights as its main copy and their rounding as its weights.
TEST(LoadSemantics, L1UnderADtypeChangeLoadedStateBringsTheMasterValue) {
  TrainingConfig bf16 = WithDtype(DType::kBFloat16);
  bf16.frozen = {"embedding.word_embeddings.weight"};
  const CheckpointDescriptor mixed = Checkpoint(3, bf16);
  TrainingState out;
  TrainingConfig fp32 = WithDtype(DType::kFloat32, bf16);
  ASSERT_TRUE(ExpectedStateAfterLoad(mixed, Request(fp32), &out).ok());
  bool master_differs_from_weight = false;
  for (size_t i = 0; i < out.params.size(); ++i) {
    const ParamState& was = mixed.state.params[i];
    const ParamState& p = out.params[i];
    EXPECT_TRUE(p.main.empty());  // an fp32 run keeps no main copy
    for (size_t e = 0; e < p.model.size(); ++e) {
      const double weight = DecodeToDouble(DType::kBFloat16, was.model[e]);
      if (p.frozen) {  // no optimizer state: the weight itself, exactly
        ASSERT_EQ(BitsToFloat(p.model[e]), weight);
        continue;
      }
      ASSERT_EQ(BitsToFloat(p.model[e]), MasterValue(mixed.state, static_cast<int>(i), e));
      master_differs_from_weight |= BitsToFloat(p.model[e]) != weight;
    }
    if (!p.frozen) {
      EXPECT_EQ(p.exp_avg, was.exp_avg);
    }
  }
  EXPECT_TRUE(master_differs_from_weight);  // the rule is visible: the masters left the bf16 grid

  const CheckpointDescriptor full = Checkpoint(3, fp32);
  ASSERT_TRUE(ExpectedStateAfterLoad(full, Request(bf16), &out).ok());
  for (size_t i = 0; i < out.params.size(); ++i) {
    const ParamState& p = out.params[i];
    for (size_t e = 0; e < p.model.size(); ++e) {
      const float weight = BitsToFloat(full.state.params[i].model[e]);
      ASSERT_EQ(p.model[e], EncodeFloat(DType::kBFloat16, weight));
      if (!p.frozen) {
        ASSERT_EQ(p.main[e], weight);
      }
      if (p.offloaded) {
        ASSERT_EQ(p.offload[e], weight);
      }
    }
  }
}

// A load's view of a checkpoint holds its weights as the engine delivered them (here fp32, the
// run's dtype); saved_params_dtype says they were saved in bf16: the dtype changed, so the masters
// give the weights.
TEST(LoadSemantics, L1TheSavedDtypeDecidesWhetherTheDtypeChanged) {
  const CheckpointDescriptor mixed = Checkpoint(3, WithDtype(DType::kBFloat16));
  TrainingState direct;
  ASSERT_TRUE(ExpectedStateAfterLoad(mixed, Request(WithDtype(DType::kFloat32)), &direct).ok());
  CheckpointDescriptor view = mixed;
  view.state.config.model.params_dtype = DType::kFloat32;
  for (ParamState& p : view.state.params) {
    for (uint32_t& w : p.model) {
      w = FloatToBits(static_cast<float>(DecodeToDouble(DType::kBFloat16, w)));
    }
  }
  view.saved_params_dtype = DType::kBFloat16;
  TrainingState through_view;
  ASSERT_TRUE(
      ExpectedStateAfterLoad(view, Request(WithDtype(DType::kFloat32)), &through_view).ok());
  EXPECT_EQ(FirstDifference(direct, through_view), "");
  view.saved_params_dtype.reset();  // taken for an fp32 checkpoint: its weights, not its masters
  ASSERT_TRUE(
      ExpectedStateAfterLoad(view, Request(WithDtype(DType::kFloat32)), &through_view).ok());
  EXPECT_NE(FirstDifference(direct, through_view), "");
}

TEST(LoadSemantics, L1AWeightThatOverflowsTheRunsDtypeIsAnError) {
  CheckpointDescriptor ckpt = Checkpoint(0, WithDtype(DType::kFloat32));
  ckpt.state.params[2].model[5] = FloatToBits(70000.0f);
  ResumeRequest r = Request(WithDtype(DType::kFloat16));
  r.flags.no_load_optim = true;
  TrainingState out;
  const Status s = ExpectedStateAfterLoad(ckpt, r, &out);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("model weight of " + ckpt.state.specs[2].name + " element 5"),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("does not fit fp16"), std::string::npos) << s.ToString();
  r.config = WithDtype(DType::kBFloat16);  // bf16 has fp32's range
  EXPECT_TRUE(ExpectedStateAfterLoad(ckpt, r, &out).ok());
}

// Checkpoints hold fp32 moments; a run with bf16 moments takes them rounded to nearest even, a run
// with fp32 moments as saved (bf16 moments are fp32 values: exact).
TEST(LoadSemantics, L3MomentsRoundIntoTheRunsMomentDtype) {
  TrainingConfig fp32_moments = Config();
  TrainingConfig bf16_moments = Config();
  bf16_moments.optimizer.moment_dtype = DType::kBFloat16;
  const CheckpointDescriptor ckpt = Checkpoint(3, fp32_moments);
  TrainingState out;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(bf16_moments), &out).ok());
  bool rounded_some = false;
  for (size_t i = 0; i < out.params.size(); ++i) {
    const ParamState& was = ckpt.state.params[i];
    for (size_t e = 0; e < out.params[i].exp_avg.size(); ++e) {
      const auto bf16 = [](float x) {
        return static_cast<float>(
            DecodeToDouble(DType::kBFloat16, EncodeFloat(DType::kBFloat16, x)));
      };
      ASSERT_EQ(out.params[i].exp_avg[e], bf16(was.exp_avg[e]));
      ASSERT_EQ(out.params[i].exp_avg_sq[e], bf16(was.exp_avg_sq[e]));
      rounded_some |= out.params[i].exp_avg[e] != was.exp_avg[e];
    }
    EXPECT_EQ(out.params[i].main, was.main);  // the masters stay fp32
  }
  EXPECT_TRUE(rounded_some);
  const CheckpointDescriptor from_bf16 = Checkpoint(3, bf16_moments);
  ASSERT_TRUE(ExpectedStateAfterLoad(from_bf16, Request(fp32_moments), &out).ok());
  for (size_t i = 0; i < out.params.size(); ++i) {
    EXPECT_EQ(out.params[i].exp_avg, from_bf16.state.params[i].exp_avg);
    EXPECT_EQ(out.params[i].exp_avg_sq, from_bf16.state.params[i].exp_avg_sq);
  }
}

// dp_reshardable buffers are keyed by the model dtype (Megatron's "dtype_..." in the key): a load
// of its optimizer state under another dtype is refused, naming both; without the optimizer it
// loads.
TEST(LoadSemantics, L3DpReshardableRefusesAParamsDtypeChange) {
  CheckpointDescriptor ckpt = Checkpoint(2, WithDtype(DType::kBFloat16));
  ckpt.optimizer_format = OptimizerFormat::kDpReshardable;
  TrainingState out;
  const Status s = ExpectedStateAfterLoad(ckpt, Request(WithDtype(DType::kFloat32)), &out);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("params dtype change bf16 -> fp32"), std::string::npos)
      << s.ToString();
  ResumeRequest no_optim = Request(WithDtype(DType::kFloat32));
  no_optim.flags.no_load_optim = true;
  EXPECT_TRUE(ExpectedStateAfterLoad(ckpt, no_optim, &out).ok());
  TrainingConfig bf16_moments = WithDtype(DType::kBFloat16);
  bf16_moments.optimizer.moment_dtype = DType::kBFloat16;  // moments are no part of the key
  EXPECT_TRUE(ExpectedStateAfterLoad(ckpt, Request(bf16_moments), &out).ok());
}

TEST(LoadSemantics, L2FinetuneStartsAtIterationZeroWithNothingButTheModel) {
  const CheckpointDescriptor ckpt = Checkpoint(3);
  ResumeRequest r = Request();
  r.flags.finetune = true;
  TrainingState out, fresh;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, r, &out).ok());
  ASSERT_TRUE(InitialTrainingState(Config(), &fresh).ok());
  EXPECT_EQ(out.iteration, 0);
  EXPECT_EQ(out.scheduler.num_steps, 0);
  EXPECT_EQ(out.data, fresh.data);
  EXPECT_EQ(out.rng, fresh.rng);
  EXPECT_EQ(out.rerun.current_iteration, 0);
  for (const ParamState& p : out.params) {
    for (float v : p.exp_avg) ASSERT_EQ(v, 0.0f);
    EXPECT_EQ(p.step, 0);
  }
  // Without finetune the iteration is the checkpoint's.
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &out).ok());
  EXPECT_EQ(out.iteration, 3);
}

TEST(LoadSemantics, L3OptimizerFormatsUnderLayoutChanges) {
  CheckpointDescriptor ckpt = Checkpoint(2);
  TrainingState out;
  ResumeRequest tp = Request();
  tp.layout = Sizes(4, 2);
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, tp, &out).ok());  // fully_reshardable
  EXPECT_EQ(out.params[1].exp_avg, ckpt.state.params[1].exp_avg);
  ckpt.optimizer_format = OptimizerFormat::kDpReshardable;
  const Status s = ExpectedStateAfterLoad(ckpt, tp, &out);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("TP change 2 -> 4"), std::string::npos) << s.ToString();
  TrainingConfig dp4 = Config();
  dp4.data.dp_size = 4;
  dp4.data.global_batch_size = 8;
  ResumeRequest dp = Request(dp4);
  dp.layout = Sizes(2, 4);
  dp.flags.reset_dataloader = true;
  dp.flags.use_checkpoint_scheduler = true;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, dp, &out).ok())
      << ExpectedStateAfterLoad(ckpt, dp, &out).ToString();
  EXPECT_EQ(out.params[1].exp_avg, ckpt.state.params[1].exp_avg);
}

TEST(LoadSemantics, L3GroupsMatchByIdentityNotPosition) {
  CheckpointDescriptor ckpt = Checkpoint(2);
  TrainingState in_order;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &in_order).ok());
  std::reverse(ckpt.state.optimizers[0].groups.begin(), ckpt.state.optimizers[0].groups.end());
  TrainingState reversed;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &reversed).ok());
  EXPECT_EQ(FirstDifference(in_order, reversed), "");
  ckpt.state.optimizers[0].groups[1].identity.Remove(IdentityField::kLrMult);  // B01
  const Status s = ExpectedStateAfterLoad(ckpt, Request(), &reversed);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("saved param group 1 lacks identifier key 'lr_mult'"),
            std::string::npos)
      << s.ToString();
}

TEST(LoadSemantics, L3FrozenParametersAndOptimizerState) {
  const CheckpointDescriptor ckpt = Checkpoint(2);
  TrainingConfig frozen = Config();
  frozen.frozen = {ckpt.state.specs[0].name};  // the decoupled group empties: dropped, not an error
  TrainingState out;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(frozen), &out).ok());
  EXPECT_TRUE(out.params[0].exp_avg.empty());
  EXPECT_EQ(out.params[0].model, ckpt.state.params[0].model);
  const CheckpointDescriptor frozen_ckpt = Checkpoint(2, frozen);
  const Status s = ExpectedStateAfterLoad(frozen_ckpt, Request(), &out);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("no optimizer state"), std::string::npos) << s.ToString();
}

// torch.optim's family: state goes with the parameter, frozen or not; a parameter the checkpoint
// holds no state for stays without (not an error); a checkpoint of the other family is refused.
TEST(LoadSemantics, L3TorchOptimStateGoesWithTheParameterFrozenOrNot) {
  TrainingConfig cfg = Config();
  cfg.optimizer.cpu_offload_fraction = 0.0;
  cfg.optimizer.freeze_family = FreezeFamily::kTorchOptim;
  CheckpointDescriptor ckpt = Checkpoint(2, cfg);
  const std::string name = ckpt.state.specs[0].name;
  ASSERT_TRUE(FreezeParameter(&ckpt.state, name).ok());
  for (const bool frozen_now : {true, false}) {
    TrainingConfig now = cfg;
    if (frozen_now) now.frozen = {name};
    TrainingState out;
    const Status st = ExpectedStateAfterLoad(ckpt, Request(now), &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(out.params[0].frozen, frozen_now);
    EXPECT_EQ(out.params[0].exp_avg, ckpt.state.params[0].exp_avg);
    EXPECT_EQ(out.params[0].step, 2);
  }
  TrainingState out;
  const CheckpointDescriptor fresh = Checkpoint(0, cfg);
  ASSERT_TRUE(ExpectedStateAfterLoad(fresh, Request(cfg), &out).ok());
  for (const ParamState& p : out.params) EXPECT_FALSE(HasOptimizerState(p));
  TrainingConfig megatron = cfg;
  megatron.optimizer.freeze_family = FreezeFamily::kMegatron;
  const Status other = ExpectedStateAfterLoad(ckpt, Request(megatron), &out);
  EXPECT_EQ(other.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(other.message().find("torch_optim freezing family"), std::string::npos)
      << other.ToString();
  LoadFlags no_optim;
  no_optim.no_load_optim = true;
  ResumeRequest without = Request(megatron);
  without.flags = no_optim;
  EXPECT_TRUE(ExpectedStateAfterLoad(ckpt, without, &out).ok());
}

// dp_reshardable buffers are laid out over the trainable parameters: freezing one since the save
// is an error (fully_reshardable drops its state instead, above); without the optimizer it loads.
TEST(LoadSemantics, L3DpReshardableNeedsTheSameTrainableParameters) {
  CheckpointDescriptor ckpt = Checkpoint(2);
  ckpt.optimizer_format = OptimizerFormat::kDpReshardable;
  TrainingConfig frozen = Config();
  frozen.frozen = {ckpt.state.specs[1].name};
  TrainingState out;
  Status s = ExpectedStateAfterLoad(ckpt, Request(frozen), &out);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("'" + ckpt.state.specs[1].name + "' was trainable when saved"),
            std::string::npos)
      << s.ToString();
  ResumeRequest no_optim = Request(frozen);
  no_optim.flags.no_load_optim = true;
  EXPECT_TRUE(ExpectedStateAfterLoad(ckpt, no_optim, &out).ok());
  EXPECT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &out).ok());
}

TEST(LoadSemantics, L4WithoutOptimizerStateMastersFollowTheLoadedModel) {  // B03, B12
  const CheckpointDescriptor ckpt = Checkpoint(3);
  ResumeRequest r = Request();
  r.flags.no_load_optim = true;
  TrainingState out;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, r, &out).ok());
  int offloaded = 0;
  for (const ParamState& p : out.params) {
    offloaded += p.offloaded;
    for (size_t e = 0; e < p.model.size(); ++e) {
      const float v = static_cast<float>(DecodeToDouble(DType::kBFloat16, p.model[e]));
      ASSERT_EQ(p.main[e], v);
      if (p.offloaded) {
        ASSERT_EQ(p.offload[e], v);
      }
    }
  }
  EXPECT_GT(offloaded, 0);
}

TEST(LoadSemantics, L5SchedulerRules) {
  const CheckpointDescriptor ckpt = Checkpoint(3);
  TrainingConfig changed = Config();
  changed.scheduler.max_lr = 2e-2;
  TrainingState out;
  Status s = ExpectedStateAfterLoad(ckpt, Request(changed), &out);
  EXPECT_NE(s.message().find("max_lr"), std::string::npos) << s.ToString();
  ResumeRequest use_ckpt = Request(changed);
  use_ckpt.flags.use_checkpoint_scheduler = true;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, use_ckpt, &out).ok());
  EXPECT_EQ(out.scheduler.config.max_lr, 1e-2);
  EXPECT_EQ(out.scheduler.num_steps, 12);
  ResumeRequest no_optim = Request(changed);
  no_optim.flags.no_load_optim = true;  // also skips the scheduler: no mismatch check, num_steps 0
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, no_optim, &out).ok());
  EXPECT_EQ(out.scheduler.num_steps, 0);
  EXPECT_EQ(out.scheduler.config.max_lr, 2e-2);
}

TEST(LoadSemantics, L6OverrideTakesGroupBoundsFromTheNewConfig) {  // B05
  const CheckpointDescriptor ckpt = Checkpoint(3);
  TrainingConfig changed = Config();
  changed.scheduler.max_lr = 2e-2;
  changed.scheduler.min_lr = 2e-3;
  ResumeRequest r = Request(changed);
  r.flags.override_scheduler = true;
  TrainingState out;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, r, &out).ok());
  EXPECT_EQ(out.scheduler.num_steps, 12);
  for (const ParamGroup& g : out.optimizers[0].groups) {
    // The decoupled max_lr is declared (4e-3, unchanged); min_lr is the scheduler's.
    EXPECT_EQ(*g.identity.max_lr, g.identity.is_decoupled_lr ? 4e-3 : 2e-2);
    EXPECT_EQ(*g.identity.min_lr, 2e-3);
    const double expected =
        SchedulerLr(changed.scheduler, 12, *g.identity.max_lr, 2e-3) * g.identity.lr_mult;
    EXPECT_EQ(g.lr, expected);
  }
  // Without override, the saved bounds stay (consistent with the checkpoint's scheduler).
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &out).ok());
  for (const ParamGroup& g : out.optimizers[0].groups) {
    EXPECT_EQ(*g.identity.max_lr, g.identity.is_decoupled_lr ? 4e-3 : 1e-2);
  }
}

TEST(LoadSemantics, L3AChangedDeclaredBoundIsAnotherGroup) {
  const CheckpointDescriptor ckpt = Checkpoint(3);
  TrainingConfig changed = Config();
  changed.optimizer.grouping.decoupled_lr = 8e-3;
  ResumeRequest r = Request(changed);
  r.flags.override_scheduler = true;
  TrainingState out;
  const Status s = ExpectedStateAfterLoad(ckpt, r, &out);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("max_lr=0.008"), std::string::npos) << s.ToString();
  r.flags.no_load_optim = true;  // without the optimizer state nothing is matched
  EXPECT_TRUE(ExpectedStateAfterLoad(ckpt, r, &out).ok());
}

TEST(LoadSemantics, L3OlderFormGroupsMatchWithoutBoundsAndRefuseGroupsSplitByBounds) {
  CheckpointDescriptor ckpt = Checkpoint(3);
  for (SubOptimizer& o : ckpt.state.optimizers) {
    for (ParamGroup& g : o.groups) g.identity.Remove(IdentityField::kLrBoundsDeclared);
  }
  TrainingState out, newer;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &out).ok());
  ASSERT_TRUE(ExpectedStateAfterLoad(Checkpoint(3), Request(), &newer).ok());
  EXPECT_EQ(FirstDifference(out, newer), "");
  // A region with its own bounds splits a group the older key cannot tell apart.
  TrainingConfig split = Config();
  split.optimizer.grouping.lr_bound_overrides.push_back({"linear_qkv", 2e-2, std::nullopt});
  const Status s = ExpectedStateAfterLoad(ckpt, Request(split), &out);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("older form"), std::string::npos) << s.ToString();
}

TEST(LoadSemantics, L7RngOnlyWhereTheRankStillExists) {
  const CheckpointDescriptor ckpt = Checkpoint(3);
  TrainingState fresh, out;
  ASSERT_TRUE(InitialTrainingState(Config(), &fresh).ok());
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &out).ok());
  EXPECT_EQ(out.rng, ckpt.state.rng);
  ResumeRequest no_rng = Request();
  no_rng.flags.no_load_rng = true;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, no_rng, &out).ok());
  EXPECT_EQ(out.rng, fresh.rng);
  ResumeRequest tp = Request();
  tp.layout = Sizes(1, 2);
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, tp, &out).ok());
  EXPECT_EQ(out.rng, fresh.rng);
  CheckpointDescriptor without = ckpt;
  without.has_rng = false;
  ASSERT_TRUE(ExpectedStateAfterLoad(without, Request(), &out).ok());
  EXPECT_EQ(out.rng, fresh.rng);
  TrainingConfig pp1 = Config();
  pp1.ranks.push_back(Coords(0, 0, 1));
  const Status s = ExpectedStateAfterLoad(ckpt, Request(pp1), &out);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("pp=1"), std::string::npos) << s.ToString();
}

TEST(LoadSemantics, L7RankLocalRngOnlyWhereEveryRankKeepsItsGlobalRank) {
  TrainingConfig local = Config();
  local.data_parallel_random_init = true;
  local.rng_saving = RngSaving::kRankLocal;
  const CheckpointDescriptor ckpt = Checkpoint(3, local);
  TrainingState fresh, out;
  ASSERT_TRUE(InitialTrainingState(local, &fresh).ok());
  ASSERT_NE(ckpt.state.rng, fresh.rng);
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(local), &out).ok());
  EXPECT_EQ(out.rng, ckpt.state.rng);
  // The module's ranks moved (another module before it grew): fresh.
  ResumeRequest moved = Request(local);
  moved.first_rank = 2;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, moved, &out).ok());
  EXPECT_EQ(out.rng, fresh.rng);
  // DP 2 -> 1 with TP unchanged: a sharded RNG loads, a rank-local one does not.
  TrainingConfig dp1 = local;
  dp1.data.dp_size = 1;
  dp1.data.global_batch_size = 2;
  dp1.ranks = {Coords(0, 0), Coords(1, 0)};
  ResumeRequest shrunk = Request(dp1);
  shrunk.layout = Sizes(2, 1);
  TrainingState fresh_dp1;
  ASSERT_TRUE(InitialTrainingState(dp1, &fresh_dp1).ok());
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, shrunk, &out).ok());
  EXPECT_EQ(out.rng, fresh_dp1.rng);
  CheckpointDescriptor sharded = ckpt;
  sharded.state.config.rng_saving = RngSaving::kSharded;
  ASSERT_TRUE(ExpectedStateAfterLoad(sharded, shrunk, &out).ok());
  EXPECT_EQ(out.rng[1], ckpt.state.rng[1]);  // TP rank 1 at DP rank 0 takes its own
}

TEST(LoadSemantics, L8RerunStateOnlyUnderTheSameLayout) {
  CheckpointDescriptor ckpt = Checkpoint(3);
  TrainingState out;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &out).ok());
  EXPECT_EQ(out.rerun.current_iteration, 3);
  ResumeRequest tp = Request();
  tp.layout = Sizes(1, 2);
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, tp, &out).ok());  // sentinel: skipped
  EXPECT_EQ(out.rerun.state, RerunState::kNotRunningYet);
  EXPECT_EQ(out.rerun.current_iteration, 3);  // a fresh machine at the resumed iteration (L2)
  ckpt.state.rerun.state = RerunState::kWillRerunFromCheckpoint;
  const Status s = ExpectedStateAfterLoad(ckpt, tp, &out);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("pending rerun"), std::string::npos);
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &out).ok());
  EXPECT_EQ(out.rerun.state, RerunState::kWillRerunFromCheckpoint);
  TrainingConfig disabled = Config();
  disabled.rerun_mode = RerunMode::kDisabled;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(disabled), &out).ok());
  EXPECT_EQ(out.rerun.state, RerunState::kNotRunningYet);
  ckpt.state.rerun.state = RerunState::kRerunningInPlace;  // B06: never persistable
  EXPECT_EQ(ExpectedStateAfterLoad(ckpt, Request(), &out).code(),
            Status::Code::kFailedPrecondition);
}

// L8 counts the run's world as well as the module's: a module whose own layout is unchanged skips
// the payload when the run's world changed (another module was resized), and a resized module
// skips it even when the run's world is unchanged -- as the framework does (the object is keyed
// by global rank). Found by P10 and P3 on heterogeneous runs in report_determinism_stats mode.
TEST(LoadSemantics, L8RerunStateNeedsTheRunsWorldUnchanged) {
  CheckpointDescriptor ckpt = Checkpoint(3);
  ckpt.state.rerun.sharded.error_injector_injected = 2;  // persisted, not a default
  ckpt.run_world_size = 6;
  ResumeRequest req = Request();
  req.run_world_size = 6;
  TrainingState out;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, req, &out).ok());
  EXPECT_EQ(out.rerun.sharded.error_injector_injected, 2);
  req.run_world_size = 5;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, req, &out).ok());  // sentinel state: skipped
  EXPECT_EQ(out.rerun.sharded.error_injector_injected, 0);
  EXPECT_EQ(out.rerun.current_iteration, 3);
  ckpt.state.rerun.state = RerunState::kWillRerunFromCheckpoint;
  const Status s = ExpectedStateAfterLoad(ckpt, req, &out);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("pending rerun"), std::string::npos);
  // Run world unchanged, the module's own world changed (CP 1 -> 2 keeps TP, PP and DP).
  ckpt.state.rerun.state = RerunState::kNotRunningYet;
  ParallelSizes p;
  p.tp = 2;
  p.dp = 2;
  p.cp = 2;
  ASSERT_TRUE(Layout::Make(8, p, RankOrder(), &req.layout).ok());
  req.run_world_size = 6;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, req, &out).ok());
  EXPECT_EQ(out.rerun.sharded.error_injector_injected, 0);
}

TEST(LoadSemantics, L9DataIteratorContinuesTheGlobalSequenceUnderADpChange) {
  const CheckpointDescriptor ckpt = Checkpoint(3);
  TrainingState out;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(), &out).ok());
  EXPECT_EQ(out.data.consumed_samples, 12);
  TrainingConfig dp1 = Config();
  dp1.data.dp_size = 1;
  ResumeRequest r = Request(dp1);
  r.layout = Sizes(2, 1);
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, r, &out).ok());
  EXPECT_EQ(out.data.consumed_samples, 12);
  // The next iteration under DP 1 draws the positions 12..15 of the same global sequence that
  // DP 2 would have drawn: its one rank takes, in micro-batch 1, what DP 2's rank 1 took in
  // micro-batch 0.
  EXPECT_EQ(FlatSamplesOfStep(dp1.data, out.data),
            FlatSamplesOfStep(Config().data, ckpt.state.data));
  EXPECT_EQ(SamplesOfStep(dp1.data, 12)[1][0], SamplesOfStep(Config().data, 12)[0][1]);
  r.flags.reset_dataloader = true;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, r, &out).ok());
  EXPECT_EQ(out.data.consumed_samples, 0);
  EXPECT_EQ(out.iteration, 3);
}

// L9 for per-DP-rank loaders: under the saved DP size every rank takes its own loader; another
// DP size is refused naming the saved one, unless reset_dataloader starts the loaders fresh.
TEST(LoadSemantics, L9PerRankLoadersResumeOnlyUnderTheSavedDpSize) {
  TrainingConfig cfg = Config();
  cfg.data.sampler = DataSampler::kPerRank;
  const CheckpointDescriptor ckpt = Checkpoint(3, cfg);
  ASSERT_EQ(ckpt.state.data.loaders.size(), 2u);
  TrainingState out;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, Request(cfg), &out).ok());
  EXPECT_EQ(out.data, ckpt.state.data);
  TrainingConfig dp1 = cfg;
  dp1.data.dp_size = 1;
  ResumeRequest r = Request(dp1);
  r.layout = Sizes(2, 1);
  const Status st = ExpectedStateAfterLoad(ckpt, r, &out);
  EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("loaders for DP size 2; this run has DP size 1"), std::string::npos)
      << st.ToString();
  r.flags.reset_dataloader = true;
  ASSERT_TRUE(ExpectedStateAfterLoad(ckpt, r, &out).ok());
  EXPECT_EQ(out.data, InitialDataIterator(dp1.data));
  // A checkpoint of the global sampler does not resume per-DP-rank loaders.
  const Status kinds = ExpectedStateAfterLoad(Checkpoint(3), Request(cfg), &out);
  EXPECT_EQ(kinds.code(), Status::Code::kInvalidArgument) << kinds.ToString();
}

}  // namespace
}  // namespace ckptspec
