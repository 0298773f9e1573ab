// The load rules over observations on a hand-made one-rank job: a load that did what the rules
// say passes, and each class notices the value a faulty framework would leave.
#include "model/observation_rules.h"

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

FrameworkJob Job() {
  FrameworkJob job;
  FrameworkModule m;  // world 1
  m.model.num_layers = 1;
  m.model.hidden_size = 16;
  m.model.num_attention_heads = 2;
  m.model.vocab_size = 64;
  job.modules.push_back(m);
  job.global_batch_size = 8;
  job.scheduler.max_lr = 1e-3;
  job.scheduler.min_lr = 1e-5;
  job.scheduler.lr_decay_steps = 1000;
  return job;
}

GroupObservation Group(const SchedulerConfig& c, int64_t num_steps) {
  GroupObservation g;
  g.optimizer = "0";
  g.params = {"w"};
  g.identity.Remove(IdentityField::kLrBoundsDeclared);
  g.identity.max_lr = c.max_lr;
  g.identity.min_lr = c.min_lr;
  g.lr = SchedulerLr(c, num_steps, c.max_lr, c.min_lr);
  g.weight_decay = SchedulerWd(c, num_steps);
  g.beta1 = 0.9;
  g.beta2 = 0.999;
  g.eps = 1e-8;
  return g;
}

RankObservation Rank(const FrameworkJob& job, int64_t iteration, uint64_t model, uint64_t main,
                     uint64_t moments, uint64_t rng) {
  RankObservation o;
  const int64_t num_steps = iteration * job.global_batch_size;
  o.iteration = iteration;
  o.copy(Copy::kModel)["w"] = model;
  o.copy(Copy::kMain)["w"] = main;
  o.copy(Copy::kExpAvg)["w"] = moments;
  o.copy(Copy::kExpAvgSq)["w"] = moments + 1;
  o.param_steps["w"] = iteration;
  o.groups = {Group(job.scheduler, num_steps)};
  o.scheduler = SchedulerState{job.scheduler, num_steps};
  o.rng = rng;
  o.consumed_samples = num_steps;
  o.rerun = {"disabled", "NOT_RUNNING_YET", iteration, 77};
  return o;
}

struct Scenario {
  FrameworkJob saved_job = Job(), job = Job();
  Observation saved{Rank(saved_job, 4, 10, 20, 30, 111)};
  Observation fresh{Rank(job, 0, 11, 11, 0, 222)};
  LoadCase Case(const LoadFlags& flags = LoadFlags()) const {
    return LoadCase{saved_job, saved, job, fresh, flags};
  }
};

TEST(ObservationRules, ALoadThatRestoresEverythingPasses) {
  const Scenario s;
  EXPECT_EQ(CheckLoaded(s.Case(), s.saved), "");
}

TEST(ObservationRules, EachClassNoticesAWrongValue) {
  const Scenario s;
  const std::pair<StateClass, void (*)(RankObservation*)> faults[] = {
      {StateClass::kIteration, [](RankObservation* o) { o->iteration = 0; }},
      {StateClass::kModel, [](RankObservation* o) { o->copy(Copy::kModel)["w"] = 11; }},
      {StateClass::kCopies, [](RankObservation* o) { o->copy(Copy::kMain)["w"] = 11; }},
      {StateClass::kOptimizer, [](RankObservation* o) { o->copy(Copy::kExpAvg)["w"] = 0; }},
      {StateClass::kOptimizer, [](RankObservation* o) { o->param_steps["w"] = 0; }},
      {StateClass::kGroups, [](RankObservation* o) { o->groups[0].beta2 = 0.95; }},
      {StateClass::kGroups, [](RankObservation* o) { o->groups[0].lr *= 2; }},
      {StateClass::kScheduler, [](RankObservation* o) { o->scheduler->num_steps = 0; }},
      {StateClass::kRng, [](RankObservation* o) { o->rng = 222; }},
      {StateClass::kData, [](RankObservation* o) { o->consumed_samples = 0; }},
      {StateClass::kRerun, [](RankObservation* o) { o->rerun.digest = 78; }},
  };
  for (const auto& [cls, fault] : faults) {
    Observation loaded = s.saved;
    fault(&loaded[0]);
    const std::string d = CheckLoadedClass(s.Case(), loaded, cls);
    EXPECT_EQ(d.rfind(std::string(StateClassName(cls)) + ": ", 0), 0u)
        << StateClassName(cls) << ": " << d;
  }
}

TEST(ObservationRules, WithoutTheOptimizerCopiesFollowTheLoadedWeights) {
  const Scenario s;
  LoadFlags flags;
  flags.no_load_optim = true;
  Observation loaded = s.fresh;  // optimizer, scheduler, groups: fresh
  loaded[0].iteration = 4;
  loaded[0].copy(Copy::kModel)["w"] = 10;
  loaded[0].copy(Copy::kMain)["w"] = 10;  // refreshed from the loaded weights (L4)
  loaded[0].rng = 111;
  loaded[0].consumed_samples = 32;
  loaded[0].rerun.current_iteration = 4;
  EXPECT_EQ(CheckLoaded(s.Case(flags), loaded), "");
  loaded[0].copy(Copy::kMain)["w"] = 11;  // still the fresh build's copy (B03)
  EXPECT_EQ(CheckLoadedClass(s.Case(flags), loaded, StateClass::kCopies),
            "copies: main copy of w (summed over ranks): 000000000000000b, the loaded weight "
            "(L4: copies refreshed) 000000000000000a");
}

TEST(ObservationRules, UnderOverrideTheGroupsTakeTheNewSchedule) {
  Scenario s;
  s.job.scheduler.max_lr = 3e-4;
  s.fresh = {Rank(s.job, 0, 11, 11, 0, 222)};
  LoadFlags flags;
  flags.override_scheduler = true;
  Observation loaded = s.saved;
  const int64_t n = loaded[0].scheduler->num_steps;
  loaded[0].scheduler->config = s.job.scheduler;
  // The stale bounds of the saved group, lr recomputed with them (B05).
  loaded[0].groups[0].lr = SchedulerLr(s.job.scheduler, n, 1e-3, 1e-5);
  EXPECT_EQ(CheckLoadedClass(s.Case(flags), loaded, StateClass::kGroups),
            "groups: w: LR bounds 0.001/1.0000000000000001e-05, expected "
            "0.00029999999999999997/1.0000000000000001e-05 (override_scheduler: bounds from the "
            "job, lr from its scheduler); the saved bounds of its own group");
  // The new bounds and the lr they give: as the rules say.
  loaded[0].groups[0].identity.max_lr = 3e-4;
  loaded[0].groups[0].lr = SchedulerLr(s.job.scheduler, n, 3e-4, 1e-5);
  EXPECT_EQ(CheckLoadedClass(s.Case(flags), loaded, StateClass::kGroups), "");
  EXPECT_EQ(CheckLoadedClass(s.Case(flags), loaded, StateClass::kScheduler), "");
  EXPECT_EQ(CheckGroupsFollowScheduler(s.job, loaded), "");
}

TEST(ObservationRules, BoundsOfAnotherSavedGroupAreNamed) {
  // Two groups that differ only in their LR bounds, merged on load (B21): w gets v's bounds.
  Scenario s;
  for (Observation* o : {&s.saved, &s.fresh}) {
    GroupObservation v = (*o)[0].groups[0];
    v.params = {"v"};
    v.identity.max_lr = 2e-3;
    v.lr = SchedulerLr(s.job.scheduler, (*o)[0].scheduler->num_steps, 2e-3, 1e-5);
    (*o)[0].groups.push_back(v);
  }
  Observation loaded = s.saved;
  loaded[0].groups[0].identity.max_lr = 2e-3;
  loaded[0].groups[0].lr = loaded[0].groups[1].lr;
  EXPECT_EQ(CheckLoadedClass(s.Case(LoadFlags()), loaded, StateClass::kGroups),
            "groups: w: LR bounds 0.002/1.0000000000000001e-05, expected "
            "0.001/1.0000000000000001e-05 (the saved group, lr from the scheduler at the loaded "
            "num_steps); the saved bounds of another group (of v)");
}

TEST(ObservationRules, AMissingIdentityFieldIsNamed) {
  const Scenario s;
  Observation o = s.saved;
  EXPECT_EQ(MissingIdentityField(o), "");
  o[0].groups[0].identity.Remove(IdentityField::kLrMult);
  EXPECT_EQ(MissingIdentityField(o), "rank 0: the group of w (optimizer 0) lacks lr_mult");
}

TEST(ObservationRules, AParameterInTwoDifferentGroupsIsAConflict) {
  const Scenario s;
  Observation loaded = s.saved;
  GroupObservation other = loaded[0].groups[0];
  other.weight_decay = 0.5;
  loaded[0].groups.push_back(other);
  const std::string d = CheckLoadedClass(s.Case(), loaded, StateClass::kGroups);
  EXPECT_NE(d.find("w is in two different groups"), std::string::npos) << d;
}

}  // namespace
}  // namespace ckptspec
