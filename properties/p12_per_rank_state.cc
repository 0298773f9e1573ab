// P12, per-rank state: RNG and data-iterator state come back to the rank that saved it, rank-
// distinct objects are never deduplicated, and a layout change resets them explicitly or fails.
//  - Save side, on the target's framework dicts: two ranks' objects under one storage key
//    (UniqueKey) hold the same bytes. A save keeps one replica per key, so ranks whose RNG (or
//    data position) differ must not share a key, or one rank's state is silently dropped.
//  - Same layout, RNG loaded: every rank's RNG equals its own saved RNG, and the data iterator
//    its saved position (also with data_parallel_random_init, where DP ranks differ).
//  - Under any layout change or flags: RNG and data iterator equal the spec's (L7: restored only
//    where TP and PP are unchanged, else freshly seeded; L9: the data iterator continues under
//    any DP size), or both refuse. Then m more steps equal the spec's expected resume trained m,
//    so the data order after the resume (epochs, offsets) is the spec's too.
//  - Whenever the data iterator is loaded (any layout, DP changed or not): the samples the resumed
//    run draws in its next m iterations are, in order, the uninterrupted run's global sample
//    sequence from the saved consumed_samples on, computed from the saved data config alone
//    (not through the load rules): no sample dropped or repeated by the resume.
// Catches: B11 (RNG reseeded after the load, or not saved), B17 (only one device's RNG
// restored), B16 (sampler epoch reset on resume), B10 (resume offset applied on every epoch).
#include <map>

#include "generators/config_gen.h"
#include "generators/run_gen.h"
#include "model/describe.h"
#include "properties/property.h"
#include "properties/property_util.h"

namespace ckptspec {
namespace {

// The first storage key under which two ranks' objects hold different bytes, in words, or "".
std::string DeduplicatedDistinctObject(const std::vector<ShardedStateDict>& dicts) {
  std::map<std::string, std::pair<size_t, const std::string*>> first;
  for (size_t r = 0; r < dicts.size(); ++r) {
    for (const ShardedObject& o : dicts[r].objects) {
      const std::string key = o.spec.UniqueKey();
      auto [it, inserted] = first.emplace(key, std::make_pair(r, &o.data));
      if (!inserted && *it->second.second != o.data) {
        return "ranks " + std::to_string(it->second.first) + " and " + std::to_string(r) +
               " hold different state under the one object key '" + key +
               "' (only one replica is saved)";
      }
    }
  }
  return "";
}

// "" when the `iterations` iterations the resumed iterator `resumed` draws (under `now`) take, in
// order, the positions of the saved run's global sequence that follow `saved` (under `before`);
// else the first position where they differ.
std::string SamplesAfterResume(const DataConfig& before, const DataIteratorState& saved,
                               const DataConfig& now, DataIteratorState resumed,
                               int64_t iterations) {
  std::vector<int64_t> drawn;
  for (int64_t it = 0; it < iterations; ++it) {
    const std::vector<int64_t> step = FlatSamplesOfStep(now, resumed);
    drawn.insert(drawn.end(), step.begin(), step.end());
    AdvanceDataIterator(now, &resumed);
  }
  const std::vector<int64_t> uninterrupted =
      SequenceSamples(before, saved.consumed_samples, static_cast<int64_t>(drawn.size()));
  for (size_t j = 0; j < drawn.size(); ++j) {
    if (drawn[j] != uninterrupted[j]) {
      return "sample " + std::to_string(j) + " after the resume (sequence position " +
             std::to_string(saved.consumed_samples + static_cast<int64_t>(j)) + ", DP " +
             std::to_string(before.dp_size) + " -> " + std::to_string(now.dp_size) + ") is " +
             std::to_string(drawn[j]) + "; the uninterrupted run draws " +
             std::to_string(uninterrupted[j]);
    }
  }
  return "";
}

}  // namespace

void CheckPerRankState(const TargetFactory& factory) {
  RunSpec saved_run = *gen::RunUpTo(16);
  // DP-distinct RNG streams more often than the config generator makes them.
  if (*rc::gen::inRange(0, 3) == 0) {
    for (TrainingConfig& c : saved_run.configs) c.data_parallel_random_init = true;
  }
  const int64_t k = *rc::gen::inRange<int64_t>(0, 4);
  const int64_t m = *rc::gen::inRange<int64_t>(1, 3);
  // Without resharding only the same-layout half applies.
  const bool change_layout = factory.capabilities.resharding && *rc::gen::arbitrary<bool>();
  const RunSpec run = *gen::ResumeRunFor(saved_run, 16, change_layout);
  const LoadFlags flags = *gen::LoadFlagsGen(false);
  RC_LOG() << "scenario:\n  save: " << DescribeRun(saved_run) << "\n  train " << k
           << ", save, restart\n  resume: " << DescribeRun(run)
           << "\n  flags: " << DescribeLoadFlags(flags) << "\n  then train " << m << "\n";

  bool same_layout = true, dp_random = false, tp_pp_changed = false, dp_changed = false;
  for (size_t i = 0; i < run.configs.size(); ++i) {
    const Layout& a = saved_run.layout.modules()[i].layout;
    const Layout& b = run.layout.modules()[i].layout;
    same_layout &= a.ToString() == b.ToString();
    tp_pp_changed |= a.tp() != b.tp() || a.pp() != b.pp();
    dp_changed |= a.dp() != b.dp();
    dp_random |= saved_run.configs[i].data_parallel_random_init;
  }
  const bool rng_loaded = !flags.finetune && !flags.no_load_rng;
  RC_CLASSIFY(same_layout, "same layout");
  RC_CLASSIFY(tp_pp_changed, "TP or PP changed (RNG reseeded)");
  RC_CLASSIFY(dp_changed, "DP changed");
  RC_CLASSIFY(dp_random, "data_parallel_random_init");
  RC_CLASSIFY(rng_loaded, "RNG loaded");
  RC_CLASSIFY(flags.reset_dataloader, "reset_dataloader");
  RC_CLASSIFY(flags.finetune, "finetune");
  const bool data_loaded = !flags.finetune && !flags.reset_dataloader;

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(saved_run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, k));

  auto under_test = factory.make(TargetOptions());
  Target& target = under_test->target();
  std::vector<ShardedStateDict> dicts;
  CKPTSPEC_RC_ASSERT_OK(
      target.framework().ToStateDicts(saved_run.layout, states, saved_run.sharding, &dicts));
  CKPTSPEC_RC_ASSERT_SAME(DeduplicatedDistinctObject(dicts), "the framework's save dicts");
  CKPTSPEC_RC_ASSERT_OK(target.engine().Save(states.front().iteration, dicts, SaveOptions()));
  CKPTSPEC_RC_ASSERT_OK(target.engine().Finalize());

  std::vector<TrainingState> expected;
  const Status spec = ExpectedResume(saved_run, states, run, flags, &expected);
  ResumeOptions options;
  options.flags = flags;
  std::vector<TrainingState> resumed;
  const Status got = ResumeRun(target, run, options, &resumed);
  RC_CLASSIFY(!spec.ok(), "spec refuses");
  if (!spec.ok()) {
    RC_LOG() << "spec refuses: " << spec.ToString() << "\ntarget: " << got.ToString() << "\n";
    if (got.ok()) RC_FAIL("the target accepted a resume the spec refuses: " + spec.ToString());
    return;
  }
  if (!got.ok()) RC_FAIL("the target refused a resume the spec accepts: " + got.ToString());
  RC_CLASSIFY(dp_changed && data_loaded, "DP changed, data iterator continued");

  for (size_t i = 0; i < resumed.size(); ++i) {
    const TrainingState& s = resumed[i];
    RC_ASSERT(s.rng.size() == expected[i].rng.size());
    for (size_t r = 0; r < s.rng.size(); ++r) {
      const std::string where = "module " + std::to_string(i) + " rank " + std::to_string(r) + " " +
                                DescribeCoords(s.config.ranks[r]);
      if (same_layout && rng_loaded && s.rng[r] != states[i].rng[r]) {
        RC_FAIL(where + ": RNG is not the one this rank saved");
      }
      if (s.rng[r] != expected[i].rng[r]) RC_FAIL(where + ": RNG differs from the spec's");
    }
    if (same_layout && !flags.finetune && !flags.reset_dataloader && !(s.data == states[i].data)) {
      RC_FAIL("module " + std::to_string(i) + ": data iterator is not at the saved position");
    }
    if (!(s.data == expected[i].data)) {
      RC_FAIL("module " + std::to_string(i) + ": data iterator differs from the spec's");
    }
  }
  if (data_loaded) {
    for (size_t i = 0; i < resumed.size(); ++i) {
      CKPTSPEC_RC_ASSERT_SAME(
          SamplesAfterResume(saved_run.configs[i].data, states[i].data, run.configs[i].data,
                             resumed[i].data, m),
          "module " + std::to_string(i) + ": the resumed run's sample sequence");
    }
  }
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&resumed, m));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&expected, m));
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, expected),
                          "after training on, the resumed run differs from the spec's");
}

}  // namespace ckptspec
