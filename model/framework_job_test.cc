#include "model/framework_job.h"

#include <gtest/gtest.h>

#include "model/json_util.h"

namespace ckptspec {
namespace {

FrameworkJob SmallJob() {
  FrameworkJob job;
  FrameworkModule m;
  EXPECT_TRUE(Layout::Make(2, ParallelSizes{2, 1, 0, 1, 1, 0}, RankOrder(), &m.layout).ok());
  m.model.num_layers = 2;
  m.model.hidden_size = 32;
  m.model.num_attention_heads = 4;
  m.model.vocab_size = 64;
  job.modules.push_back(m);
  job.global_batch_size = 4;
  job.frozen = {"word_embeddings"};
  job.optimizer.grouping.lr_mult_overrides = {{"output_layer", 2.0}};
  job.optimizer.grouping.lr_bound_overrides = {{"linear_fc1", 3e-3, 3e-4}};
  job.options["bridge_post_load_sync"] = true;
  return job;
}

Status FromText(const std::string& text, FrameworkJob* job) {
  nlohmann::json j;
  CKPTSPEC_RETURN_IF_ERROR(ParseJson(text, JsonLimits(), &j));
  return FrameworkJobFromJson(JsonField(j), job);
}

TEST(FrameworkJob, JsonRoundTrip) {
  const FrameworkJob job = SmallJob();
  ASSERT_TRUE(ValidateFrameworkJob(job).ok()) << ValidateFrameworkJob(job).ToString();
  const nlohmann::json j = FrameworkJobToJson(job);
  FrameworkJob back;
  ASSERT_TRUE(FrameworkJobFromJson(JsonField(j), &back).ok());
  EXPECT_EQ(FrameworkJobToJson(back), j);
  EXPECT_EQ(back.modules[0].layout.tp(), 2);
  EXPECT_EQ(back.options.at("bridge_post_load_sync"), true);
}

TEST(FrameworkJob, TheSpecsRunFreezesByPattern) {
  RunSpec run;
  ASSERT_TRUE(JobRunSpec(SmallJob(), &run).ok());
  ASSERT_EQ(run.configs.size(), 1u);
  ASSERT_FALSE(run.configs[0].frozen.empty());
  for (const std::string& name : run.configs[0].frozen) {
    EXPECT_NE(name.find("word_embeddings"), std::string::npos) << name;
  }
  EXPECT_EQ(run.configs[0].data.global_batch_size, 4);
  EXPECT_EQ(run.configs[0].data.dp_size, 1);
}

TEST(FrameworkJob, InvalidJobsAreNamed) {
  FrameworkJob job = SmallJob();
  job.global_batch_size = 3;
  job.modules[0].layout = Layout();  // world 1, dp 1: fine for the batch, the model fits
  EXPECT_TRUE(ValidateFrameworkJob(job).ok());
  ASSERT_TRUE(
      Layout::Make(2, ParallelSizes{1, 1, 0, 1, 1, 0}, RankOrder(), &job.modules[0].layout).ok());
  EXPECT_NE(ValidateFrameworkJob(job).message().find("not divisible by its DP size 2"),
            std::string::npos);
  job = SmallJob();
  job.optimizer.distributed = false;
  job.optimizer.format = OptimizerFormat::kDpReshardable;
  EXPECT_NE(ValidateFrameworkJob(job).message().find("needs the distributed optimizer"),
            std::string::npos);
  job = SmallJob();
  job.frozen = {""};
  EXPECT_NE(ValidateFrameworkJob(job).message().find("empty pattern"), std::string::npos);
  job = SmallJob();
  job.modules[0].model.num_attention_heads = 3;
  EXPECT_FALSE(ValidateFrameworkJob(job).ok());
  job = SmallJob();
  job.modules.clear();
  EXPECT_EQ(ValidateFrameworkJob(job).message(), "job: no modules");
}

TEST(FrameworkJob, ReadingNamesTheField) {
  FrameworkJob job;
  Status s = FromText(R"({"modules": [{"world_size": 1, "model": {"hidden_size": "x"}}]})", &job);
  EXPECT_EQ(s.message(), "modules[0].model.hidden_size: expected an integer, got \"x\"");
  s = FromText(R"({"modules": [], "optimiser": {}})", &job);
  EXPECT_EQ(s.message(), "(root): unknown member \"optimiser\"");
  s = FromText(R"({"modules": [{"world_size": 1, "model": {}}], "options": {"x": 1}})", &job);
  EXPECT_EQ(s.message(), "options: option \"x\": expected a boolean, got 1");
  s = FromText(R"({"modules": [{"world_size": 1, "model": {"name": "m"}}]})", &job);
  EXPECT_EQ(s.message(), "modules[0].model: the module names the model");
  s = FromText(R"({"modules": [{"world_size": 1, "tp": 2, "model": {}}]})", &job);
  EXPECT_NE(s.message().find("modules[0]:"), std::string::npos) << s.message();
}

TEST(FrameworkJob, DescribesItself) {
  const std::string d = DescribeJob(SmallJob());
  EXPECT_NE(d.find("tp2"), std::string::npos) << d;
  EXPECT_NE(d.find("lr_mult 2 for *output_layer*"), std::string::npos) << d;
  EXPECT_NE(d.find("frozen: *word_embeddings*"), std::string::npos) << d;
  EXPECT_NE(d.find("bridge_post_load_sync=on"), std::string::npos) << d;
}

}  // namespace
}  // namespace ckptspec
