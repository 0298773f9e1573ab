#include "harness/spec_framework.h"

#include <iterator>

namespace ckptspec {

FrameworkSupport SpecFrameworkSupport() {
  FrameworkSupport s;
  s.library = "the specification's own framework (model/)";
  s.max_world_size = 8;
  s.parallelism = {std::begin(kParallelismNames), std::end(kParallelismNames)};
  s.max_modules = 2;
  s.dtypes = {DType::kFloat32, DType::kBFloat16, DType::kFloat16};
  s.model = {std::begin(kModelFeatureNames), std::end(kModelFeatureNames)};
  s.optimizer = {std::begin(kOptimizerFeatureNames), std::end(kOptimizerFeatureNames)};
  s.optimizer_formats = {OptimizerFormat::kFullyReshardable, OptimizerFormat::kDpReshardable};
  s.load_flags = {std::begin(kLoadFlagNames), std::end(kLoadFlagNames)};
  s.rerun_modes = {RerunMode::kDisabled, RerunMode::kValidateResults,
                   RerunMode::kReportDeterminismStats};
  s.signatures = true;
  s.fidelity = {"simulated: the spec's training arithmetic, not a framework's"};
  return s;
}

TargetFactory SpecFrameworkFactory(const TargetFactory& storage) {
  TargetFactory f;
  f.name = storage.name;
  f.capabilities = storage.capabilities;
  f.expect_killed = storage.expect_killed;
  f.framework = SpecFrameworkSupport();
  f.make_framework =
      [storage](const TargetOptions& options) -> std::unique_ptr<FrameworkUnderTest> {
    return std::make_unique<SpecFramework>(storage.make(options));
  };
  return f;
}

}  // namespace ckptspec
