// What a framework adapter can be asked to build and do: the "framework" member of its hello
// (docs/PROTOCOL.md, "Framework adapters"). The generators draw jobs and loads inside it
// (generators/framework_job_gen.h); CheckJobSupported says whether a job is.
//
// Contract: FrameworkSupportFromJson reads the documented member from an untrusted reply and never
// throws: a missing member, a wrong type, an unknown name in a list or a value out of range is an
// InvalidArgument naming its JSON path. FrameworkSupportToJson writes what FromJson reads.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/dtype.h"
#include "model/framework_job.h"
#include "model/json_fields.h"
#include "model/load_semantics.h"
#include "model/status.h"

namespace ckptspec {

// The names each list of the member may hold.
inline constexpr const char* kParallelismNames[] = {"tp", "pp", "cp", "ep"};
inline constexpr const char* kModelFeatureNames[] = {
    "gated_linear_unit", "add_bias", "untied_embeddings", "query_groups", "moe", "pipeline_split"};
inline constexpr const char* kOptimizerFeatureNames[] = {"distributed", "cpu_offload",  "lr_mult",
                                                         "lr_bounds",   "decoupled_lr", "frozen"};
inline constexpr const char* kLoadFlagNames[] = {"finetune", "no_load_optim", "no_load_rng",
                                                 "override_scheduler", "use_checkpoint_scheduler"};
inline constexpr int kMaxFrameworkWorld = 64;

struct FrameworkSupport {
  std::string library;
  int max_world_size = 1;
  std::set<std::string> parallelism;  // of kParallelismNames
  int max_modules = 1;
  std::vector<DType> dtypes;
  std::set<std::string> model;      // of kModelFeatureNames
  std::set<std::string> optimizer;  // of kOptimizerFeatureNames
  std::vector<OptimizerFormat> optimizer_formats;
  std::set<std::string> load_flags;  // of kLoadFlagNames
  std::vector<RerunMode> rerun_modes;
  bool signatures = false;
  std::vector<std::string> options;  // boolean job options, by name
  std::vector<std::string> fidelity;

  bool Has(const std::set<std::string>& list, const std::string& name) const {
    return list.count(name) > 0;
  }
};

Status FrameworkSupportFromJson(const JsonField& f, FrameworkSupport* out);
nlohmann::json FrameworkSupportToJson(const FrameworkSupport& support);

// OK when the adapter declared everything `job` uses; else NotSupported naming the first thing
// it lacks.
Status CheckJobSupported(const FrameworkSupport& support, const FrameworkJob& job);
// The same for the flags of a load.
Status CheckLoadFlagsSupported(const FrameworkSupport& support, const LoadFlags& flags);

// The load flags by their protocol names (kLoadFlagNames), and back.
nlohmann::json LoadFlagsToJson(const LoadFlags& flags);
Status LoadFlagsFromJson(const JsonField& f, LoadFlags* out);

}  // namespace ckptspec
