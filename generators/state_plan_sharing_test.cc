// StatePlan::Sharing: a shared plan (reused for identical inputs, building each rank's entries
// once and filtering copies of them) gives exactly the entries a private plan builds. It sits
// here, not beside model/state_entries.h, because it draws whole runs (generators/run_gen.h).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "generators/run_gen.h"
#include "model/describe.h"
#include "model/run_spec.h"
#include "model/state_entries.h"

namespace ckptspec {
namespace {

// The first difference between two rank entries, or "".
std::string EntriesDifference(const RankEntries& a, const RankEntries& b) {
  std::ostringstream d;
  if (a.module != b.module) d << "module " << a.module << " vs " << b.module;
  const size_t a_chunks = a.chunks ? a.chunks->size() : 0;
  const size_t b_chunks = b.chunks ? b.chunks->size() : 0;
  if (a_chunks != b_chunks) d << a_chunks << " vs " << b_chunks << " chunks";
  for (size_t i = 0; d.str().empty() && i < a_chunks; ++i) {
    const ParamChunk& x = a.chunk(i);
    const ParamChunk& y = b.chunk(i);
    if (x.param != y.param || !(x.spec == y.spec) || x.instance_index != y.instance_index) {
      d << "chunk " << i << " ('" << x.spec.key << "' vs '" << y.spec.key << "')";
    }
  }
  if (a.dict.tensors.size() != b.dict.tensors.size() ||
      a.tensor_roles.size() != b.tensor_roles.size()) {
    d << a.dict.tensors.size() << " vs " << b.dict.tensors.size() << " tensors";
  }
  for (size_t i = 0; d.str().empty() && i < a.dict.tensors.size(); ++i) {
    const ShardedTensor& x = a.dict.tensors[i];
    const ShardedTensor& y = b.dict.tensors[i];
    const TensorRole& rx = a.tensor_roles[i];
    const TensorRole& ry = b.tensor_roles[i];
    bool same_pieces = rx.pieces.size() == ry.pieces.size();
    for (size_t p = 0; same_pieces && p < rx.pieces.size(); ++p) {
      same_pieces = rx.pieces[p].chunk == ry.pieces[p].chunk &&
                    rx.pieces[p].dst == ry.pieces[p].dst && rx.pieces[p].src == ry.pieces[p].src &&
                    rx.pieces[p].length == ry.pieces[p].length;
    }
    if (!(x.spec == y.spec) || x.data != y.data || rx.kind != ry.kind || rx.slot != ry.slot ||
        rx.chunk != ry.chunk || !same_pieces) {
      d << "tensor " << i << " ('" << x.spec.key << "' vs '" << y.spec.key << "')";
    }
  }
  if (a.dict.objects.size() != b.dict.objects.size() ||
      a.object_roles.size() != b.object_roles.size()) {
    d << a.dict.objects.size() << " vs " << b.dict.objects.size() << " objects";
  }
  for (size_t i = 0; d.str().empty() && i < a.dict.objects.size(); ++i) {
    const ShardedObject& x = a.dict.objects[i];
    const ShardedObject& y = b.dict.objects[i];
    if (!(x.spec == y.spec) || x.data != y.data ||
        a.object_roles[i].kind != b.object_roles[i].kind ||
        a.object_roles[i].saved_ranks != b.object_roles[i].saved_ranks) {
      d << "object " << i << " ('" << x.spec.key << "' vs '" << y.spec.key << "')";
    }
  }
  return d.str();
}

std::vector<TrainingConfig> ConfigsOf(const std::vector<TrainingState>& states) {
  std::vector<TrainingConfig> configs;
  for (const TrainingState& s : states) configs.push_back(s.config);
  return configs;
}

// Makes a plan of `states`' configs with `sharing`, their optimizer-state presence set where the
// torch.optim family has one.
StatePlan MakePlan(const RunSpec& run, const std::vector<TrainingState>& states,
                   StatePlan::Sharing sharing) {
  StatePlan plan;
  const Status made = StatePlan::Make(run.layout, ConfigsOf(states), run.sharding, &plan, sharing);
  RC_ASSERT(made.ok());
  for (size_t m = 0; m < states.size(); ++m) {
    if (states[m].config.optimizer.freeze_family == FreezeFamily::kTorchOptim) {
      RC_ASSERT(
          plan.SetOptimizerState(static_cast<int>(m), OptimizerStatePresence(states[m])).ok());
    }
  }
  return plan;
}

RC_GTEST_PROP(StatePlanSharing, SharedPlansBuildWhatPrivatePlansBuild, ()) {
  RunSpec run = *gen::RunUpTo(8);
  if (*rc::gen::inRange(0, 4) == 0) run = gen::WithTorchOptimFreezing(run);
  std::vector<TrainingState> states;
  RC_ASSERT(InitialStates(run, &states).ok());
  RC_ASSERT(TrainRun(&states, *rc::gen::inRange<int64_t>(0, 3)).ok());

  // A shared plan of inputs that differ in one member is made and used first: a plan reused for
  // inputs that are not identical shows here where that member changes the entries (the RNG
  // saving, the chained prefix); config_identity_test covers every member.
  std::vector<TrainingState> decoy_states = states;
  RunSpec decoy = run;
  switch (*rc::gen::inRange(0, 4)) {
    case 0:
      for (TrainingState& s : decoy_states) s.config.seed += 1;
      break;
    case 1:
      for (TrainingState& s : decoy_states) s.config.rerun_mode = RerunMode::kDisabled;
      break;
    case 2:
      for (TrainingState& s : decoy_states) s.config.rng_saving = RngSaving::kRankLocal;
      break;
    default:
      decoy.sharding.chained_avoid_prefix = !decoy.sharding.chained_avoid_prefix;
      break;
  }
  StatePlan decoy_plan;
  if (StatePlan::Make(decoy.layout, ConfigsOf(decoy_states), decoy.sharding, &decoy_plan).ok()) {
    for (int64_t r = 0; r < run.layout.world_size(); ++r) {
      RankEntries ignored;
      (void)decoy_plan.BuildRank(r, EntryFilter(), nullptr, &ignored);
    }
  }

  const StatePlan shared = MakePlan(run, states, StatePlan::Sharing::kShared);
  const StatePlan again = MakePlan(run, states, StatePlan::Sharing::kShared);
  const StatePlan own = MakePlan(run, states, StatePlan::Sharing::kPrivate);
  std::vector<ModulePayloads> payloads(states.size());
  for (int round = 0; round < 2; ++round) {  // the second round takes the kept structures
    for (int64_t r = 0; r < run.layout.world_size(); ++r) {
      EntryFilter f;
      f.model = *rc::gen::arbitrary<bool>();
      f.optimizer = *rc::gen::arbitrary<bool>();
      f.slice_index = *rc::gen::arbitrary<bool>();
      f.rng = *rc::gen::arbitrary<bool>();
      f.rerun = *rc::gen::arbitrary<bool>();
      f.data = *rc::gen::arbitrary<bool>();
      const bool with_state = *rc::gen::arbitrary<bool>();
      const TrainingState* state = with_state ? &states[run.layout.ModuleOf(r)] : nullptr;
      RankEntries want, got;
      const Status built = own.BuildRank(r, f, state, &want);
      const Status from_shared =
          (round == 0 ? shared : again)
              .BuildRank(r, f, state, &got,
                         with_state ? &payloads[run.layout.ModuleOf(r)] : nullptr);
      RC_ASSERT(built.ToString() == from_shared.ToString());
      if (!built.ok()) continue;
      const std::string difference = EntriesDifference(want, got);
      if (!difference.empty()) {
        RC_FAIL("rank " + std::to_string(r) + (with_state ? " with" : " without") +
                " its state, round " + std::to_string(round) + ": " + difference + "\n" +
                DescribeRun(run));
      }
    }
  }
}

// Plans made and used from several threads at once give the entries of a private plan.
TEST(StatePlanSharing, ThreadsShareAPlan) {
  ParallelSizes sizes;
  sizes.tp = 2;
  Layout layout;
  ASSERT_TRUE(Layout::Make(4, sizes, RankOrder(), &layout).ok());
  RunSpec run;
  run.layout = HeterogeneousLayout::Single(layout);
  TrainingConfig c;
  c.model.hidden_size = 8;
  c.model.vocab_size = 16;
  FitConfigToLayout(layout, &c);
  run.configs = {c};
  std::vector<TrainingState> states;
  ASSERT_TRUE(InitialStates(run, &states).ok());
  ASSERT_TRUE(TrainRun(&states, 1).ok());
  StatePlan own;
  ASSERT_TRUE(
      StatePlan::Make(run.layout, run.configs, run.sharding, &own, StatePlan::Sharing::kPrivate)
          .ok());
  std::vector<RankEntries> want(4);
  for (int64_t r = 0; r < 4; ++r)
    ASSERT_TRUE(own.BuildRank(r, EntryFilter(), &states[0], &want[r]).ok());

  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        StatePlan plan;
        if (!StatePlan::Make(run.layout, run.configs, run.sharding, &plan).ok()) {
          errors[t] = "Make failed";
          return;
        }
        const int64_t r = (t + i) % 4;
        RankEntries got;
        if (!plan.BuildRank(r, EntryFilter(), &states[0], &got).ok()) {
          errors[t] = "BuildRank failed";
          return;
        }
        const std::string difference = EntriesDifference(want[r], got);
        if (!difference.empty()) {
          errors[t] = "rank " + std::to_string(r) + ": " + difference;
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
}

}  // namespace
}  // namespace ckptspec
