#include "model/state_sharding.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>

#include "model/chunk_resolve.h"
#include "model/float_codec.h"
#include "model/run_spec.h"
#include "model/training_step.h"
#include "model/validate.h"

namespace ckptspec {
namespace {

Layout MakeLayout(int64_t world, int64_t tp, int64_t pp, int64_t cp = 1, int64_t ep = 1,
                  int64_t etp = 0) {
  ParallelSizes p;
  p.tp = tp;
  p.pp = pp;
  p.cp = cp;
  p.ep = ep;
  p.etp = etp;
  Layout l;
  const Status s = Layout::Make(world, p, RankOrder(), &l);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return l;
}

// A tiny model for `layout`: every rank's coordinates, DP size from the layout.
TrainingConfig Config(const Layout& layout, int experts = 0, const std::string& name = "") {
  TrainingConfig c;
  c.model.name = name;
  c.model.num_layers = 2;
  c.model.hidden_size = 8;
  c.model.num_attention_heads = 4;
  c.model.vocab_size = 16;
  c.model.num_experts = experts;
  c.model.add_bias = true;
  c.seed = 7;
  c.data.num_samples = 24;
  c.data.micro_batch_size = 1;
  c.data.dp_size = layout.dp();
  c.data.global_batch_size = 4 * layout.dp();
  c.scheduler.max_lr = 1e-2;
  c.scheduler.min_lr = 1e-3;
  c.scheduler.lr_decay_steps = 400;
  c.optimizer.chaining = experts > 0 ? Chaining::kDenseExpert : Chaining::kSingle;
  c.ranks = RankCoordsOf(layout);
  return c;
}

TrainingState Trained(const TrainingConfig& c, int steps) {
  TrainingState s;
  Status st = InitialTrainingState(c, &s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  st = Train(&s, steps);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return s;
}

GlobalSignature Sig(const std::vector<ShardedStateDict>& dicts) {
  GlobalSignature g;
  for (size_t r = 0; r < dicts.size(); ++r)
    g.ranks.push_back(SignatureOf(static_cast<int64_t>(r), dicts[r], true));
  return g;
}

std::string Violations(const std::vector<ShardedStateDict>& dicts) {
  const GlobalSignature g = Sig(dicts);
  std::vector<Violation> v = CheckShardingIntegrity(g);
  for (auto& x : CheckKeyInjectivity(g)) v.push_back(x);
  for (auto& x : CheckCommonState(g)) v.push_back(x);
  return v.empty() ? "" : FormatViolations(v);
}

// Loads: templates under `layout`, filled from the saved main replicas, rebuilt.
Status Load(const std::vector<ShardedStateDict>& saved, const HeterogeneousLayout& layout,
            const std::vector<TrainingConfig>& configs, const LoadFlags& flags,
            std::vector<TrainingState>* out) {
  CheckpointInfo info;
  CKPTSPEC_RETURN_IF_ERROR(ReadCheckpointInfo(saved.at(0).common, &info));
  std::vector<ShardedStateDict> request;
  CKPTSPEC_RETURN_IF_ERROR(StateTemplates(layout, configs, info, flags, &request));
  for (size_t r = 0; r < request.size(); ++r) {
    CKPTSPEC_RETURN_IF_ERROR(ResolveFromSaved(saved, static_cast<int64_t>(r), &request[r]));
  }
  return RebuildTrainingState(request, layout, configs, flags, out);
}

Status LoadOne(const std::vector<ShardedStateDict>& saved, const Layout& layout,
               const TrainingConfig& config, const LoadFlags& flags, TrainingState* out) {
  std::vector<TrainingState> states;
  CKPTSPEC_RETURN_IF_ERROR(Load(saved, HeterogeneousLayout::Single(layout, config.model.name),
                                {config}, flags, &states));
  *out = std::move(states[0]);
  return Status::OK();
}

std::set<std::string> Keys(const std::vector<ShardedStateDict>& dicts) {
  std::set<std::string> k;
  for (const auto& d : dicts) {
    for (const auto& t : d.tensors) k.insert(t.spec.key);
    for (const auto& o : d.objects) k.insert(o.spec.key);
  }
  return k;
}

ShardingConfig DpReshardable(int64_t bucket = 100, int64_t align = 8) {
  ShardingConfig s;
  s.optimizer_format = OptimizerFormat::kDpReshardable;
  s.buffers.bucket_size = bucket;
  s.buffers.param_alignment = align;
  return s;
}

TEST(StateSharding, DenseTp2Pp2Dp2WithTiedEmbeddingsIsValidAndRoundTrips) {
  const Layout l = MakeLayout(8, 2, 2);
  const TrainingState s = Trained(Config(l), 2);
  for (const ShardingConfig& sc : {ShardingConfig(), DpReshardable()}) {
    std::vector<ShardedStateDict> dicts;
    ASSERT_TRUE(ShardTrainingState(l, s, sc, &dicts).ok());
    EXPECT_EQ(Violations(dicts), "");
    TrainingState back;
    const Status st = LoadOne(dicts, l, s.config, LoadFlags(), &back);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(FirstDifference(back, s), "");
  }
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
  const std::set<std::string> keys = Keys(dicts);
  EXPECT_TRUE(keys.count("optimizer.state.exp_avg.embedding.word_embeddings.weight"));
  EXPECT_TRUE(keys.count("optimizer.state.fp32_param.decoder.layers.mlp.linear_fc1.weight"));
  EXPECT_TRUE(keys.count("rng_state") && keys.count("rerun_state_machine_state") &&
              keys.count("data_iterator"));
  // The tied embedding on the last stage is a (1, 0, dp) replica.
  bool tied = false;
  for (const auto& t : dicts[l.DenseRank(0, 0, 1, 1)].tensors) {
    if (t.spec.key == "embedding.word_embeddings.weight")
      tied = t.spec.replica_id == ReplicaId{1, 0, 1};
  }
  EXPECT_TRUE(tied);
  // rng_state: (pp, tp) of (pp_size, tp_size), replica dp_cp.
  for (const auto& o : dicts[l.DenseRank(1, 0, 1, 1)].objects) {
    if (o.spec.key != "rng_state") continue;
    EXPECT_EQ(o.spec.global_shape, (Dims{2, 2}));
    EXPECT_EQ(o.spec.global_offset, (Dims{1, 1}));
    EXPECT_EQ(o.spec.replica_id, (ReplicaId{1}));
  }
}

TEST(StateSharding, DisabledRerunModeSavesNoRerunObject) {
  // Found by P15: the object was saved but never requested, so a plain resume under
  // strict=raise_all failed on the "missing" key rerun_state_machine_state.
  const Layout l = MakeLayout(4, 2, 1);
  TrainingConfig c = Config(l);
  c.rerun_mode = RerunMode::kDisabled;
  const TrainingState s = Trained(c, 1);
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
  EXPECT_EQ(Violations(dicts), "");
  EXPECT_FALSE(Keys(dicts).count("rerun_state_machine_state"));
  TrainingState back;
  const Status st = LoadOne(dicts, l, s.config, LoadFlags(), &back);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(FirstDifference(back, s), "");
}

TEST(StateSharding, MoeWithEpAndExpertTpIsValidChainedAndRoundTrips) {
  const Layout l = MakeLayout(8, 2, 1, 1, 2, 1);  // tp2 dp4 | ep2 etp1 edp4
  const TrainingState s = Trained(Config(l, 4), 2);
  ASSERT_EQ(s.optimizers.size(), 2u);
  for (const ShardingConfig& sc : {ShardingConfig(), DpReshardable(64, 4)}) {
    std::vector<ShardedStateDict> dicts;
    ASSERT_TRUE(ShardTrainingState(l, s, sc, &dicts).ok());
    EXPECT_EQ(Violations(dicts), "");
    const std::set<std::string> keys = Keys(dicts);
    bool chained0 = false, chained1 = false;
    for (const std::string& k : keys) {
      chained0 |= k.rfind("chained_0.optimizer.distributed.", 0) == 0;
      chained1 |= k.rfind("chained_1.optimizer.distributed.", 0) == 0;
    }
    const bool dp = sc.optimizer_format == OptimizerFormat::kDpReshardable;
    EXPECT_EQ(chained0, dp);
    EXPECT_EQ(chained1, dp);
    TrainingState back;
    const Status st = LoadOne(dicts, l, s.config, LoadFlags(), &back);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(FirstDifference(back, s), "");
  }
  // EP > 1: rng_state is sharded by DP-CP too, so every EP rank's expert tracker is kept.
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
  for (const auto& o : dicts[5].objects) {
    if (o.spec.key == "rng_state") {
      EXPECT_EQ(o.spec.global_shape, (Dims{1, 2, 4}));
    }
  }
}

TEST(StateSharding, PartlyFrozenStackedKeyIsRefused) {
  const Layout l = MakeLayout(2, 1, 1);
  TrainingConfig c = Config(l);
  c.frozen = {"decoder.layers.1.mlp.linear_fc2.weight"};
  std::vector<ShardedStateDict> dicts;
  const Status st = ShardTrainingState(l, Trained(c, 0), ShardingConfig(), &dicts);
  EXPECT_EQ(st.code(), Status::Code::kNotSupported);
  EXPECT_NE(st.message().find("decoder.layers.mlp.linear_fc2.weight"), std::string::npos)
      << st.ToString();
  c.frozen.push_back("decoder.layers.0.mlp.linear_fc2.weight");
  TrainingState s = Trained(c, 1);
  ASSERT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
  EXPECT_EQ(Violations(dicts), "");
  TrainingState back;
  ASSERT_TRUE(LoadOne(dicts, l, c, LoadFlags(), &back).ok());
  EXPECT_EQ(FirstDifference(back, s), "");
}

// torch.optim's family: a save holds the state of the parameters stepped so far (none at
// iteration 0), the common state records which, and a load requests exactly those.
TEST(StateSharding, TorchOptimSavesAndRequestsTheStateOfSteppedParametersOnly) {
  const Layout l = MakeLayout(2, 1, 1);
  TrainingConfig c = Config(l);
  c.optimizer.freeze_family = FreezeFamily::kTorchOptim;
  std::vector<ShardedStateDict> dicts;
  const TrainingState fresh = Trained(c, 0);
  ASSERT_TRUE(ShardTrainingState(l, fresh, ShardingConfig(), &dicts).ok());
  for (const std::string& key : Keys(dicts)) {
    EXPECT_EQ(key.find("optimizer.state."), std::string::npos) << key;
  }
  EXPECT_EQ(dicts[0].common->at("optimizer_state_params"), nlohmann::json::parse("[[]]"));
  TrainingState back;
  ASSERT_TRUE(LoadOne(dicts, l, c, LoadFlags(), &back).ok());
  EXPECT_EQ(FirstDifference(back, fresh), "");

  // Trained, then one key frozen: its state is saved and comes back, frozen or not.
  TrainingState s = Trained(c, 1);
  for (const char* name :
       {"decoder.layers.0.mlp.linear_fc2.weight", "decoder.layers.1.mlp.linear_fc2.weight"}) {
    ASSERT_TRUE(FreezeParameter(&s, name).ok());
  }
  ASSERT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
  EXPECT_EQ(Violations(dicts), "");
  EXPECT_EQ(Keys(dicts).count("optimizer.state.exp_avg.decoder.layers.mlp.linear_fc2.weight"), 1u);
  ASSERT_TRUE(LoadOne(dicts, l, s.config, LoadFlags(), &back).ok());
  EXPECT_EQ(FirstDifference(back, s), "");
  ASSERT_TRUE(LoadOne(dicts, l, c, LoadFlags(), &back).ok());  // unfrozen on resume
  EXPECT_EQ(back.params[FindParameter(back, "decoder.layers.1.mlp.linear_fc2.weight")].step, 1);

  TrainingConfig megatron = c;
  megatron.optimizer.freeze_family = FreezeFamily::kMegatron;
  const Status other = LoadOne(dicts, l, megatron, LoadFlags(), &back);
  EXPECT_EQ(other.code(), Status::Code::kFailedPrecondition) << other.ToString();
  ASSERT_TRUE(ShardTrainingState(l, Trained(megatron, 1), ShardingConfig(), &dicts).ok());
  EXPECT_FALSE(dicts[0].common->contains("optimizer_state_params"));  // older bytes kept
}

TEST(StateSharding, TorchOptimStateRecordIsValidated) {
  const Layout l = MakeLayout(2, 1, 1);
  TrainingConfig c = Config(l);
  c.optimizer.freeze_family = FreezeFamily::kTorchOptim;
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, Trained(c, 1), ShardingConfig(), &dicts).ok());
  CheckpointInfo info;
  for (const char* bad :
       {"[[1, 0]]", "[[-1]]", "[[], []]", "[3]", "[[18446744073709551615]]", "[[0.5]]"}) {
    nlohmann::json common = dicts[0].common;
    common["optimizer_state_params"] = nlohmann::json::parse(bad);
    EXPECT_EQ(ReadCheckpointInfo(common, &info).code(), Status::Code::kCorruption) << bad;
  }
  const auto error = [&](const char* member, const char* value) {
    nlohmann::json common = dicts[0].common;
    common[member] = nlohmann::json::parse(value);
    return ReadCheckpointInfo(common, &info).message();
  };
  EXPECT_EQ(error("optimizer_state_params", "[[1, 0]]"),
            "common.optimizer_state_params[0][1]: expected a parameter index above the previous "
            "one, got 0");
  EXPECT_EQ(error("optimizer_state_params", "[[-1]]"),
            "common.optimizer_state_params[0][0]: expected an integer in [0, 2147483647], got -1");
  EXPECT_EQ(error("optimizer_state_params", "[3]"),
            "common.optimizer_state_params[0]: expected an array, got 3");
  EXPECT_EQ(error("rng_saving", "[\"often\"]"), "common.rng_saving[0]: unknown value \"often\"");
  EXPECT_EQ(error("data_parallel_random_init", "[]"),
            "common.data_parallel_random_init: expected an array of 1 element, got []");
  EXPECT_EQ(error("parallel_layout", "[{\"name\": \"\", \"first_rank\": 0}]"),
            "common.parallel_layout[0]: missing required member \"world_size\"");
  nlohmann::json common = dicts[0].common;
  common["optimizer_state_params"] = nlohmann::json::parse("[[0, 100000]]");
  ASSERT_TRUE(ReadCheckpointInfo(common, &info).ok());
  std::vector<ShardedStateDict> request;
  const Status st =
      StateTemplates(HeterogeneousLayout::Single(l, ""), {c}, info, LoadFlags(), &request);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("parameter 100000"), std::string::npos) << st.ToString();
  ShardingConfig dp_reshardable = DpReshardable();
  const Status dp = ShardTrainingState(l, Trained(c, 1), dp_reshardable, &dicts);
  EXPECT_EQ(dp.code(), Status::Code::kNotSupported);
  EXPECT_NE(dp.message().find("torch_optim"), std::string::npos) << dp.ToString();
}

TEST(StateSharding, DpReshardableNeedsChainedExperts) {
  const Layout l = MakeLayout(4, 1, 1, 1, 2);
  TrainingConfig c = Config(l, 2);
  c.optimizer.chaining = Chaining::kSingle;
  TrainingState s = Trained(c, 0);
  std::vector<ShardedStateDict> dicts;
  EXPECT_EQ(ShardTrainingState(l, s, DpReshardable(), &dicts).code(), Status::Code::kNotSupported);
  EXPECT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
}

TEST(StateSharding, HeterogeneousModulesNeverCollide) {
  ModuleLayout vision{"vision", 0, MakeLayout(2, 2, 1)};
  ModuleLayout language{"language", 2, MakeLayout(4, 2, 2)};
  HeterogeneousLayout h;
  ASSERT_TRUE(HeterogeneousLayout::Make({vision, language}, &h).ok());
  std::vector<TrainingState> states = {Trained(Config(vision.layout, 0, "vision"), 1),
                                       Trained(Config(language.layout, 0, "language"), 1)};
  for (const ShardingConfig& sc : {ShardingConfig(), DpReshardable()}) {
    std::vector<ShardedStateDict> dicts;
    const Status st = ShardTrainingState(h, states, sc, &dicts);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(Violations(dicts), "");
    const std::set<std::string> keys = Keys(dicts);
    EXPECT_TRUE(keys.count("optimizer.mimo.vision.common_state"));
    EXPECT_TRUE(keys.count("optimizer.mimo.language.common_state"));
    EXPECT_TRUE(keys.count("vision.rng_state") && keys.count("language.rng_state"));
    EXPECT_FALSE(dicts[0].common->contains("optimizer"));  // module-variant: never common (B02)
    std::vector<TrainingState> back;
    const Status ls = Load(dicts, h, {states[0].config, states[1].config}, LoadFlags(), &back);
    ASSERT_TRUE(ls.ok()) << ls.ToString();
    EXPECT_EQ(FirstDifference(back[0], states[0]), "");
    EXPECT_EQ(FirstDifference(back[1], states[1]), "");
  }
}

TEST(StateSharding, DpReshardableUnevenSlicesKeepPerRankListsOutOfCommon) {
  const Layout l = MakeLayout(4, 1, 1);  // DP4
  TrainingConfig c = Config(l);
  c.model.hidden_size = 6;  // odd-sized parameters: bucket padding and empty slices matter
  c.model.num_attention_heads = 2;
  c.model.vocab_size = 15;
  const TrainingState s = Trained(c, 1);
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, s, DpReshardable(150, 1), &dicts).ok());
  EXPECT_EQ(Violations(dicts), "");
  std::set<size_t> lengths;
  for (const auto& d : dicts) {
    for (const auto& o : d.objects) {
      if (o.spec.key.find("param_state") != std::string::npos) {
        lengths.insert(nlohmann::json::parse(o.data).size());
      }
    }
  }
  EXPECT_GT(lengths.size(), 1u) << "slices should hold different numbers of parameters (B07)";
  EXPECT_FALSE(dicts[0].common->dump().find("param_state\"") != std::string::npos);
  TrainingState back;
  ASSERT_TRUE(LoadOne(dicts, l, s.config, LoadFlags(), &back).ok());
  EXPECT_EQ(FirstDifference(back, s), "");
}

TEST(StateSharding, StructureDoesNotDependOnStateOrFaults) {
  const Layout l = MakeLayout(4, 2, 1);
  const TrainingConfig c = Config(l);
  for (const ShardingConfig& sc : {ShardingConfig(), DpReshardable()}) {
    std::vector<ShardedStateDict> a, b, f;
    ASSERT_TRUE(ShardTrainingState(l, Trained(c, 1), sc, &a).ok());
    ASSERT_TRUE(ShardTrainingState(l, Trained(c, 3), sc, &b).ok());
    TrainingState fault = Trained(c, 2);
    fault.rerun.state = RerunState::kWillRerunFromCheckpoint;
    fault.rerun.sharded.checkpoint_requested = true;
    fault.rerun.sharded.failed_validation_call = ValidationCall{"loss", 1, 0};
    fault.rerun.sharded.initial_result = 0.5;
    ASSERT_TRUE(ShardTrainingState(l, fault, sc, &f).ok());
    EXPECT_TRUE(DiffStructure(Sig(a), Sig(b)).empty());
    const StructureDiff d = DiffStructure(Sig(a), Sig(f));
    EXPECT_TRUE(d.empty()) << FormatViolations(d.ToViolations());
    // A fault save still round-trips, rerun payload included.
    TrainingState back;
    ASSERT_TRUE(LoadOne(f, l, c, LoadFlags(), &back).ok());
    EXPECT_EQ(FirstDifference(back, fault), "");
    // B06: a state that needs the unpersisted snapshot is refused.
    fault.rerun.state = RerunState::kRerunningInPlace;
    EXPECT_EQ(ShardTrainingState(l, fault, sc, &f).code(), Status::Code::kFailedPrecondition);
  }
}

// The worked example of docs/WORKED_EXAMPLE.md: TP2 x DP2 -> TP4 x DP1.
TEST(StateSharding, CrossLayoutMatchesLoadSemantics) {
  const Layout l1 = MakeLayout(4, 2, 1), l2 = MakeLayout(4, 4, 1), l3 = MakeLayout(4, 1, 1);
  const TrainingState s = Trained(Config(l1), 2);
  struct Case {
    ShardingConfig sharding;
    Layout to;
    LoadFlags flags;
    bool ok;
  };
  LoadFlags reset;
  reset.reset_dataloader = true;
  LoadFlags no_optim = reset;
  no_optim.no_load_optim = true;
  const Case cases[] = {
      {ShardingConfig(), l2, reset, true}, {ShardingConfig(), l2, LoadFlags(), true},
      {DpReshardable(), l2, reset, false}, {DpReshardable(), l2, no_optim, true},
      {DpReshardable(), l3, reset, false}, {ShardingConfig(), l3, reset, true},
  };
  for (const Case& k : cases) {
    std::vector<ShardedStateDict> dicts;
    ASSERT_TRUE(ShardTrainingState(l1, s, k.sharding, &dicts).ok());
    const TrainingConfig c2 = Config(k.to);
    CheckpointDescriptor ckpt{s, l1, k.sharding.optimizer_format, true};
    ResumeRequest req{c2, k.to, k.flags};
    TrainingState expected, got;
    const Status es = ExpectedStateAfterLoad(ckpt, req, &expected);
    const Status gs = LoadOne(dicts, k.to, c2, k.flags, &got);
    EXPECT_EQ(es.ok(), k.ok) << es.ToString();
    ASSERT_EQ(gs.ok(), es.ok()) << gs.ToString() << " vs " << es.ToString();
    if (es.ok()) {
      EXPECT_EQ(FirstDifference(got, expected), "");
    }
  }
}

// The rerun object is sharded over the run's world; L8 has a module request its ranks' shards
// only when its own layout (and the run's world) is unchanged. With one module's DP changed and
// the other's not, the templates still read the object whole, one main replica per shard (a
// megatron-core load refused a partial read: "4 ShardedObject are missing"), and the load keeps
// to the spec.
TEST(StateSharding, RerunObjectIsReadWholeWhenOnlySomeModulesRequestIt) {
  ModuleLayout vision{"vision", 0, MakeLayout(2, 2, 1)};
  ModuleLayout language{"language", 2, MakeLayout(4, 2, 1)};      // TP 2 x DP 2
  ModuleLayout language_dp4{"language", 2, MakeLayout(4, 1, 1)};  // DP 4
  HeterogeneousLayout saved_layout, now_layout;
  ASSERT_TRUE(HeterogeneousLayout::Make({vision, language}, &saved_layout).ok());
  ASSERT_TRUE(HeterogeneousLayout::Make({vision, language_dp4}, &now_layout).ok());
  const std::vector<TrainingState> states = {Trained(Config(vision.layout, 0, "vision"), 1),
                                             Trained(Config(language.layout, 0, "language"), 1)};
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(saved_layout, states, ShardingConfig(), &dicts).ok());
  const std::vector<TrainingConfig> configs = {Config(vision.layout, 0, "vision"),
                                               Config(language_dp4.layout, 0, "language")};
  LoadFlags flags;
  flags.reset_dataloader = true;
  CheckpointInfo info;
  ASSERT_TRUE(ReadCheckpointInfo(dicts.at(0).common, &info).ok());
  std::vector<ShardedStateDict> templates;
  ASSERT_TRUE(StateTemplates(now_layout, configs, info, flags, &templates).ok());
  std::set<int64_t> shards;
  for (const ShardedStateDict& d : templates) {
    for (const ShardedObject& o : d.objects) {
      if (o.spec.key != "rerun_state_machine_state") continue;
      EXPECT_TRUE(IsMainReplica(o.spec.replica_id));
      EXPECT_TRUE(shards.insert(o.spec.global_offset.at(0)).second) << "requested twice";
    }
  }
  EXPECT_EQ(shards, (std::set<int64_t>{0, 1, 2, 3, 4, 5}));
  for (const Violation& v : CheckShardingIntegrity(Sig(templates))) {
    EXPECT_NE(v.key, "rerun_state_machine_state") << FormatViolations({v});
  }
  RunSpec saved_run, run;
  saved_run.layout = saved_layout;
  run.layout = now_layout;
  run.configs = configs;
  std::vector<TrainingState> expected, got;
  ASSERT_TRUE(ExpectedResume(saved_run, states, run, flags, &expected).ok());
  const Status st = Load(dicts, now_layout, configs, flags, &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (size_t m = 0; m < 2; ++m) EXPECT_EQ(FirstDifference(got[m], expected[m]), "") << m;
}

// rng_saving rank_local: each rank saves its own RNG as a rank-local object under one key; a load
// under the same layout gives each rank its own back, a load under another layout requests none
// (L7: freshly seeded), and a save whose rank-local values were merged by name is observable.
TEST(StateSharding, RankLocalRngIsEachRanksOwnAndLoadsOnlyUnderItsLayout) {
  const Layout l = MakeLayout(4, 2, 1);  // TP 2 x DP 2
  TrainingConfig c = Config(l);
  c.data_parallel_random_init = true;  // every rank's RNG differs
  c.rng_saving = RngSaving::kRankLocal;
  const TrainingState s = Trained(c, 2);
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
  EXPECT_EQ(Violations(dicts), "");
  std::set<std::string> values;
  for (size_t r = 0; r < dicts.size(); ++r) {
    int rng_objects = 0;
    for (const ShardedObject& o : dicts[r].objects) {
      if (o.spec.key != "rng_state") continue;
      ++rng_objects;
      EXPECT_TRUE(IsRankLocal(o.spec)) << "rank " << r;
      values.insert(o.data);
    }
    EXPECT_EQ(rng_objects, 1) << "rank " << r;
  }
  EXPECT_EQ(values.size(), dicts.size()) << "each rank saves its own RNG";
  EXPECT_EQ(dicts[0].common->at("rng_saving"), nlohmann::json::array({"rank_local"}));

  TrainingState back;
  ASSERT_TRUE(LoadOne(dicts, l, c, LoadFlags(), &back).ok());
  EXPECT_EQ(FirstDifference(back, s), "");

  // Merged by name (one rank's value for every rank, as a planner that deduplicates plain values
  // by name keeps): the same-layout load no longer returns the saved state.
  std::vector<ShardedStateDict> merged = dicts;
  for (ShardedStateDict& d : merged) {
    for (ShardedObject& o : d.objects) {
      if (IsRankLocal(o.spec)) o.data = values.empty() ? "" : *values.begin();
    }
  }
  ASSERT_TRUE(LoadOne(merged, l, c, LoadFlags(), &back).ok());
  EXPECT_NE(FirstDifference(back, s), "");

  // Another layout (DP 2 -> 1, TP and PP unchanged): no rank-local RNG is requested and the RNG is
  // freshly seeded, as L7 says; a sharded RNG would have loaded.
  const Layout l2 = MakeLayout(2, 2, 1);
  TrainingConfig c2 = Config(l2);
  c2.data_parallel_random_init = true;
  LoadFlags reset;
  reset.reset_dataloader = true;
  CheckpointInfo info;
  ASSERT_TRUE(ReadCheckpointInfo(dicts[0].common, &info).ok());
  std::vector<ShardedStateDict> templates;
  ASSERT_TRUE(StateTemplates(HeterogeneousLayout::Single(l2), {c2}, info, reset, &templates).ok());
  for (const ShardedStateDict& d : templates) {
    for (const ShardedObject& o : d.objects) EXPECT_NE(o.spec.key, "rng_state");
  }
  TrainingState expected, got;
  ASSERT_TRUE(ExpectedStateAfterLoad({s, l, OptimizerFormat::kFullyReshardable, true},
                                     {c2, l2, reset}, &expected)
                  .ok());
  ASSERT_TRUE(LoadOne(dicts, l2, c2, reset, &got).ok());
  EXPECT_EQ(FirstDifference(got, expected), "");
  TrainingState fresh;
  ASSERT_TRUE(InitialTrainingState(c2, &fresh).ok());
  EXPECT_TRUE(got.rng == fresh.rng);
}

// The dp_reshardable section of docs/WORKED_EXAMPLE.md: TP2 x DP2, bucket_size 1000, alignment
// 64. The figures here are the ones the document states.
TEST(StateSharding, WorkedExampleDpReshardableBuckets) {
  const Layout l = MakeLayout(4, 2, 1);
  TrainingConfig c = Config(l);
  c.model.add_bias = false;
  const TrainingState s = Trained(c, 2);
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, s, DpReshardable(1000, 64), &dicts).ok());

  auto chunk = [&](int rank, int bucket) -> std::string {
    const std::string key =
        "optimizer.distributed.dp_group_idx_0.gbuf_idx_0.dtype_bf16.bucket_idx_" +
        std::to_string(bucket) + ".param";
    for (const ShardedTensor& t : dicts.at(rank).tensors) {
      if (t.spec.key != key) continue;
      return std::to_string(t.spec.global_shape.at(0)) + " [" +
             std::to_string(t.spec.global_offset.at(0)) + ", " +
             std::to_string(t.spec.global_offset.at(0) + t.spec.local_shape.at(0)) + ")";
    }
    return "absent";
  };
  EXPECT_EQ(chunk(0, 0), "1120 [0, 576)");
  EXPECT_EQ(chunk(2, 0), "1120 [576, 1120)");
  EXPECT_EQ(chunk(0, 1), "128 [0, 64)");
  EXPECT_EQ(chunk(2, 1), "128 [64, 128)");
  auto slice_index = [&](int rank) -> nlohmann::json {
    for (const ShardedObject& o : dicts.at(rank).objects) {
      if (o.spec.key == "optimizer.distributed.dp_group_idx_0.param_state") {
        return nlohmann::json::parse(o.data);
      }
    }
    return nlohmann::json::array();
  };
  auto lists = [](const nlohmann::json& index, const std::string& param) {
    for (const nlohmann::json& e : index) {
      if (e.at("param") == param && e.at("bucket") == 0) return true;
    }
    return false;
  };
  EXPECT_EQ(slice_index(0).size(), 7u);
  EXPECT_EQ(slice_index(2).size(), 7u);
  EXPECT_TRUE(lists(slice_index(0), "decoder.layers.1.mlp.linear_fc1.weight"));
  EXPECT_TRUE(lists(slice_index(2), "decoder.layers.0.mlp.linear_fc1.weight"));
}

// Load templates are what a framework hands its checkpointer, and megatron-core validates them
// as it validates saves: no object may have two main replicas ("Duplicate ShardedObject keys").
// With EP the RNG state is one object per (pp, tp, dp-cp) position; on an unchanged layout every
// rank asks for its own (found by the megatron_core adapter: TP1 CP2 DP2 EP2, where the ranks of
// CP 0 and 1 both asked for one position).
TEST(StateSharding, LoadTemplatesHaveOneMainReplicaPerObject) {
  ParallelSizes p;
  p.cp = 2;
  p.ep = 2;
  Layout l;
  ASSERT_TRUE(Layout::Make(4, p, RankOrder(), &l).ok());
  const TrainingConfig c = Config(l, /*experts=*/4);
  ASSERT_TRUE(ValidateModelForLayout(c.model, l).ok());
  const TrainingState s = Trained(c, 1);
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
  CheckpointInfo info;
  ASSERT_TRUE(ReadCheckpointInfo(dicts.at(0).common, &info).ok());
  std::vector<ShardedStateDict> templates;
  ASSERT_TRUE(StateTemplates(HeterogeneousLayout::Single(l, c.model.name), {c}, info, LoadFlags(),
                             &templates)
                  .ok());
  std::string duplicates;
  for (const Violation& v : CheckShardingIntegrity(Sig(templates))) {
    if (v.kind == ViolationKind::kDuplicateMain) duplicates += FormatViolations({v});
  }
  EXPECT_EQ(duplicates, "");
  TrainingState back;
  const Status st = LoadOne(dicts, l, c, LoadFlags(), &back);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(FirstDifference(back, s), "");
}

// A load under a smaller DP size needs only some shards of the objects sharded over DP ranks (the
// data iterator; the RNG under data_parallel_random_init), and megatron-core validates a load's
// object accesses as a save's ("N ShardedObject are missing", found by the megatron_core adapter
// on a DP 2 -> 1 resume): the templates request them whole, one main replica each, and the
// per-DP-rank loaders of every saved DP rank reach the rebuild.
TEST(StateSharding, DpShardedObjectsAreRequestedWholeUnderASmallerDp) {
  for (DataSampler sampler : {DataSampler::kGlobal, DataSampler::kPerRank}) {
    ParallelSizes p4;
    p4.dp = 4;
    Layout dp4, dp2;
    ASSERT_TRUE(Layout::Make(4, p4, RankOrder(), &dp4).ok());
    ParallelSizes p2;
    p2.dp = 2;
    ASSERT_TRUE(Layout::Make(2, p2, RankOrder(), &dp2).ok());
    TrainingConfig c = Config(dp4);
    c.data_parallel_random_init = true;
    c.data.sampler = sampler;
    const TrainingState s = Trained(c, 1);
    std::vector<ShardedStateDict> dicts;
    ASSERT_TRUE(ShardTrainingState(dp4, s, ShardingConfig(), &dicts).ok());
    CheckpointInfo info;
    ASSERT_TRUE(ReadCheckpointInfo(dicts.at(0).common, &info).ok());
    TrainingConfig c2 = Config(dp2);
    c2.data_parallel_random_init = true;
    c2.data.sampler = sampler;
    std::vector<ShardedStateDict> templates;
    ASSERT_TRUE(StateTemplates(HeterogeneousLayout::Single(dp2, c2.model.name), {c2}, info,
                               LoadFlags(), &templates)
                    .ok());
    int data_shards = 0, rng_shards = 0;
    for (const ShardedStateDict& d : templates) {
      for (const ShardedObject& o : d.objects) {
        data_shards += o.spec.key == "data_iterator";
        rng_shards += o.spec.key == "rng_state";
      }
    }
    EXPECT_EQ(data_shards, 4) << DataSamplerName(sampler);
    EXPECT_EQ(rng_shards, 4) << DataSamplerName(sampler);
    std::string objects;
    for (const Violation& v : CheckShardingIntegrity(Sig(templates))) {
      if (v.kind == ViolationKind::kMissingObject || v.kind == ViolationKind::kDuplicateMain) {
        objects += FormatViolations({v});
      }
    }
    EXPECT_EQ(objects, "") << DataSamplerName(sampler);
    // Under the saved layout every DP rank's loader comes back to its rank.
    TrainingState same;
    const Status own = LoadOne(dicts, dp4, c, LoadFlags(), &same);
    ASSERT_TRUE(own.ok()) << own.ToString();
    EXPECT_EQ(same.data, s.data) << DataSamplerName(sampler);
    // The global sampler goes on under DP 2; the per-DP-rank loaders are refused naming DP 4.
    TrainingState back;
    const Status st = LoadOne(dicts, dp2, c2, LoadFlags(), &back);
    if (sampler == DataSampler::kGlobal) {
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(back.data.consumed_samples, s.data.consumed_samples);
    } else {
      EXPECT_NE(st.message().find("loaders for DP size 4"), std::string::npos) << st.ToString();
    }
  }
}

TEST(StateSharding, DpReshardableReshardsOverDp) {
  const Layout l1 = MakeLayout(2, 1, 1), l2 = MakeLayout(4, 1, 1);
  const TrainingState s = Trained(Config(l1), 2);
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l1, s, DpReshardable(90, 8), &dicts).ok());
  LoadFlags reset;
  reset.reset_dataloader = true;
  const TrainingConfig c2 = Config(l2);
  TrainingState expected, got;
  ASSERT_TRUE(ExpectedStateAfterLoad({s, l1, OptimizerFormat::kDpReshardable, true},
                                     {c2, l2, reset}, &expected)
                  .ok());
  const Status st = LoadOne(dicts, l2, c2, reset, &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(FirstDifference(got, expected), "");
}

// What every rank of `l` requests for a same-layout load of `s`, filled from a save of `s`.
void SavedAndRequested(const Layout& l, const TrainingState& s,
                       std::vector<ShardedStateDict>* req) {
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
  CheckpointInfo info;
  ASSERT_TRUE(ReadCheckpointInfo(dicts[0].common, &info).ok());
  ASSERT_TRUE(
      StateTemplates(HeterogeneousLayout::Single(l), {s.config}, info, LoadFlags(), req).ok());
  for (size_t r = 0; r < req->size(); ++r) {
    ASSERT_TRUE(ResolveFromSaved(dicts, static_cast<int64_t>(r), &(*req)[r]).ok());
  }
}

TEST(StateSharding, NamedErrorsForMissingExtraMisshapenAndDisagreeingEntries) {
  const Layout l = MakeLayout(4, 2, 1);
  const TrainingState s = Trained(Config(l), 1);
  std::vector<ShardedStateDict> req;
  ASSERT_NO_FATAL_FAILURE(SavedAndRequested(l, s, &req));
  auto rebuild = [&](const std::vector<ShardedStateDict>& r) {
    TrainingState out;
    return RebuildTrainingState(r, l, s.config, LoadFlags(), &out);
  };
  ASSERT_TRUE(rebuild(req).ok());
  auto missing = req;
  missing[1].tensors.pop_back();
  EXPECT_EQ(rebuild(missing).code(), Status::Code::kNotFound);
  auto extra = req;
  extra[1].tensors.push_back(extra[1].tensors[0]);
  extra[1].tensors.back().spec.key = "bogus";
  EXPECT_NE(rebuild(extra).message().find("unexpected"), std::string::npos);
  auto shape = req;
  shape[0].tensors[0].spec.global_shape[0] += 1;
  EXPECT_NE(rebuild(shape).message().find("misshapen"), std::string::npos);
  auto disagree = req;  // rank 2 holds a DP replica of rank 0's chunk
  disagree[2].tensors[0].data[0] ^= 1;
  EXPECT_EQ(rebuild(disagree).code(), Status::Code::kCorruption);
  auto common = req;
  for (auto& d : common) d.common.Mutable()->erase("parallel_layout");
  EXPECT_EQ(rebuild(common).code(), Status::Code::kCorruption);
  // An object's errors name the rank and the object (the name is made only for an error).
  const auto rerun = std::find_if(
      req[1].objects.begin(), req[1].objects.end(),
      [](const ShardedObject& o) { return o.spec.key == "rerun_state_machine_state"; });
  ASSERT_NE(rerun, req[1].objects.end());
  const size_t at = static_cast<size_t>(rerun - req[1].objects.begin());
  const std::string named = "rank 1 object '" + rerun->spec.UniqueKey() + "'";
  auto unparsable = req;
  unparsable[1].objects[at].data = "{";
  const Status bad_json = rebuild(unparsable);
  EXPECT_EQ(bad_json.code(), Status::Code::kCorruption);
  EXPECT_NE(bad_json.message().find(named + " is not valid JSON"), std::string::npos)
      << bad_json.ToString();
  auto differing = req;  // the rerun state is the same on every rank
  differing[1].objects[at].data = R"({"differs": 1})";
  const Status differs = rebuild(differing);
  EXPECT_EQ(differs.code(), Status::Code::kCorruption);
  EXPECT_NE(differs.message().find(named + " differs between ranks"), std::string::npos)
      << differs.ToString();
}

// A checkpoint's param groups index the saving model's parameters: an index out of range is
// Corruption naming the group, never an out-of-bounds read in the load rules (found by
// checkpoint_dir_fuzzer; corpus/regressions/checkpoint_dir_fuzzer/).
TEST(StateSharding, ParamGroupIndicesOutOfRangeAreCorruption) {
  const Layout l = MakeLayout(2, 2, 1);
  const TrainingState s = Trained(Config(l), 1);
  std::vector<ShardedStateDict> req;
  ASSERT_NO_FATAL_FAILURE(SavedAndRequested(l, s, &req));
  auto rebuild_with_index = [&](const nlohmann::json& index) {
    auto r = req;
    for (auto& d : r) (*d.common.Mutable())["optimizer"][0]["param_groups"][0]["params"][0] = index;
    TrainingState out;
    return RebuildTrainingState(r, l, s.config, LoadFlags(), &out);
  };
  const int64_t num_params = static_cast<int64_t>(s.params.size());
  for (const nlohmann::json& bad :
       {nlohmann::json(-1), nlohmann::json(num_params), nlohmann::json(int64_t{1} << 32)}) {
    const Status st = rebuild_with_index(bad);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << bad << ": " << st.ToString();
    // Named by its JSON path when the index is no parameter index at all, by its number when it
    // is beyond the model's parameters.
    const std::string group = bad == nlohmann::json(num_params) ? "group 0" : "param_groups[0]";
    EXPECT_NE(st.message().find(group), std::string::npos) << st.ToString();
  }
  const int other = s.optimizers[0].groups.size() > 1 ? s.optimizers[0].groups[1].params[0] : -1;
  if (other >= 0) {
    const Status twice = rebuild_with_index(other);
    EXPECT_NE(twice.message().find("belongs to two groups"), std::string::npos) << twice.ToString();
  }
}

// Every checkpoint names the dtype of each module's weights in its common state, for a load under
// another dtype; a checkpoint without the name (written before it) is read as saved in the run's.
TEST(StateSharding, CommonStateNamesEachModulesParamsDtype) {
  const Layout l = MakeLayout(2, 2, 1);
  TrainingConfig c = Config(l);
  c.model.params_dtype = DType::kFloat16;
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, Trained(c, 1), ShardingConfig(), &dicts).ok());
  EXPECT_EQ(dicts[0].common->at("params_dtype"), nlohmann::json::array({"fp16"}));
  CheckpointInfo info;
  ASSERT_TRUE(ReadCheckpointInfo(dicts[0].common, &info).ok());
  ASSERT_EQ(info.params_dtype.size(), 1u);
  EXPECT_EQ(info.params_dtype[0], DType::kFloat16);
  nlohmann::json older = dicts[0].common.get();
  older.erase("params_dtype");
  ASSERT_TRUE(ReadCheckpointInfo(older, &info).ok());
  EXPECT_FALSE(info.params_dtype[0].has_value());
  for (const nlohmann::json& bad :
       {nlohmann::json::array({"int32"}), nlohmann::json::array({"fp8_e4m3"}),
        nlohmann::json("bf16"), nlohmann::json::array({"bf16", "bf16"})}) {
    nlohmann::json common = dicts[0].common.get();
    common["params_dtype"] = bad;
    const Status st = ReadCheckpointInfo(common, &info);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << bad;
    EXPECT_NE(st.message().find("params_dtype"), std::string::npos) << st.ToString();
  }
}

// A resume under another params dtype or moment dtype, through the canonical templates, an
// in-memory load that converts into each template's dtype, and the rebuild: the load rules'
// state (L1, L3). The model weights are requested in the run's dtype, but in fp32 from an fp32
// checkpoint whose optimizer state a 16-bit run loads (its masters).
TEST(StateSharding, ALoadUnderAnotherDtypeGivesTheLoadRulesState) {
  const Layout l = MakeLayout(4, 2, 1);
  const DType dtypes[] = {DType::kBFloat16, DType::kFloat32, DType::kFloat16};
  for (DType saved : dtypes) {
    TrainingConfig c = Config(l);
    c.model.params_dtype = saved;
    c.optimizer.cpu_offload_fraction = 0.5;
    const TrainingState s = Trained(c, 2);
    std::vector<ShardedStateDict> dicts;
    ASSERT_TRUE(ShardTrainingState(l, s, ShardingConfig(), &dicts).ok());
    CheckpointInfo info;
    ASSERT_TRUE(ReadCheckpointInfo(dicts[0].common, &info).ok());
    for (DType now : dtypes) {
      for (const bool optimizer : {true, false}) {
        for (DType moments : {DType::kFloat32, DType::kBFloat16}) {
          const std::string what = std::string(DTypeName(saved)) + " -> " + DTypeName(now) +
                                   (optimizer ? "" : ", no_load_optim") + ", " +
                                   DTypeName(moments) + " moments";
          TrainingConfig c2 = c;
          c2.model.params_dtype = now;
          c2.optimizer.moment_dtype = moments;
          LoadFlags f;
          f.no_load_optim = !optimizer;
          std::vector<ShardedStateDict> templates;
          ASSERT_TRUE(
              StateTemplates(HeterogeneousLayout::Single(l), {c2}, info, f, &templates).ok())
              << what;
          const DType requested = RequestedWeightDtype(saved, now, optimizer);
          for (const ShardedTensor& t : templates[0].tensors) {
            if (t.spec.key == "embedding.word_embeddings.weight") {
              EXPECT_EQ(t.spec.dtype, requested) << what;
            }
          }
          TrainingState expected, got;
          const Status es = ExpectedStateAfterLoad({s, l, OptimizerFormat::kFullyReshardable},
                                                   {c2, l, f}, &expected);
          ASSERT_TRUE(es.ok()) << what << ": " << es.ToString();
          const Status gs = LoadOne(dicts, l, c2, f, &got);
          ASSERT_TRUE(gs.ok()) << what << ": " << gs.ToString();
          EXPECT_EQ(FirstDifference(got, expected), "") << what;
        }
      }
    }
  }
  EXPECT_EQ(RequestedWeightDtype(DType::kFloat32, DType::kBFloat16, true), DType::kFloat32);
  EXPECT_EQ(RequestedWeightDtype(DType::kFloat32, DType::kBFloat16, false), DType::kBFloat16);
  EXPECT_EQ(RequestedWeightDtype(DType::kBFloat16, DType::kFloat32, true), DType::kFloat32);
  EXPECT_EQ(RequestedWeightDtype(DType::kBFloat16, DType::kFloat16, true), DType::kFloat16);
}

// dp_reshardable buffers are keyed by the model dtype: the templates refuse to load its optimizer
// state under another dtype, as the load rules do (L3), and load the model without it.
TEST(StateSharding, DpReshardableTemplatesRefuseAParamsDtypeChange) {
  const Layout l = MakeLayout(4, 2, 1);
  const TrainingConfig c = Config(l);
  std::vector<ShardedStateDict> dicts;
  ASSERT_TRUE(ShardTrainingState(l, Trained(c, 1), DpReshardable(), &dicts).ok());
  CheckpointInfo info;
  ASSERT_TRUE(ReadCheckpointInfo(dicts[0].common, &info).ok());
  TrainingConfig fp32 = c;
  fp32.model.params_dtype = DType::kFloat32;
  std::vector<ShardedStateDict> templates;
  const Status s =
      StateTemplates(HeterogeneousLayout::Single(l), {fp32}, info, LoadFlags(), &templates);
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("bf16 -> fp32"), std::string::npos) << s.ToString();
  LoadFlags no_optim;
  no_optim.no_load_optim = true;
  TrainingState got;
  const Status loaded = LoadOne(dicts, l, fp32, no_optim, &got);
  EXPECT_TRUE(loaded.ok()) << loaded.ToString();
}

TEST(ChunkResolve, ConvertsIntoTheTemplatesDtype) {
  ShardedTensor saved, t;
  saved.spec.key = t.spec.key = "w";
  saved.spec.dtype = DType::kFloat32;
  t.spec.dtype = DType::kBFloat16;
  saved.spec.global_shape = t.spec.global_shape = {2};
  saved.spec.global_offset = t.spec.global_offset = {0};
  saved.spec.local_shape = t.spec.local_shape = {2};
  for (float f : {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f}) {  // ties: to the even neighbour
    const uint32_t bits = FloatToBits(f);
    for (int b = 0; b < 4; ++b) saved.data.push_back(static_cast<uint8_t>(bits >> (8 * b)));
  }
  ASSERT_TRUE(FillTensorFromChunks({&saved}, &t).ok());
  ASSERT_EQ(t.data.size(), 4u);
  EXPECT_EQ(t.data[0] | (t.data[1] << 8), 0x3F80);
  EXPECT_EQ(t.data[2] | (t.data[3] << 8), 0x3F82);
  t.spec.dtype = DType::kInt32;
  const Status integer = FillTensorFromChunks({&saved}, &t);
  EXPECT_EQ(integer.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(integer.message().find("'w'"), std::string::npos) << integer.ToString();
}

TEST(ChunkResolve, FillsByIntersectionAndNamesGaps) {
  ShardedTensor a, b, t;
  a.spec.key = b.spec.key = t.spec.key = "w";
  a.spec.dtype = b.spec.dtype = t.spec.dtype = DType::kInt32;
  a.spec.global_shape = b.spec.global_shape = t.spec.global_shape = {4, 2};
  a.spec.global_offset = {0, 0};
  a.spec.local_shape = {2, 2};
  b.spec.global_offset = {2, 0};
  b.spec.local_shape = {2, 2};
  for (int i = 0; i < 16; ++i)
    a.data.push_back(static_cast<uint8_t>(i)), b.data.push_back(static_cast<uint8_t>(100 + i));
  t.spec.global_offset = {1, 1};
  t.spec.local_shape = {2, 1};
  ASSERT_TRUE(FillTensorFromChunks({&a, &b}, &t).ok());
  EXPECT_EQ(t.data[0], 12);   // a's element (1, 1)
  EXPECT_EQ(t.data[4], 104);  // b's element (0, 1) -> global (2, 1)
  EXPECT_EQ(FillTensorFromChunks({&a}, &t).code(), Status::Code::kNotFound);
  b.spec.global_shape = {5, 2};
  EXPECT_EQ(FillTensorFromChunks({&a, &b}, &t).code(), Status::Code::kInvalidArgument);
}

// Generated small layouts and configs: the whole-state sharding passes P4/P5/P11 and round-trips;
// a load under a second layout matches the load rules.
RC_GTEST_PROP(StateSharding, GeneratedLayoutsAreValidRoundTripAndReshard, ()) {
  auto gen_layout = [](int experts) {
    const int64_t tp = *rc::gen::element<int64_t>(1, 2, 4);
    const int64_t pp = *rc::gen::element<int64_t>(1, 2);
    const int64_t dp = *rc::gen::element<int64_t>(1, 2);
    const int64_t cp = *rc::gen::element<int64_t>(1, 2);
    const int64_t ep = experts > 0 ? *rc::gen::element<int64_t>(1, 2) : 1;
    const int64_t etp = experts > 0 ? *rc::gen::element<int64_t>(0, 1) : 0;
    ParallelSizes p;
    p.tp = tp;
    p.pp = pp;
    p.cp = cp;
    p.ep = ep;
    p.etp = etp;
    Layout l;
    RC_PRE(Layout::Make(tp * pp * dp * cp, p, RankOrder(), &l).ok());
    return l;
  };
  const int experts = *rc::gen::element(0, 2, 4);
  const Layout l1 = gen_layout(experts);
  const Layout l2 = gen_layout(experts);
  ShardingConfig sc;
  if (*rc::gen::arbitrary<bool>())
    sc = DpReshardable(*rc::gen::inRange<int64_t>(16, 400), *rc::gen::element<int64_t>(1, 4, 64));
  sc.chained_avoid_prefix = *rc::gen::arbitrary<bool>();
  TrainingConfig c1 = Config(l1, experts);
  c1.model.params_dtype = *rc::gen::element(DType::kBFloat16, DType::kFloat32);
  c1.data_parallel_random_init = *rc::gen::arbitrary<bool>();
  c1.rng_saving = *rc::gen::element(RngSaving::kSharded, RngSaving::kRankLocal);
  c1.optimizer.cpu_offload_fraction = *rc::gen::element(0.0, 0.5);
  if (*rc::gen::arbitrary<bool>()) {
    for (const char* f : {"decoder.layers.0.self_attention.linear_proj.weight",
                          "decoder.layers.1.self_attention.linear_proj.weight"}) {
      c1.frozen.push_back(f);
    }
  }
  RC_LOG() << "save " << l1.ToString() << " -> load " << l2.ToString() << ", experts " << experts
           << ", " << OptimizerFormatName(sc.optimizer_format) << " bucket "
           << sc.buffers.bucket_size << " align " << sc.buffers.param_alignment << ", dtype "
           << DTypeName(c1.model.params_dtype) << ", RNG " << RngSavingName(c1.rng_saving) << "\n";
  RC_PRE(ValidateModelForLayout(c1.model, l1).ok() && ValidateModelForLayout(c1.model, l2).ok());
  const TrainingState s = Trained(c1, *rc::gen::inRange(0, 3));
  std::vector<ShardedStateDict> dicts;
  const Status st = ShardTrainingState(l1, s, sc, &dicts);
  RC_ASSERT(st.ok());
  const std::string v = Violations(dicts);
  RC_LOG() << v;
  RC_ASSERT(v.empty());
  TrainingState back;
  const Status bs = LoadOne(dicts, l1, c1, LoadFlags(), &back);
  RC_LOG() << bs.ToString() << "\n";
  RC_ASSERT(bs.ok());
  RC_ASSERT(FirstDifference(back, s).empty());

  TrainingConfig c2 = c1;
  c2.data.dp_size = l2.dp();
  c2.data.global_batch_size = 4 * l2.dp();
  c2.ranks = RankCoordsOf(l2);
  LoadFlags f;
  f.reset_dataloader = *rc::gen::arbitrary<bool>();
  f.no_load_optim = *rc::gen::arbitrary<bool>();
  f.no_load_rng = *rc::gen::arbitrary<bool>();
  // Sometimes a resume under another params or moment dtype (L1, L3).
  c2.model.params_dtype = *rc::gen::element(c1.model.params_dtype, c1.model.params_dtype,
                                            DType::kBFloat16, DType::kFloat32, DType::kFloat16);
  c2.optimizer.moment_dtype = *rc::gen::element(DType::kFloat32, DType::kFloat32, DType::kBFloat16);
  RC_LOG() << "resume in " << DTypeName(c2.model.params_dtype) << " with "
           << DTypeName(c2.optimizer.moment_dtype) << " moments\n";
  RC_CLASSIFY(c2.model.params_dtype != c1.model.params_dtype, "params dtype changed");
  // The templates under the new layout: one main replica per object (what a checkpointer such as
  // megatron-core validates on load as on save).
  CheckpointInfo info;
  RC_ASSERT(ReadCheckpointInfo(dicts.at(0).common, &info).ok());
  std::vector<ShardedStateDict> templates;
  if (StateTemplates(HeterogeneousLayout::Single(l2, c2.model.name), {c2}, info, f, &templates)
          .ok()) {
    for (const Violation& v : CheckShardingIntegrity(Sig(templates))) {
      RC_ASSERT(v.kind != ViolationKind::kDuplicateMain);
    }
  }
  TrainingState expected, got;
  const Status es =
      ExpectedStateAfterLoad({s, l1, sc.optimizer_format, true}, {c2, l2, f}, &expected);
  const Status gs = LoadOne(dicts, l2, c2, f, &got);
  RC_LOG() << "expected: " << es.ToString() << "; got: " << gs.ToString() << "\n";
  RC_CLASSIFY(es.ok(), "loadable");
  RC_ASSERT(es.ok() == gs.ok());
  if (es.ok()) {
    const std::string d = FirstDifference(got, expected);
    RC_LOG() << d << "\n";
    RC_ASSERT(d.empty());
  }
}

}  // namespace
}  // namespace ckptspec
