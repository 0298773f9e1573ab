// P12, per-rank state: RNG and data-iterator state come back to the rank that saved it, rank-
// distinct objects are never deduplicated, and a layout change resets them explicitly or fails.
//  - Save side, on the target's framework dicts: two ranks' objects under one storage key
//    (StoredObjectKey: a sharded object's unique key; a rank-local one's is per rank) hold the
//    same bytes. A save keeps one replica per key, so ranks whose RNG (or data position) differ
//    must not share a key, or one rank's state is silently dropped.
//  - Same layout, RNG loaded: every rank's RNG equals its own saved RNG, and the data iterator
//    its saved position (also with data_parallel_random_init, where DP ranks differ).
//  - Under any layout change or flags: RNG and data iterator equal the spec's (L7: restored only
//    where TP and PP are unchanged, a rank-local RNG only under the saved layout, else freshly
//    seeded; L9: the data iterator continues under
//    any DP size), or both refuse. Then m more steps equal the spec's expected resume trained m,
//    so the data order after the resume (epochs, offsets) is the spec's too.
//  - Whenever the data iterator is loaded (any layout, DP changed or not): the samples the resumed
//    run draws in its next m iterations are, in order, the ones the uninterrupted run draws next
//    (the global sequence from the saved consumed_samples on, or each DP rank's loader going on
//    in its shard), computed from the saved data config alone (not through the load rules). A
//    failure names the samples the resume drops and the ones it draws instead (and how many of
//    those repeat the saved run's current epoch); so does a resume the spec refuses (per-DP-rank
//    loaders under a new DP size) that the target accepted.
// Half the cases give every module per-DP-rank loaders (data_iterator.h), whose state differs
// by DP rank; half the cases that keep the layout and a quarter of the others save every
// module's RNG rank-local.
// Catches: the bugs its entry in properties/catalog.cc names (docs/BUGS.md): RNG reseeded after
// the load or not saved, only one device's RNG restored, a sampler's epoch or offset wrong after a
// resume, per-DP-rank loaders carried to a new DP size by rank index, rank-local values merged by
// name on save.
#include <map>
#include <set>

#include "generators/config_gen.h"
#include "generators/run_gen.h"
#include "model/describe.h"
#include "properties/property.h"
#include "properties/property_util.h"
#include "properties/scenarios.h"

namespace ckptspec {
namespace {

// The first storage key under which two ranks' objects hold different bytes, in words, or "".
std::string DeduplicatedDistinctObject(const std::vector<ShardedStateDict>& dicts) {
  std::map<std::string, std::pair<size_t, const std::string*>> first;
  for (size_t r = 0; r < dicts.size(); ++r) {
    for (const ShardedObject& o : dicts[r].objects) {
      const std::string key = StoredObjectKey(o.spec, static_cast<int64_t>(r));
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

// The samples `state` (under `c`) draws in its next `iterations` iterations, in order. Precondition:
// CheckDataIterator(c, state) is OK.
std::vector<int64_t> DrawIterations(const DataConfig& c, DataIteratorState state,
                                    int64_t iterations) {
  std::vector<int64_t> drawn;
  for (int64_t it = 0; it < iterations; ++it) {
    const std::vector<int64_t> step = FlatSamplesOfStep(c, state);
    drawn.insert(drawn.end(), step.begin(), step.end());
    AdvanceDataIterator(c, &state);
  }
  return drawn;
}

// The first `count` samples the run saved at `saved` (under `before`) draws next: the
// uninterrupted run, from the saved data config alone (not through the load rules).
std::vector<int64_t> UninterruptedSamples(const DataConfig& before, DataIteratorState saved,
                                          size_t count) {
  saved.pass_origin = -1;
  const int64_t gbs = before.global_batch_size;
  std::vector<int64_t> out =
      DrawIterations(before, saved, (static_cast<int64_t>(count) + gbs - 1) / gbs);
  out.resize(count);
  return out;
}

// The samples the run saved at `saved` had drawn since the start of its current epoch (each
// loader's own epoch under per-DP-rank loaders): a sample drawn again before the epoch ends is
// a repeat.
std::set<int64_t> DrawnThisEpoch(const DataConfig& before, const DataIteratorState& saved) {
  std::vector<int64_t> drawn;
  if (saved.loaders.empty()) {
    const int64_t start = saved.epoch * before.num_samples;
    drawn = SequenceSamples(before, start, saved.consumed_samples - start);
  } else {
    for (const RankLoaderState& l : saved.loaders) {
      const int64_t start = l.epoch * ShardSize(before.num_samples, l.shard, l.num_shards);
      const std::vector<int64_t> part = ShardStreamSamples(before, l, start, l.position - start);
      drawn.insert(drawn.end(), part.begin(), part.end());
    }
  }
  return std::set<int64_t>(drawn.begin(), drawn.end());
}

// Up to 8 ids of `ids`, then how many more.
std::string FewIds(const std::vector<int64_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size() && i < 8; ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > 8) out += ", ... " + std::to_string(ids.size() - 8) + " more";
  return out + "]";
}

// Which samples `drawn` drops and repeats against `due` (the uninterrupted run's, as many), as
// multisets, in words; "" when they hold the same samples.
std::string DroppedAndRepeated(const std::vector<int64_t>& due, const std::vector<int64_t>& drawn,
                               const std::set<int64_t>& drawn_this_epoch) {
  std::map<int64_t, int64_t> balance;  // drawn minus due, per sample
  for (int64_t id : drawn) ++balance[id];
  for (int64_t id : due) --balance[id];
  std::vector<int64_t> dropped, extra;
  size_t replayed = 0;
  for (const auto& [id, n] : balance) {
    for (int64_t k = 0; k < -n; ++k) dropped.push_back(id);
    for (int64_t k = 0; k < n; ++k) {
      extra.push_back(id);
      replayed += drawn_this_epoch.count(id);
    }
  }
  if (dropped.empty() && extra.empty()) return "";
  return "of the " + std::to_string(due.size()) +
         " samples the uninterrupted run draws next, the resume drops " +
         std::to_string(dropped.size()) + " " + FewIds(dropped) + " and draws " +
         std::to_string(extra.size()) + " others instead " + FewIds(extra) + ", " +
         std::to_string(replayed) +
         " of which the saved run had already drawn in its current epoch";
}

// The samples the resumed iterator `resumed` (under `now`) draws in `iterations` iterations, or
// an error when it cannot draw under `now`.
Status DrawnAfterResume(const DataConfig& now, const DataIteratorState& resumed, int64_t iterations,
                        std::vector<int64_t>* drawn) {
  CKPTSPEC_RETURN_IF_ERROR(CheckDataIterator(now, resumed));
  *drawn = DrawIterations(now, resumed, iterations);
  return Status::OK();
}

// "" when the `iterations` iterations the resumed iterator `resumed` draws (under `now`) take, in
// order, the samples the uninterrupted run saved at `saved` (under `before`) draws next; else the
// first position where they differ, with the samples the resume drops and repeats.
std::string SamplesAfterResume(const DataConfig& before, const DataIteratorState& saved,
                               const DataConfig& now, const DataIteratorState& resumed,
                               int64_t iterations) {
  std::vector<int64_t> drawn;
  const Status can_draw = DrawnAfterResume(now, resumed, iterations, &drawn);
  if (!can_draw.ok()) return "the resumed data iterator cannot draw: " + can_draw.ToString();
  const std::vector<int64_t> due = UninterruptedSamples(before, saved, drawn.size());
  for (size_t j = 0; j < drawn.size(); ++j) {
    if (drawn[j] != due[j]) {
      const std::string accounting = DroppedAndRepeated(due, drawn, DrawnThisEpoch(before, saved));
      return "sample " + std::to_string(j) + " after the resume (after " +
             std::to_string(saved.consumed_samples) + " consumed samples, DP " +
             std::to_string(before.dp_size) + " -> " + std::to_string(now.dp_size) + ") is " +
             std::to_string(drawn[j]) + "; the uninterrupted run draws " + std::to_string(due[j]) +
             (accounting.empty() ? " (the same samples, in another order)" : "; " + accounting);
    }
  }
  return "";
}

// For a resume the spec refuses and the target accepted: what the target's resumed iterators
// draw against the uninterrupted runs, module by module, in words ("" where they match or were
// not loaded).
std::string WhatTheAcceptedResumeDraws(const RunSpec& saved_run,
                                       const std::vector<TrainingState>& saved, const RunSpec& run,
                                       const std::vector<TrainingState>& resumed,
                                       int64_t iterations) {
  std::string out;
  for (size_t i = 0; i < resumed.size() && i < saved.size(); ++i) {
    std::vector<int64_t> drawn;
    if (!DrawnAfterResume(run.configs[i].data, resumed[i].data, iterations, &drawn).ok()) continue;
    const DataConfig& before = saved_run.configs[i].data;
    const std::string words =
        DroppedAndRepeated(UninterruptedSamples(before, saved[i].data, drawn.size()), drawn,
                           DrawnThisEpoch(before, saved[i].data));
    if (!words.empty()) out += "; module " + std::to_string(i) + ": " + words;
  }
  return out;
}

// OK unless two ranks' distinct objects share a storage key in the framework's save `dicts`.
Status DistinctObjectsKept(const std::vector<ShardedStateDict>& dicts) {
  const std::string distinct = DeduplicatedDistinctObject(dicts);
  if (distinct.empty()) return Status::OK();
  return Status::FailedPrecondition("the framework's save dicts: " + distinct);
}

// What a resume changes and loads, over every module: layouts, DP-distinct RNG, loaders, flags.
struct ResumeTraits {
  bool same_layout = true, dp_random = false, tp_pp_changed = false, dp_changed = false;
  bool per_rank = false, per_rank_dp_changed = false, per_rank_dp_shrunk = false;
  bool rank_local_rng = false;
  bool rng_loaded = false, data_loaded = false;
};

// The traits of resuming `saved_run` as `run` under `flags`.
ResumeTraits TraitsOf(const RunSpec& saved_run, const RunSpec& run, const LoadFlags& flags) {
  ResumeTraits t;
  for (size_t i = 0; i < run.configs.size(); ++i) {
    const Layout& a = saved_run.layout.modules()[i].layout;
    const Layout& b = run.layout.modules()[i].layout;
    t.same_layout &= a.ToString() == b.ToString();
    t.tp_pp_changed |= a.tp() != b.tp() || a.pp() != b.pp();
    t.dp_changed |= a.dp() != b.dp();
    t.dp_random |= saved_run.configs[i].data_parallel_random_init;
    const bool loaders = saved_run.configs[i].data.sampler == DataSampler::kPerRank;
    t.per_rank |= loaders;
    t.per_rank_dp_changed |= loaders && a.dp() != b.dp();
    t.per_rank_dp_shrunk |= loaders && a.dp() > b.dp();
    t.rank_local_rng |= saved_run.configs[i].rng_saving == RngSaving::kRankLocal;
  }
  t.rng_loaded = !flags.finetune && !flags.no_load_rng;
  t.data_loaded = !flags.finetune && !flags.reset_dataloader;
  return t;
}

// Classifies the case by its traits and flags.
void ClassifyResume(const ResumeTraits& t, const LoadFlags& flags) {
  RC_CLASSIFY(t.same_layout, "same layout");
  RC_CLASSIFY(t.tp_pp_changed, "TP or PP changed (RNG reseeded)");
  RC_CLASSIFY(t.dp_changed, "DP changed");
  RC_CLASSIFY(t.dp_random, "data_parallel_random_init");
  RC_CLASSIFY(t.rng_loaded, "RNG loaded");
  RC_CLASSIFY(t.rank_local_rng, "RNG saved rank-local");
  // Where rank-local RNG loads (L7) and a merge by name shows (B27).
  RC_CLASSIFY(t.rank_local_rng && t.same_layout && t.rng_loaded,
              "RNG saved rank-local, loaded under its layout");
  RC_CLASSIFY(flags.reset_dataloader, "reset_dataloader");
  RC_CLASSIFY(flags.finetune, "finetune");
  RC_CLASSIFY(t.per_rank, "per-DP-rank loaders");
  // L9's refusal: a loader's position does not carry over to another DP size.
  RC_CLASSIFY(t.per_rank_dp_changed && t.data_loaded,
              "per-DP-rank loaders, DP changed, data loaded");
  // B25's trigger: a smaller DP size finds a saved loader for every new DP rank.
  RC_CLASSIFY(t.per_rank_dp_shrunk && t.data_loaded, "per-DP-rank loaders, DP shrunk, data loaded");
}

// Every rank's RNG and each module's data iterator: the saved ones where kept, the spec's always.
void CheckRngAndDataIterators(const RunSpec& saved_run, const std::vector<TrainingState>& states,
                              const RunSpec& run, const std::vector<TrainingState>& resumed,
                              const std::vector<TrainingState>& expected, const ResumeTraits& t,
                              int64_t m) {
  for (size_t i = 0; i < resumed.size(); ++i) {
    const TrainingState& s = resumed[i];
    RC_ASSERT(s.rng.size() == expected[i].rng.size());
    for (size_t r = 0; r < s.rng.size(); ++r) {
      const std::string where = "module " + std::to_string(i) + " rank " + std::to_string(r) + " " +
                                DescribeCoords(s.config.ranks[r]);
      if (t.same_layout && t.rng_loaded && s.rng[r] != states[i].rng[r]) {
        RC_FAIL(where + ": RNG is not the one this rank saved");
      }
      if (s.rng[r] != expected[i].rng[r]) RC_FAIL(where + ": RNG differs from the spec's");
    }
    // What the wrong iterator draws next, where it was loaded ("" when the samples agree).
    auto draws = [&] {
      const std::string words = t.data_loaded
                                    ? SamplesAfterResume(saved_run.configs[i].data, states[i].data,
                                                         run.configs[i].data, s.data, m)
                                    : "";
      return words.empty() ? words : ": " + words;
    };
    if (t.same_layout && t.data_loaded && !(s.data == states[i].data)) {
      RC_FAIL("module " + std::to_string(i) + ": data iterator is not at the saved position" +
              draws());
    }
    if (!(s.data == expected[i].data)) {
      RC_FAIL("module " + std::to_string(i) + ": data iterator differs from the spec's" + draws());
    }
  }
}

}  // namespace

void CheckPerRankState(const TargetFactory& factory) {
  RunSpec saved_run = *gen::RunUpTo(16);
  // DP-distinct RNG streams more often than the config generator makes them.
  if (*rc::gen::inRange(0, 3) == 0) {
    for (TrainingConfig& c : saved_run.configs) c.data_parallel_random_init = true;
  }
  // Per-DP-rank loaders in every module in half the cases (the config generator draws them in a
  // quarter of the modules).
  if (*rc::gen::arbitrary<bool>()) saved_run = gen::WithPerRankLoaders(saved_run);
  const int64_t k = *rc::gen::inRange<int64_t>(0, 4);
  const int64_t m = *rc::gen::inRange<int64_t>(1, 3);
  // A third of the cases keep the layout (all of them without resharding), a third change it
  // freely and a third change only the DP size, the change the data iterator's rule L9 is about
  // (elementOf: uniform at every size, where inRange narrows at small sizes).
  enum Change { kSame, kFree, kOnlyDp };
  const Change change = factory.capabilities.resharding
                            ? *rc::gen::elementOf(std::vector<Change>{kSame, kFree, kOnlyDp})
                            : kSame;
  // Every module's RNG saved rank-local in half the cases that keep the layout (where it loads,
  // L7, with the RNG loaded: set below) and a quarter of the others (the config generator draws
  // it in a quarter of the modules).
  const bool force_rank_local =
      *rc::gen::elementOf(std::vector<int>{0, 1, 2, 3}) < (change == kSame ? 2 : 1);
  if (force_rank_local) {
    for (TrainingConfig& c : saved_run.configs) c.rng_saving = RngSaving::kRankLocal;
  }
  // Half the DP-only changes shrink the DP size: the saved run first moves to a larger one where
  // it fits (the drawn DP size is often 1, which only grows).
  const bool shrink = change == kOnlyDp && *rc::gen::arbitrary<bool>();
  if (shrink) saved_run = *gen::ResumeRunChangingOnlyDp(saved_run, 16, gen::DpDirection::kLarger);
  const RunSpec run =
      change == kOnlyDp
          ? *gen::ResumeRunChangingOnlyDp(
                saved_run, 16, shrink ? gen::DpDirection::kSmaller : gen::DpDirection::kAny)
          : *gen::ResumeRunFor(saved_run, 16, change == kFree);
  LoadFlags flags = *gen::LoadFlagsGen(false);
  if (change == kOnlyDp && *rc::gen::elementOf(std::vector<int>{0, 1, 2, 3}) != 0) {
    // The data iterator loaded and no refusal that has nothing to do with it: no per-DP-rank RNG
    // for DP ranks the save did not have (L7 under data_parallel_random_init).
    flags.finetune = false;
    flags.reset_dataloader = false;
    for (const TrainingConfig& c : saved_run.configs) {
      flags.no_load_rng = flags.no_load_rng || c.data_parallel_random_init;
    }
  }
  if (force_rank_local && change == kSame) flags.finetune = flags.no_load_rng = false;
  RC_LOG() << "scenario:\n  save: " << DescribeRun(saved_run) << "\n  train " << k
           << ", save, restart\n  resume: " << DescribeRun(run)
           << "\n  flags: " << DescribeLoadFlags(flags) << "\n  then train " << m << "\n";
  const ResumeTraits t = TraitsOf(saved_run, run, flags);
  ClassifyResume(t, flags);

  std::vector<TrainingState> states;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(saved_run, &states));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&states, k));

  RestartedResume r;
  CKPTSPEC_RC_ASSERT_OK(
      SaveRestartResume(factory, saved_run, states, run, flags, &r, DistinctObjectsKept));
  const Status& spec = r.spec;
  const Status& got = r.got;
  std::vector<TrainingState>& expected = r.expected;
  std::vector<TrainingState>& resumed = r.resumed;
  RC_CLASSIFY(!spec.ok(), "spec refuses");
  if (!spec.ok()) {
    RC_LOG() << "spec refuses: " << spec.ToString() << "\ntarget: " << got.ToString() << "\n";
    if (got.ok()) {
      RC_FAIL(
          "the target accepted a resume the spec refuses: " + spec.ToString() +
          (t.data_loaded ? WhatTheAcceptedResumeDraws(saved_run, states, run, resumed, m) : ""));
    }
    return;
  }
  if (!got.ok()) RC_FAIL("the target refused a resume the spec accepts: " + got.ToString());
  RC_CLASSIFY(t.dp_changed && t.data_loaded, "DP changed, data iterator continued");
  RC_CLASSIFY(t.per_rank && t.same_layout && t.data_loaded, "per-DP-rank loaders continued");

  CheckRngAndDataIterators(saved_run, states, run, resumed, expected, t, m);
  if (t.data_loaded) {
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
