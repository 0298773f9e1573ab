// The mutant catalog (targets/mutants/): each mutant's deviation, shown directly on a small
// hand-picked scenario, next to the reference on the same scenario: save a trained run, resume it
// through the harness, compare with the specification's expected state after the load
// (ExpectedResume). A mutant that behaved like the reference fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "model/run_spec.h"
#include "properties/export_resume.h"
#include "harness/harness.h"
#include "harness/stateful_ops.h"
#include "targets/mutants/catalog.h"
#include "targets/reference/reference_factory.h"
#include "targets/target_factory.h"

namespace ckptspec {
namespace {

struct Scenario {
  int64_t world = 1, tp = 1;
  DType dtype = DType::kFloat32;
  int64_t global_batch = 8, micro_batch = 2, num_samples = 64;
  double offload = 0.0;
  int64_t k = 2;  // iterations before the save
  int64_t m = 0;  // iterations after the resume, on both sides, before comparing
  LoadFlags flags;
  SaveOptions save;
  RngSaving rng_saving = RngSaving::kSharded;
  bool new_process = false;  // resume in a new process (TargetUnderTest::NewProcess)
};

RunSpec MakeRun(const Scenario& sc) {
  ParallelSizes sizes;
  sizes.tp = sc.tp;
  Layout layout;
  EXPECT_TRUE(Layout::Make(sc.world, sizes, RankOrder(), &layout).ok());
  TrainingConfig c;
  c.model.num_layers = 2;
  c.model.hidden_size = 16;
  c.model.num_attention_heads = 4;
  c.model.ffn_hidden_size = 32;
  c.model.vocab_size = 32;
  c.model.params_dtype = sc.dtype;
  c.data.dp_size = layout.dp();
  c.data.global_batch_size = sc.global_batch;
  c.data.micro_batch_size = sc.micro_batch;
  c.data.num_samples = sc.num_samples;
  c.optimizer.cpu_offload_fraction = sc.offload;
  c.rng_saving = sc.rng_saving;
  c.ranks = RankCoordsOf(layout);
  RunSpec run;
  run.layout = HeterogeneousLayout::Single(layout);
  run.configs = {c};
  return run;
}

struct Outcome {
  Status save, resume;
  std::string diff;  // resumed vs the specification's expected state after the load
};

Outcome SaveAndResume(const TargetFactory& factory, const Scenario& sc) {
  const RunSpec run = MakeRun(sc);
  std::vector<TrainingState> states;
  EXPECT_TRUE(InitialStates(run, &states).ok());
  EXPECT_TRUE(TrainRun(&states, sc.k).ok());
  auto under_test = factory.make(TargetOptions());
  Outcome o;
  o.save = SaveRun(under_test->target(), run, states, states[0].iteration, sc.save);
  if (o.save.ok()) o.save = under_test->target().engine().Finalize();
  if (!o.save.ok()) return o;
  if (sc.new_process) under_test->NewProcess();
  std::vector<TrainingState> resumed, expected;
  ResumeOptions ro;
  ro.flags = sc.flags;
  o.resume = ResumeRun(under_test->target(), run, ro, &resumed);
  if (!o.resume.ok()) return o;
  std::vector<TrainingState> restarted;
  for (const TrainingState& s : states) restarted.push_back(Restarted(s));
  EXPECT_TRUE(ExpectedResume(run, restarted, run, sc.flags, &expected).ok());
  EXPECT_TRUE(TrainRun(&resumed, sc.m).ok());
  EXPECT_TRUE(TrainRun(&expected, sc.m).ok());
  o.diff = FirstRunDifference(resumed, expected);
  return o;
}

TargetFactory Mutant(const char* id) {
  const MutantInfo* m = FindMutant(id);
  EXPECT_NE(m, nullptr) << id;
  return MutantFactory(*m);
}

// The reference passes, the mutant shows a silent difference (S bugs).
void ExpectSilentDeviation(const char* id, const Scenario& sc) {
  const Outcome ref = SaveAndResume(ReferenceTargetFactory(), sc);
  ASSERT_TRUE(ref.save.ok()) << ref.save.ToString();
  ASSERT_TRUE(ref.resume.ok()) << ref.resume.ToString();
  EXPECT_EQ(ref.diff, "") << "reference";
  const Outcome mut = SaveAndResume(Mutant(id), sc);
  ASSERT_TRUE(mut.save.ok()) << id << ": " << mut.save.ToString();
  ASSERT_TRUE(mut.resume.ok()) << id << ": " << mut.resume.ToString();
  EXPECT_NE(mut.diff, "") << id << " behaves like the reference";
}

TEST(Mutants, CatalogIsComplete) {
  // Ids B01, B02, ... in order; docs/BUGS.md lists the same ids (tools/check_generated_docs.py).
  ASSERT_FALSE(MutantCatalog().empty());
  for (size_t i = 0; i < MutantCatalog().size(); ++i) {
    const MutantInfo& m = MutantCatalog()[i];
    char id[24];
    std::snprintf(id, sizeof(id), "B%02zu", i + 1);
    EXPECT_EQ(std::string(m.id), id);
    EXPECT_EQ(MutantFactory(m).name, m.id);
    EXPECT_TRUE(MutantFactory(m).expect_killed);
    EXPECT_NE(std::string(m.killers), "");
  }
  EXPECT_NE(FindMutant("cached-plan-drops-rerun"), nullptr);
}

TEST(Mutants, B01SavesGroupsWithoutLrMultAndTheResumeFails) {
  Scenario sc;
  const Outcome mut = SaveAndResume(Mutant("B01"), sc);
  ASSERT_TRUE(mut.save.ok()) << mut.save.ToString();
  EXPECT_FALSE(mut.resume.ok());
  EXPECT_NE(mut.resume.ToString().find("lr_mult"), std::string::npos) << mut.resume.ToString();
  const Outcome ref = SaveAndResume(ReferenceTargetFactory(), sc);
  EXPECT_TRUE(ref.resume.ok()) << ref.resume.ToString();
}

TEST(Mutants, B03OffloadCopiesStayStaleAfterAModelOnlyLoad) {
  Scenario sc;
  sc.dtype = DType::kBFloat16;
  sc.offload = 1.0;
  sc.flags.no_load_optim = true;
  ExpectSilentDeviation("B03", sc);
}

TEST(Mutants, B06PersistsRerunningInPlaceAndTheResumeFails) {
  Scenario sc;
  const RunSpec run = MakeRun(sc);
  std::vector<TrainingState> states;
  ASSERT_TRUE(InitialStates(run, &states).ok());
  states[0].rerun.state = RerunState::kRerunningInPlace;
  auto ref = ReferenceTargetFactory().make(TargetOptions());
  EXPECT_FALSE(SaveRun(ref->target(), run, states, 0, SaveOptions()).ok());  // the spec refuses
  auto mut = Mutant("B06").make(TargetOptions());
  ASSERT_TRUE(SaveRun(mut->target(), run, states, 0, SaveOptions()).ok());
  std::vector<TrainingState> resumed;
  EXPECT_FALSE(ResumeRun(mut->target(), run, ResumeOptions(), &resumed).ok());
}

TEST(Mutants, B09LaterCachedAsyncSavesWriteTheFirstSavesData) {
  Scenario sc;
  const RunSpec run = MakeRun(sc);
  SaveOptions so;
  so.async = true;
  so.assume_constant_structure = true;
  for (const char* id : {"reference", "B09"}) {
    const TargetFactory f = std::string(id) == "reference" ? ReferenceTargetFactory() : Mutant(id);
    auto t = f.make(TargetOptions());
    std::vector<TrainingState> states;
    ASSERT_TRUE(InitialStates(run, &states).ok());
    ASSERT_TRUE(TrainRun(&states, 1).ok());
    ASSERT_TRUE(SaveRun(t->target(), run, states, 1, so).ok());
    ASSERT_TRUE(TrainRun(&states, 2).ok());
    ASSERT_TRUE(SaveRun(t->target(), run, states, 3, so).ok());
    ASSERT_TRUE(t->target().engine().Finalize().ok());
    std::vector<TrainingState> resumed, expected;
    ASSERT_TRUE(ResumeRun(t->target(), run, ResumeOptions(), &resumed).ok());
    std::vector<TrainingState> restarted = {Restarted(states[0])};
    ASSERT_TRUE(ExpectedResume(run, restarted, run, LoadFlags(), &expected).ok());
    if (std::string(id) == "reference") {
      EXPECT_EQ(FirstRunDifference(resumed, expected), "");
    } else {
      EXPECT_NE(FirstRunDifference(resumed, expected), "") << "B09 wrote the second save's data";
    }
  }
}

TEST(Mutants, B11RngReseededAfterLoad) { ExpectSilentDeviation("B11", Scenario()); }

TEST(Mutants, B12Bf16MastersNotRefreshedAfterAModelOnlyLoad) {
  Scenario sc;
  sc.dtype = DType::kBFloat16;
  sc.flags.no_load_optim = true;
  ExpectSilentDeviation("B12", sc);
  sc.dtype = DType::kFloat16;  // fp16 is refreshed: no deviation
  const Outcome fp16 = SaveAndResume(Mutant("B12"), sc);
  EXPECT_EQ(fp16.diff, "");
}

TEST(Mutants, B13Bf16OptimizerStateLost) {
  Scenario sc;
  sc.dtype = DType::kBFloat16;
  ExpectSilentDeviation("B13", sc);
}

TEST(Mutants, B14NoWeightDecayMastersSavedInModelDtype) {
  Scenario sc;
  sc.dtype = DType::kBFloat16;
  ExpectSilentDeviation("B14", sc);
}

// The loaded state is right; the samples after the next epoch boundary are not.
TEST(Mutants, B10FrozenSamplerReplaysTheTailAfterAMidEpochResume) {
  Scenario sc;
  sc.num_samples = 12;
  sc.k = 1;  // 8 of 12 consumed: mid-epoch 0
  const Outcome loaded = SaveAndResume(Mutant("B10"), sc);
  ASSERT_TRUE(loaded.resume.ok()) << loaded.resume.ToString();
  EXPECT_EQ(loaded.diff, "") << "the loaded state itself equals the spec's";
  sc.m = 2;  // crosses into epoch 1: the mutant replays samples 8..11 of epoch 0
  ExpectSilentDeviation("B10", sc);
}

TEST(Mutants, B16SamplerEpochResetOnResume) {
  Scenario sc;
  sc.num_samples = 12;  // k = 2 iterations of 8: epoch 1, mid-epoch
  ExpectSilentDeviation("B16", sc);
}

TEST(Mutants, B17OnlyTheFirstRanksCudaRngRestored) {
  Scenario sc;
  sc.world = 2;
  sc.tp = 2;
  ExpectSilentDeviation("B17", sc);
}

TEST(Mutants, B18SkipCountedInSteps) {
  Scenario sc;  // global 8, micro 2, dp 1: 4 accumulation steps
  ExpectSilentDeviation("B18", sc);
}

// Per-DP-rank loaders saved under DP 4, resumed under DP 2: the reference refuses naming the saved
// DP size; the mutant accepts and goes on from ranks 0 and 1's positions in the shards of DP 2,
// so the next iteration does not draw the samples the uninterrupted run draws.
TEST(Mutants, B25LoaderStateRestoredByRankIndexUnderASmallerDp) {
  Scenario sc;
  sc.world = 4;  // dp 4
  sc.micro_batch = 1;
  sc.num_samples = 16;
  sc.k = 1;  // each loader at position 2 of its shard of 4
  RunSpec saved = MakeRun(sc);
  saved.configs[0].data.sampler = DataSampler::kPerRank;
  std::vector<TrainingState> states;
  ASSERT_TRUE(InitialStates(saved, &states).ok());
  ASSERT_TRUE(TrainRun(&states, sc.k).ok());
  Scenario smaller = sc;
  smaller.world = 2;
  RunSpec resume = MakeRun(smaller);
  resume.configs[0].data.sampler = DataSampler::kPerRank;

  auto resume_on = [&](const TargetFactory& factory, std::vector<TrainingState>* out) {
    auto under_test = factory.make(TargetOptions());
    EXPECT_TRUE(
        SaveRun(under_test->target(), saved, states, states[0].iteration, SaveOptions()).ok());
    EXPECT_TRUE(under_test->target().engine().Finalize().ok());
    return ResumeRun(under_test->target(), resume, ResumeOptions(), out);
  };
  std::vector<TrainingState> resumed;
  const Status ref = resume_on(ReferenceTargetFactory(), &resumed);
  EXPECT_EQ(ref.code(), Status::Code::kFailedPrecondition) << ref.ToString();
  EXPECT_NE(ref.message().find("loaders for DP size 4; this run has DP size 2"), std::string::npos)
      << ref.ToString();

  const Status mut = resume_on(Mutant("B25"), &resumed);
  ASSERT_TRUE(mut.ok()) << mut.ToString();
  const DataIteratorState& data = resumed[0].data;
  EXPECT_EQ(data.consumed_samples, 8);
  ASSERT_EQ(data.loaders.size(), 2u);
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_EQ(data.loaders[r].shard, r);
    EXPECT_EQ(data.loaders[r].num_shards, 2);
    EXPECT_EQ(data.loaders[r].position, 2);  // DP 4's rank r position, not 8 / 2
  }
  std::vector<int64_t> drawn = FlatSamplesOfStep(resume.configs[0].data, data);
  std::vector<int64_t> due = FlatSamplesOfStep(saved.configs[0].data, states[0].data);
  std::sort(drawn.begin(), drawn.end());
  std::sort(due.begin(), due.end());
  EXPECT_NE(drawn, due);
}

// The global sampler saved under DP 4 after 16 samples, resumed under DP 2: the reference goes on
// at sample 16 of the global sequence, the mutant at 16 / 4 * 2 = 8 (it replays 8 samples).
TEST(Mutants, B26GlobalSamplerPositionedByAPerRankCountUnderANewDp) {
  Scenario sc;
  sc.world = 4;
  sc.micro_batch = 1;
  sc.k = 2;  // 2 iterations of 8 samples
  const RunSpec saved = MakeRun(sc);
  std::vector<TrainingState> states;
  ASSERT_TRUE(InitialStates(saved, &states).ok());
  ASSERT_TRUE(TrainRun(&states, sc.k).ok());
  Scenario smaller = sc;
  smaller.world = 2;
  const RunSpec resume = MakeRun(smaller);
  auto consumed_after_resume = [&](const TargetFactory& factory) -> int64_t {
    auto under_test = factory.make(TargetOptions());
    EXPECT_TRUE(
        SaveRun(under_test->target(), saved, states, states[0].iteration, SaveOptions()).ok());
    EXPECT_TRUE(under_test->target().engine().Finalize().ok());
    std::vector<TrainingState> resumed;
    const Status st = ResumeRun(under_test->target(), resume, ResumeOptions(), &resumed);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return st.ok() ? resumed[0].data.consumed_samples : -1;
  };
  EXPECT_EQ(consumed_after_resume(ReferenceTargetFactory()), 16);
  EXPECT_EQ(consumed_after_resume(Mutant("B26")), 8);
}

// TP 2 with the RNG saved rank-local: the two TP ranks' RNG states differ; the mutant writes rank
// 0's for both, so the resumed TP rank 1 draws from rank 0's streams.
TEST(Mutants, B27RankLocalValuesMergedByNameOnSave) {
  Scenario sc;
  sc.world = 2;
  sc.tp = 2;
  sc.rng_saving = RngSaving::kRankLocal;
  ExpectSilentDeviation("B27", sc);
}

// An async save of iteration 2 whose save input is the caller's own dicts, every tensor on the
// host; before it completes the caller writes iteration 3's state into those buffers in place. The
// reference's checkpoint holds iteration 2; the mutant's holds iteration 3's tensors under
// iteration 2's common state. With every tensor on the device the mutant copies them too.
std::string AsyncSaveWithLaterStateWritten(const TargetFactory& factory, Placement placement) {
  const RunSpec run = MakeRun(Scenario());
  std::vector<TrainingState> states;
  EXPECT_TRUE(InitialStates(run, &states).ok());
  EXPECT_TRUE(TrainRun(&states, 2).ok());
  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  auto live = std::make_shared<std::vector<ShardedStateDict>>();
  EXPECT_TRUE(target.framework().ToStateDicts(run.layout, states, run.sharding, &*live).ok());
  SaveOptions async;
  async.async = true;
  EXPECT_TRUE(
      target.engine().Save(2, SaveInput(live, EveryTensorOn(*live, placement)), async).ok());
  std::vector<TrainingState> later = states;
  EXPECT_TRUE(TrainRun(&later, 1).ok());
  std::vector<ShardedStateDict> fresh;
  EXPECT_TRUE(target.framework().ToStateDicts(run.layout, later, run.sharding, &fresh).ok());
  EXPECT_EQ(WriteStateInPlace(fresh, &*live), fresh[0].tensors.size());
  bool complete = false;
  const Status polled = target.engine().Poll(&complete);
  EXPECT_TRUE(polled.ok()) << polled.ToString();
  EXPECT_TRUE(complete);  // deferred: the poll runs the write
  std::vector<TrainingState> resumed, expected;
  const Status resume = ResumeRun(target, run, ResumeOptions(), &resumed);
  EXPECT_TRUE(resume.ok()) << resume.ToString();
  if (!resume.ok()) return "no resume";
  std::vector<TrainingState> restarted;
  for (const TrainingState& s : states) restarted.push_back(Restarted(s));
  EXPECT_TRUE(ExpectedResume(run, restarted, run, LoadFlags(), &expected).ok());
  return FirstRunDifference(resumed, expected);
}

TEST(Mutants, B28HostTensorsAliasedByTheAsyncStaging) {
  EXPECT_EQ(AsyncSaveWithLaterStateWritten(ReferenceTargetFactory(), Placement::kHost), "");
  EXPECT_EQ(AsyncSaveWithLaterStateWritten(ReferenceTargetFactory(), Placement::kDevice), "");
  EXPECT_NE(AsyncSaveWithLaterStateWritten(Mutant("B28"), Placement::kHost), "");
  EXPECT_EQ(AsyncSaveWithLaterStateWritten(Mutant("B28"), Placement::kDevice), "");
}

TEST(Mutants, B29LoadsRightOnlyInTheProcessThatSaved) {
  Scenario sc;
  sc.world = 2;
  sc.tp = 2;
  sc.m = 1;
  const Outcome same = SaveAndResume(Mutant("B29"), sc);
  ASSERT_TRUE(same.resume.ok()) << same.resume.ToString();
  EXPECT_EQ(same.diff, "") << "the saving process finds its own order";
  sc.new_process = true;
  const Outcome ref = SaveAndResume(ReferenceTargetFactory(), sc);
  ASSERT_TRUE(ref.resume.ok()) << ref.resume.ToString();
  EXPECT_EQ(ref.diff, "");
  const Outcome restarted = SaveAndResume(Mutant("B29"), sc);
  EXPECT_TRUE(!restarted.resume.ok() || !restarted.diff.empty())
      << "a new process loaded every parameter's own optimizer state";
}

// The tensor keys, rank by rank, that process `process` of a new B29 target saves for a trained
// run (its optimizer state named in that process's order).
std::vector<std::string> B29SavedKeys(int process) {
  const RunSpec run = MakeRun(Scenario());
  std::vector<TrainingState> states;
  EXPECT_TRUE(InitialStates(run, &states).ok());
  EXPECT_TRUE(TrainRun(&states, 1).ok());
  auto under_test = Mutant("B29").make(TargetOptions());
  for (int p = 0; p < process; ++p) under_test->NewProcess();
  std::vector<ShardedStateDict> every_rank;
  EXPECT_TRUE(under_test->target()
                  .framework()
                  .ToStateDicts(run.layout, states, ShardingConfig(), &every_rank)
                  .ok());
  std::vector<std::string> keys;
  for (const ShardedStateDict& d : every_rank) {
    for (const ShardedTensor& t : d.tensors) keys.push_back(t.spec.key);
  }
  return keys;
}

TEST(Mutants, B29OrderIsThatOfTheTargetsProcessWhateverWasMadeBefore) {
  // A target's process n has the same order however many targets and processes were made before
  // it in this OS process: a run's report does not depend on which worker ran which property.
  for (int process : {0, 1, 2}) {
    EXPECT_EQ(B29SavedKeys(process), B29SavedKeys(process)) << "process " << process;
  }
  // Consecutive processes of one target never agree (the mutant's mechanism).
  EXPECT_NE(B29SavedKeys(0), B29SavedKeys(1));
  EXPECT_NE(B29SavedKeys(1), B29SavedKeys(2));
}

// A bf16 run trained 2 iterations, saved, and resumed in a new process under `dtype` with the
// optimizer: "" when the spec's state comes back, else the first difference.
std::string ResumedUnderDtype(const TargetFactory& factory, DType dtype) {
  Scenario sc;
  sc.dtype = DType::kBFloat16;
  const RunSpec saved = MakeRun(sc);
  RunSpec resume = saved;
  resume.configs[0].model.params_dtype = dtype;
  std::vector<TrainingState> states;
  EXPECT_TRUE(InitialStates(saved, &states).ok());
  EXPECT_TRUE(TrainRun(&states, 2).ok());
  auto under_test = factory.make(TargetOptions());
  EXPECT_TRUE(SaveRun(under_test->target(), saved, states, 2, SaveOptions()).ok());
  under_test->NewProcess();
  std::vector<TrainingState> resumed, expected;
  const Status got = ResumeRun(under_test->target(), resume, ResumeOptions(), &resumed);
  if (!got.ok()) return got.ToString();
  std::vector<TrainingState> restarted;
  for (const TrainingState& s : states) restarted.push_back(Restarted(s));
  EXPECT_TRUE(ExpectedResume(saved, restarted, resume, LoadFlags(), &expected).ok());
  return FirstRunDifference(resumed, expected);
}

TEST(Mutants, B31AResumeUnderAnotherDtypeStartsAFreshOptimizer) {
  EXPECT_EQ(ResumedUnderDtype(ReferenceTargetFactory(), DType::kFloat32), "");
  EXPECT_EQ(ResumedUnderDtype(ReferenceTargetFactory(), DType::kFloat16), "");
  const std::string b31 = ResumedUnderDtype(Mutant("B31"), DType::kFloat32);
  EXPECT_NE(b31.find("exp_avg"), std::string::npos) << b31;
  EXPECT_EQ(ResumedUnderDtype(Mutant("B31"), DType::kBFloat16), "");  // no change: no reset
}

// A run with one frozen parameter (the megatron family: it has no optimizer state), saved under
// TP 2, exported, imported and resumed under TP 1 with the optimizer: "" when the spec's state
// comes back.
std::string ExportedResumeOfAFrozenParameter(const TargetFactory& factory) {
  Scenario sc;
  sc.world = 2;
  sc.tp = 2;
  RunSpec saved = MakeRun(sc);
  saved.configs[0].frozen = {"decoder.final_layernorm.weight"};
  sc.world = 1;
  sc.tp = 1;
  RunSpec resumed = MakeRun(sc);
  resumed.configs[0].frozen = saved.configs[0].frozen;
  std::vector<TrainingState> states;
  EXPECT_TRUE(InitialStates(saved, &states).ok());
  EXPECT_TRUE(TrainRun(&states, 2).ok());
  bool applied = false;
  const std::string difference =
      ExportResumeDifference(factory, saved, states, resumed, LoadFlags(), &applied);
  EXPECT_TRUE(applied);
  return difference;
}

TEST(Mutants, B32ExportLeavesOutTheFrozenParameter) {
  EXPECT_EQ(ExportedResumeOfAFrozenParameter(ReferenceTargetFactory()), "");
  const std::string b32 = ExportedResumeOfAFrozenParameter(Mutant("B32"));
  EXPECT_NE(b32.find("decoder.final_layernorm.weight"), std::string::npos) << b32;
}

// Save at 2, train 2, reload 2, train 1, reload 2 (the process's second load), all in one process:
// the first failing postcondition, or "".
std::string ReloadTwiceInOneProcess(const TargetFactory& factory) {
  Scenario sc;
  sc.world = 2;
  sc.tp = 2;
  StatefulModel model;
  StatefulSut sut;
  EXPECT_TRUE(StartScenario(factory, MakeRun(sc), &model, &sut).ok());
  std::vector<StatefulOp> ops(6);
  ops[0].n = 2;  // Train
  ops[1].kind = OpKind::kSave;
  ops[2].n = 2;
  ops[3].kind = OpKind::kReload;
  ops[3].iteration = 2;
  ops[4].n = 1;
  ops[5] = ops[3];
  for (const StatefulOp& op : ops) {
    EXPECT_TRUE(OpApplies(op, model)) << DescribeOp(op);
    StatefulModel next = model;
    ApplyOp(op, &next);
    const std::string failed = RunOp(op, model, next, &sut);
    if (!failed.empty()) return DescribeOp(op) + ": " + failed;
    model = std::move(next);
  }
  EXPECT_EQ(model.states[0].iteration, 2);
  return "";
}

TEST(Mutants, B33ASecondReloadInTheProcessKeepsTheLiveIteration) {
  EXPECT_EQ(ReloadTwiceInOneProcess(ReferenceTargetFactory()), "");
  const std::string b33 = ReloadTwiceInOneProcess(Mutant("B33"));
  EXPECT_NE(b33.find("Reload(the checkpoint of iteration 2"), std::string::npos) << b33;
  EXPECT_NE(b33.find("iteration: 3 vs 2"), std::string::npos) << b33;
}

}  // namespace
}  // namespace ckptspec
