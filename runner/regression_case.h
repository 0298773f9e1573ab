// Kept failures (corpus/regressions/*.json): a scenario written as the RunSpec fields that rebuild
// it and the property to replay on it, independent of the generators (a generator change never
// changes what a file means).
//
// Format (docs/PROPERTIES.md "Replaying and keeping failures"):
//   {"format": "ckptspec-regression/1", "name": ..., "description": ...,
//    "property": "P1" | "P2", "parameters": {"train_before_save": k, "train_after_resume": m,
//                                            "async": bool},
//    "run": {"modules": [{"name", "world_size", "tp", "pp", "dp", "cp", "ep", "etp", "order",
//                         "model": {ModelConfig fields}, "training": {TrainingConfig fields}}],
//            "sharding": {"optimizer_format", "bucket_size", "param_alignment",
//                         "chained_avoid_prefix"}}}
// Modules sit on consecutive rank ranges in file order. A training config's data.dp_size and
// ranks always follow its module's layout, so the file does not hold them. Every field but the
// module sizes may be left out (the struct's default); an unknown field, a wrong type or an
// invalid value is an error naming the field by its JSON path (model/json_fields.h):
// "regression: run.modules[0].model.hidden_size: expected an integer, got \"64\"".
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/run_spec.h"
#include "targets/target_factory.h"

namespace ckptspec {

inline constexpr const char* kRegressionFormat = "ckptspec-regression/1";

struct RegressionCase {
  std::string name;
  std::string description;
  std::string property = "P2";  // "P1" (resume equivalence) or "P2" (round trip)
  int64_t train_before_save = 0;
  int64_t train_after_resume = 1;  // P1 only
  bool async = false;
  RunSpec run;
};

// JSON -> case. InvalidArgument naming the field; the run is validated (InitialStates builds).
Status RegressionCaseFromJson(const nlohmann::json& j, RegressionCase* out);
Status ParseRegressionCase(const std::string& text, RegressionCase* out);
// Case -> JSON (every field written), so a new failure can be kept: RegressionCaseFromJson of the
// result gives the same case.
nlohmann::json RegressionCaseToJson(const RegressionCase& c);

// Replays the case's property on a fresh target from the factory. OK when the property holds;
// otherwise an error whose message is the first difference or the failing call.
Status ReplayRegression(const RegressionCase& c, const TargetFactory& factory);

}  // namespace ckptspec
