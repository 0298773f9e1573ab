#include "model/training_state.h"

#include <gtest/gtest.h>

#include "model/float_codec.h"

namespace ckptspec {
namespace {

TrainingConfig SmallConfig() {
  TrainingConfig c;
  c.model.num_layers = 2;
  c.model.hidden_size = 8;
  c.model.num_attention_heads = 2;
  c.model.vocab_size = 16;
  c.model.num_experts = 2;
  c.model.tie_embeddings = false;
  c.seed = 42;
  c.data.num_samples = 20;
  c.data.global_batch_size = 4;
  c.data.micro_batch_size = 1;
  c.data.dp_size = 2;
  return c;
}

TEST(TrainingState, InitialStateIsAPureFunctionOfTheConfig) {
  TrainingState a, b, c;
  ASSERT_TRUE(InitialTrainingState(SmallConfig(), &a).ok());
  ASSERT_TRUE(InitialTrainingState(SmallConfig(), &b).ok());
  EXPECT_EQ(FirstDifference(a, b), "");
  TrainingConfig other = SmallConfig();
  other.seed = 43;
  ASSERT_TRUE(InitialTrainingState(other, &c).ok());
  EXPECT_NE(
      FirstDifference(a, c).find("model weight of embedding.word_embeddings.weight at index 0"),
      std::string::npos)
      << FirstDifference(a, c);
}

TEST(TrainingState, CopiesAndOptimizerStateAtInit) {
  TrainingConfig cfg = SmallConfig();
  cfg.optimizer.cpu_offload_fraction = 0.5;
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  int offloaded = 0, resident = 0;
  for (size_t i = 0; i < s.params.size(); ++i) {
    const ParamState& p = s.params[i];
    ASSERT_EQ(p.main.size(), p.model.size());
    for (size_t e = 0; e < p.model.size(); ++e) {
      ASSERT_EQ(p.main[e], DecodeToDouble(DType::kBFloat16, p.model[e]));
      if (p.offloaded) {
        ASSERT_EQ(p.offload[e], p.main[e]);
      }
      ASSERT_EQ(p.exp_avg[e], 0.0f);
    }
    (p.offloaded ? offloaded : resident)++;
    EXPECT_EQ(p.offload.empty(), !p.offloaded);
  }
  EXPECT_GT(offloaded, 0);
  EXPECT_GT(resident, 0);
  EXPECT_TRUE(s.params[0].offloaded);  // the prefix is offloaded

  cfg.model.params_dtype = DType::kFloat32;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  for (const ParamState& p : s.params)
    EXPECT_TRUE(p.main.empty());  // fp32: the model is the master
}

TEST(TrainingState, ChainedDenseExpertOptimizers) {
  TrainingConfig cfg = SmallConfig();
  cfg.optimizer.chaining = Chaining::kDenseExpert;
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  ASSERT_EQ(s.optimizers.size(), 2u);
  EXPECT_EQ(s.optimizers[0].name, "dense");
  EXPECT_EQ(s.optimizers[1].name, "expert");
  for (const ParamGroup& g : s.optimizers[1].groups) {
    EXPECT_TRUE(g.identity.is_expert_parallel);
    for (int i : g.params) EXPECT_TRUE(s.specs[i].is_expert());
  }
  for (const ParamGroup& g : s.optimizers[0].groups) EXPECT_FALSE(g.identity.is_expert_parallel);
  cfg.model.num_experts = 0;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  EXPECT_EQ(s.optimizers.size(), 1u);
}

TEST(TrainingState, SchedulerSetsGroupLrAtInit) {
  TrainingConfig cfg = SmallConfig();
  cfg.scheduler.init_lr = 1e-4;
  cfg.scheduler.lr_warmup_steps = 8;
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  for (const ParamGroup& g : s.optimizers[0].groups) EXPECT_EQ(g.lr, 1e-4);
}

TEST(TrainingState, ConfigErrorsAreNamed) {
  TrainingConfig cfg = SmallConfig();
  cfg.frozen = {"no.such.weight"};
  TrainingState s;
  Status st = InitialTrainingState(cfg, &s);
  EXPECT_EQ(st.code(), Status::Code::kNotFound);
  EXPECT_NE(st.message().find("no.such.weight"), std::string::npos);
  cfg = SmallConfig();
  cfg.model.params_dtype = DType::kFloat8E4M3;
  EXPECT_EQ(InitialTrainingState(cfg, &s).code(), Status::Code::kNotSupported);
  cfg = SmallConfig();
  cfg.optimizer.cpu_offload_fraction = 1.5;
  EXPECT_NE(InitialTrainingState(cfg, &s).message().find("cpu_offload_fraction"),
            std::string::npos);
  cfg = SmallConfig();
  cfg.data.global_batch_size = 3;
  EXPECT_NE(InitialTrainingState(cfg, &s).message().find("global_batch_size"), std::string::npos);
}

TEST(TrainingState, FreezeDropsOptimizerStateAndGroupMembership) {
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(SmallConfig(), &s).ok());
  const std::string name = s.specs[1].name;
  ASSERT_TRUE(FreezeParameter(&s, name).ok());
  EXPECT_TRUE(s.params[1].frozen);
  EXPECT_TRUE(s.params[1].main.empty());
  EXPECT_TRUE(s.params[1].exp_avg.empty());
  for (const SubOptimizer& o : s.optimizers) {
    for (const ParamGroup& g : o.groups) {
      EXPECT_FALSE(g.params.empty());
      for (int i : g.params) EXPECT_NE(i, 1);
    }
  }
  EXPECT_EQ(FreezeParameter(&s, name).code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(FreezeParameter(&s, "nope").code(), Status::Code::kNotFound);
  TrainingConfig cfg = SmallConfig();
  cfg.frozen = {name};
  TrainingState t;
  ASSERT_TRUE(InitialTrainingState(cfg, &t).ok());
  EXPECT_EQ(FirstDifference(s, t), "");  // frozen later == frozen from the start, before training
}

TEST(TrainingState, FirstDifferenceNamesClassParameterIndexAndValues) {
  TrainingState a;
  ASSERT_TRUE(InitialTrainingState(SmallConfig(), &a).ok());
  const std::string name = a.specs[2].name;
  TrainingState b = a;
  b.params[2].exp_avg[3] = 0.5f;
  EXPECT_EQ(FirstDifference(a, b),
            "exp_avg of " + name + " at index 3: 0 (0x0) vs 0.5 (0x3f000000)");
  b = a;
  b.params[2].main[1] += 1.0f;
  EXPECT_NE(FirstDifference(a, b).find("main copy of " + name + " at index 1"), std::string::npos);
  b = a;
  b.optimizers[0].groups[0].lr = 7.0;
  EXPECT_NE(FirstDifference(a, b).find("optimizer optimizer param group 0 lr"), std::string::npos);
  b = a;
  b.scheduler.num_steps = 9;
  EXPECT_NE(FirstDifference(a, b).find("scheduler num_steps: 0 vs 9"), std::string::npos);
  b = a;
  AdvanceAll(&b.rng[0], 1);
  EXPECT_NE(FirstDifference(a, b).find("RNG state of rank (tp=0"), std::string::npos);
  b = a;
  b.data.consumed_samples = 4;
  EXPECT_NE(FirstDifference(a, b).find("data iterator"), std::string::npos);
  b = a;
  b.rerun.current_iteration = 3;
  EXPECT_NE(FirstDifference(a, b).find("rerun state machine"), std::string::npos);
  b = a;
  b.iteration = 1;
  EXPECT_EQ(FirstDifference(a, b), "iteration: 0 vs 1");
}

TEST(TrainingState, RefreshMastersCopiesModelIntoMainAndOffload) {
  TrainingConfig cfg = SmallConfig();
  cfg.optimizer.cpu_offload_fraction = 1.0;
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  s.params[0].model[0] = static_cast<uint32_t>(EncodeFloat(DType::kBFloat16, 0.75f));
  RefreshMastersFromModel(&s);
  EXPECT_EQ(s.params[0].main[0], 0.75f);
  EXPECT_EQ(s.params[0].offload[0], 0.75f);
  EXPECT_EQ(MasterValue(s, 0, 0), 0.75);
}

TEST(TrainingState, TorchOptimFamilyNeedsPerParameterStepsAndNoOffload) {
  TrainingConfig cfg = SmallConfig();
  cfg.optimizer.freeze_family = FreezeFamily::kTorchOptim;
  EXPECT_TRUE(ValidateTrainingConfig(cfg).ok());
  TrainingConfig per_group = cfg;
  per_group.optimizer.step_counter = StepCounter::kPerGroup;
  const Status g = ValidateTrainingConfig(per_group);
  EXPECT_EQ(g.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(g.message().find("per parameter"), std::string::npos) << g.ToString();
  TrainingConfig offload = cfg;
  offload.optimizer.cpu_offload_fraction = 0.5;
  const Status o = ValidateTrainingConfig(offload);
  EXPECT_EQ(o.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(o.message().find("offload"), std::string::npos) << o.ToString();
  FreezeFamily parsed = FreezeFamily::kMegatron;
  EXPECT_TRUE(ParseFreezeFamily(FreezeFamilyName(FreezeFamily::kTorchOptim), &parsed));
  EXPECT_EQ(parsed, FreezeFamily::kTorchOptim);
  EXPECT_FALSE(ParseFreezeFamily("torch", &parsed));
}

TEST(TrainingState, MomentsAreKeptInFp32OrBf16) {
  TrainingConfig cfg = SmallConfig();
  for (DType d : kAllDTypes) {
    cfg.optimizer.moment_dtype = d;
    const Status s = ValidateTrainingConfig(cfg);
    EXPECT_EQ(s.ok(), d == DType::kFloat32 || d == DType::kBFloat16) << DTypeName(d);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), Status::Code::kNotSupported);
      EXPECT_NE(s.message().find(DTypeName(d)), std::string::npos) << s.ToString();
    }
  }
}

TEST(TrainingState, OnlyTheTorchOptimFamilyUnfreezes) {
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(SmallConfig(), &s).ok());
  const std::string name = s.specs[0].name;
  EXPECT_EQ(UnfreezeParameter(&s, name).code(), Status::Code::kFailedPrecondition);  // not frozen
  ASSERT_TRUE(FreezeParameter(&s, name).ok());
  EXPECT_FALSE(HasOptimizerState(s.params[0]));  // megatron: dropped
  const Status m = UnfreezeParameter(&s, name);
  EXPECT_EQ(m.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(m.message().find("megatron"), std::string::npos) << m.ToString();
  EXPECT_EQ(UnfreezeParameter(&s, "no.such.weight").code(), Status::Code::kNotFound);
}

TEST(TrainingState, AStackedKeyWithStateOnSomeInstancesOnlyIsNamed) {
  TrainingConfig cfg = SmallConfig();
  cfg.optimizer.freeze_family = FreezeFamily::kTorchOptim;
  TrainingState s;
  ASSERT_TRUE(InitialTrainingState(cfg, &s).ok());
  EXPECT_TRUE(CheckStackedKeysWhole(s).ok());  // none has state
  const int layer1 = FindParameter(s, "decoder.layers.1.self_attention.linear_qkv.weight");
  ASSERT_GE(layer1, 0);
  CreateOptimizerState(&s, layer1);
  const Status st = CheckStackedKeysWhole(s);
  EXPECT_EQ(st.code(), Status::Code::kNotSupported);
  EXPECT_NE(st.message().find("decoder.layers.self_attention.linear_qkv.weight"), std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace ckptspec
