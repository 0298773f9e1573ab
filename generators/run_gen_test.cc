#include "generators/run_gen.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace ckptspec {
namespace {

// A resume's precisions: a changed params dtype is always another one than the saved module's, a
// changed moment dtype the other of fp32 and bf16; the layout and everything else stay; the
// configs stay valid and their states build.
RC_GTEST_PROP(RunGen, ResumePrecisionChangesOnlyDtypes, ()) {
  RunSpec saved = *gen::RunUpTo(8);
  saved = gen::WithMomentDtype(saved, *rc::gen::element(DType::kFloat32, DType::kBFloat16));
  const RunSpec resume = *gen::ResumeRunFor(saved, 8, true);
  const RunSpec changed = *gen::ResumePrecision(saved, resume);
  RC_ASSERT(changed.configs.size() == saved.configs.size());
  RC_ASSERT(DescribeRun(changed).size() > 0 &&
            changed.layout.world_size() == resume.layout.world_size());
  bool params = false, moments = false;
  for (size_t m = 0; m < changed.configs.size(); ++m) {
    const TrainingConfig& c = changed.configs[m];
    const TrainingConfig& was = saved.configs[m];
    TrainingConfig same_dtypes = c;
    same_dtypes.model.params_dtype = resume.configs[m].model.params_dtype;
    same_dtypes.optimizer.moment_dtype = resume.configs[m].optimizer.moment_dtype;
    RC_ASSERT(DescribeRun(RunSpec{changed.layout, {same_dtypes}, changed.sharding}) ==
              DescribeRun(RunSpec{resume.layout, {resume.configs[m]}, resume.sharding}));
    if (c.model.params_dtype != resume.configs[m].model.params_dtype) {
      params = true;
      RC_ASSERT(c.model.params_dtype != was.model.params_dtype);
    }
    if (c.optimizer.moment_dtype != resume.configs[m].optimizer.moment_dtype) {
      moments = true;
      RC_ASSERT(c.optimizer.moment_dtype != was.optimizer.moment_dtype);
    }
    RC_ASSERT(ValidateTrainingConfig(c).ok());
  }
  RC_CLASSIFY(params, "params dtype changed");
  RC_CLASSIFY(moments, "moment dtype changed");
  std::vector<TrainingState> states;
  RC_ASSERT(InitialStates(changed, &states).ok());
}

// Each kind of change is drawn at every size, size 0 included.
TEST(RunGen, ResumePrecisionDrawsEveryKindAtSmallSizes) {
  RunSpec saved;
  saved.layout = HeterogeneousLayout::Single(Layout());
  saved.configs.push_back(TrainingConfig());
  int params = 0, moments = 0, both = 0, none = 0;
  const int draws = 400;
  for (int seed = 0; seed < draws; ++seed) {
    const RunSpec r = gen::ResumePrecision(saved, saved)(rc::Random(seed), 0).value();
    const bool p = r.configs[0].model.params_dtype != saved.configs[0].model.params_dtype;
    const bool m = r.configs[0].optimizer.moment_dtype != saved.configs[0].optimizer.moment_dtype;
    params += p && !m;
    moments += m && !p;
    both += p && m;
    none += !p && !m;
  }
  // An eighth each (50 of 400 expected), and the rest unchanged.
  EXPECT_GT(params, draws / 16);
  EXPECT_GT(moments, draws / 16);
  EXPECT_GT(both, draws / 16);
  EXPECT_GT(none, draws / 2);
}

}  // namespace
}  // namespace ckptspec
