// The load rules of model/load_semantics.h (L1-L9), stated over what a framework adapter observes
// (model/observation.h) instead of over the spec's own training states: a real framework's weights
// are not the spec's, but which state a load must restore, and from where, is the same.
//
// A load is judged from four observations of the same job family: `saved` (every rank right after
// the save), `fresh` (every rank of the loading process after its build, before the load) and
// `loaded` (right after the load), with the two jobs and the flags. Each state class is expected
// to equal what the rule names ("the saved" / "the fresh" ones), or a value the spec computes:
//
// | class      | rule | expected after the load                                                |
// |------------|------|------------------------------------------------------------------------|
// | iteration  | L2   | 0 under finetune, else the saved one, on every rank                    |
// | model      | L1   | every parameter's digest summed over ranks is the saved one (under an  |
// |            |      | unchanged layout also rank by rank)                                    |
// | copies     | L3,L4| with the optimizer loaded, every main and offload copy holds the saved |
// |            |      | master value (the offload copy where one was saved, else the main copy,|
// |            |      | else the model weight); without it, the loaded model weight (L4); the  |
// |            |      | parameters with such copies are the fresh ones                         |
// | optimizer  | L3   | with the optimizer loaded Adam's moments (summed) and per-parameter    |
// |            |      | steps are the saved ones, else the fresh ones                          |
// | groups     | L3,L6| per parameter, its group's fields: with the optimizer loaded the saved |
// |            |      | identity, betas, eps and step, the LR bounds per L6 (under             |
// |            |      | override_scheduler the job's declared bounds, else the new scheduler's;|
// |            |      | otherwise the saved ones), lr and weight_decay recomputed from the     |
// |            |      | expected scheduler at its num_steps (x lr_mult, x wd_mult); without it |
// |            |      | the fresh group's                                                      |
// | scheduler  | L5   | with the optimizer loaded: num_steps saved, the fields the job's under |
// |            |      | override_scheduler, the saved ones under use_checkpoint_scheduler,     |
// |            |      | else the job's; without it the fresh scheduler                         |
// | rng        | L7   | where L7 loads RNG (not finetune or no_load_rng, TP and PP unchanged)  |
// |            |      | the saved RNG of the rank MatchRngRank picks, else the fresh rank's    |
// | data       | L9   | consumed_samples the saved one unless finetune, else the fresh one     |
// | rerun      | L8   | where L8 loads it (not finetune, a rerun mode, world, TP, PP and DP of |
// |            |      | the module and the run unchanged) each rank's saved machine, else the  |
// |            |      | fresh one                                                              |
//
// lr and weight_decay are compared within a relative 1e-12 (both sides compute the scheduler in
// double, possibly in another order); everything else exactly.
//
// Contracts: the functions never throw; a message names the class, the rank or parameter, and
// both values ("groups: output_layer.weight: max_lr 0.0003 vs expected 3e-05 (override_scheduler:
// the job's scheduler)"). Whether the load may happen at all is not judged here (the spec's twin
// says: properties/framework_pair.h).
#pragma once

#include <string>
#include <vector>

#include "model/framework_job.h"
#include "model/load_semantics.h"
#include "model/observation.h"

namespace ckptspec {

enum class StateClass {
  kIteration,
  kModel,
  kCopies,
  kOptimizer,
  kGroups,
  kScheduler,
  kRng,
  kData,
  kRerun
};
inline constexpr StateClass kStateClasses[] = {
    StateClass::kIteration, StateClass::kModel,  StateClass::kCopies,
    StateClass::kOptimizer, StateClass::kGroups, StateClass::kScheduler,
    StateClass::kRng,       StateClass::kData,   StateClass::kRerun};
const char* StateClassName(StateClass c);  // "iteration", "model", ...

struct LoadCase {
  const FrameworkJob& saved_job;
  const Observation& saved;  // every rank, right after the save
  const FrameworkJob& job;   // the loading job
  const Observation& fresh;  // every rank of the loading process after build, before the load
  LoadFlags flags;
};

// The first difference of class `c` between `loaded` and the rule's expectation, prefixed by the
// class's name; "" when as expected. Precondition: the observations have their jobs' world sizes.
std::string CheckLoadedClass(const LoadCase& load, const Observation& loaded, StateClass c);
// Every class in kStateClasses order; the first difference.
std::string CheckLoaded(const LoadCase& load, const Observation& loaded);

// Independent of any load: every rank's param groups follow its scheduler (lr = the scheduler's
// lr at num_steps for the group's bounds, None meaning the scheduler's, x lr_mult; weight_decay
// likewise x wd_mult), with init_lr and the WSD fields, which are not observed, from `job`.
// "" when they do, else the first group that does not.
std::string CheckGroupsFollowScheduler(const FrameworkJob& job, const Observation& observation);

// Independent of any load: the identity fields every group must carry (the core key of
// param_groups.h: wd_mult, lr_mult, is_expert_parallel, is_decoupled_lr): "" when every group of
// every rank has them, else the first group that lacks one.
std::string MissingIdentityField(const Observation& observation);

}  // namespace ckptspec
