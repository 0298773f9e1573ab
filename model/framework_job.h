// A framework job: the training job ckptspec asks a framework adapter to build (docs/PROTOCOL.md,
// "Framework adapters", build), its JSON form, and the spec's run for it.
//
// A job says what a user of a training framework says on its command line: the modules with their
// parallel layouts and models, which parameters are frozen, the optimizer with its per-parameter
// overrides, the scheduler, the batch size, the rerun mode, and the checkpoint options. It says
// nothing about how the framework keeps its state (step counters, chaining, RNG streams): that is
// the framework's, observed afterwards (model/observation.h).
//
// Contracts:
//  - ValidateFrameworkJob: named errors (InvalidArgument) for a job no framework could build:
//    no modules, a layout its model does not fit, a global batch not divisible by a module's DP
//    size, an invalid scheduler, an offload fraction outside [0, 1], dp_reshardable without the
//    distributed optimizer, an empty frozen pattern, a job the spec's run does not build.
//  - FrameworkJobFromJson reads the documented form and validates; FrameworkJobToJson writes
//    every member, and reading it back gives the same job.
//  - JobRunSpec: the run the specification simulates for the job (Megatron's freezing family and
//    param grouping, a per-parameter step counter, dense and expert sub-optimizers for a model with
//    experts, the global sampler, RNG sharded as Megatron-LM saves it).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_fields.h"
#include "model/layout.h"
#include "model/model_config.h"
#include "model/param_groups.h"
#include "model/rerun_state_machine.h"
#include "model/run_spec.h"
#include "model/scheduler.h"
#include "model/state_sharding.h"
#include "model/status.h"

namespace ckptspec {

struct FrameworkModule {
  std::string name;  // empty for a single-module job; prefixes the module's parameter names
  Layout layout;     // its world_size() is the module's rank count
  ModelConfig model;
};

struct FrameworkOptimizer {
  bool distributed = true;  // the distributed optimizer (its state sharded over DP ranks)
  // Adam's hyper-parameters, lr_mult and LR-bound overrides, decoupled LR (param_groups.h).
  GroupingConfig grouping;
  double cpu_offload_fraction = 0.0;
  OptimizerFormat format = OptimizerFormat::kFullyReshardable;
};

struct FrameworkJob {
  uint64_t seed = 1;
  std::vector<FrameworkModule> modules;  // on consecutive rank ranges, in order
  // A parameter whose name contains one of these does not train, from the start.
  std::vector<std::string> frozen;
  FrameworkOptimizer optimizer;
  SchedulerConfig scheduler;
  int64_t global_batch_size = 8;  // samples per iteration
  RerunMode rerun_mode = RerunMode::kDisabled;
  bool assume_constant_structure = false;
  std::map<std::string, bool> options;  // the framework's own, as its hello declared them

  int64_t world_size() const;
};

// The modules' layouts on consecutive rank ranges. Precondition: ValidateFrameworkJob passed.
HeterogeneousLayout JobLayout(const FrameworkJob& job);

Status ValidateFrameworkJob(const FrameworkJob& job);

nlohmann::json FrameworkJobToJson(const FrameworkJob& job);
Status FrameworkJobFromJson(const JsonField& f, FrameworkJob* out);

// The specification's run for the job (see the contract above). Errors: ValidateFrameworkJob's.
Status JobRunSpec(const FrameworkJob& job, RunSpec* out);

// Whether the parameter called `name` is frozen in `job`.
bool IsFrozen(const FrameworkJob& job, const std::string& name);

// Multi-line, for scenarios: per module its ranks, layout and model; then the rest.
std::string DescribeJob(const FrameworkJob& job);

}  // namespace ckptspec
