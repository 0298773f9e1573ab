#include "model/scheduler.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>

namespace ckptspec {
namespace {

SchedulerConfig Base(LrDecayStyle style) {
  SchedulerConfig c;
  c.init_lr = 0.0;
  c.max_lr = 1.0;
  c.min_lr = 0.1;
  c.lr_warmup_steps = 10;
  c.lr_decay_steps = 110;
  c.lr_decay_style = style;
  return c;
}

TEST(Scheduler, WarmupIsLinearFromInitLr) {
  SchedulerConfig c = Base(LrDecayStyle::kCosine);
  c.init_lr = 0.2;
  EXPECT_DOUBLE_EQ(SchedulerLr(c, 0, 1.0, 0.1), 0.2);
  EXPECT_DOUBLE_EQ(SchedulerLr(c, 5, 1.0, 0.1), 0.6);
  EXPECT_DOUBLE_EQ(SchedulerLr(c, 10, 1.0, 0.1), 1.0);
}

TEST(Scheduler, DecayStyles) {
  EXPECT_DOUBLE_EQ(SchedulerLr(Base(LrDecayStyle::kConstant), 60, 1.0, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(SchedulerLr(Base(LrDecayStyle::kConstant), 500, 1.0, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(SchedulerLr(Base(LrDecayStyle::kLinear), 60, 1.0, 0.1), 0.1 + 0.5 * 0.9);
  EXPECT_DOUBLE_EQ(SchedulerLr(Base(LrDecayStyle::kLinear), 110, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(SchedulerLr(Base(LrDecayStyle::kLinear), 111, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(SchedulerLr(Base(LrDecayStyle::kCosine), 60, 1.0, 0.1), 0.55);
  EXPECT_NEAR(SchedulerLr(Base(LrDecayStyle::kCosine), 35, 1.0, 0.1),
              0.1 + 0.9 * 0.5 * (std::cos(M_PI * 0.25) + 1), 1e-15);
  EXPECT_DOUBLE_EQ(SchedulerLr(Base(LrDecayStyle::kInverseSquareRoot), 40, 1.0, 0.1),
                   std::sqrt(10.0) / std::sqrt(40.0));
  EXPECT_DOUBLE_EQ(SchedulerLr(Base(LrDecayStyle::kInverseSquareRoot), 100, 1.0, 0.5), 0.5);
  SchedulerConfig wsd = Base(LrDecayStyle::kWSD);
  wsd.wsd_decay_steps = 20;
  EXPECT_DOUBLE_EQ(SchedulerLr(wsd, 90, 1.0, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(SchedulerLr(wsd, 100, 1.0, 0.1), 0.1 + 0.5 * 0.9);
}

TEST(Scheduler, WeightDecayIncrements) {
  SchedulerConfig c = Base(LrDecayStyle::kLinear);
  c.start_wd = 0.0;
  c.end_wd = 0.1;
  c.wd_incr_steps = 100;
  c.wd_incr_style = WdIncrStyle::kLinear;
  EXPECT_DOUBLE_EQ(SchedulerWd(c, 25), 0.025);
  EXPECT_DOUBLE_EQ(SchedulerWd(c, 200), 0.1);
  c.wd_incr_style = WdIncrStyle::kCosine;
  EXPECT_NEAR(SchedulerWd(c, 50), 0.05, 1e-15);
  EXPECT_DOUBLE_EQ(SchedulerWd(c, 0), 0.0);
  EXPECT_TRUE(ValidateSchedulerConfig(c).ok());
  c.wd_incr_style = WdIncrStyle::kConstant;
  EXPECT_EQ(ValidateSchedulerConfig(c).code(), Status::Code::kInvalidArgument);
}

TEST(Scheduler, ValidationNamesTheField) {
  SchedulerConfig c = Base(LrDecayStyle::kLinear);
  c.lr_warmup_steps = 110;
  EXPECT_NE(ValidateSchedulerConfig(c).message().find("lr_warmup_steps = 110"), std::string::npos);
  c = Base(LrDecayStyle::kLinear);
  c.min_lr = 2.0;
  EXPECT_NE(ValidateSchedulerConfig(c).message().find("max_lr"), std::string::npos);
}

TEST(Scheduler, PerGroupLrUsesGroupBoundsAndMultipliers) {
  SchedulerState s;
  s.config = Base(LrDecayStyle::kLinear);
  s.num_steps = 60;
  std::vector<ParamGroup> groups(3);
  groups[1].identity.lr_mult = 2.0;
  groups[1].identity.wd_mult = 0.0;
  groups[2].identity.max_lr = 3.0;
  groups[2].identity.min_lr = 1.0;
  ApplySchedule(s, &groups);
  EXPECT_DOUBLE_EQ(groups[0].lr, 0.55);
  EXPECT_DOUBLE_EQ(groups[0].weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(groups[1].lr, 1.1);
  EXPECT_DOUBLE_EQ(groups[1].weight_decay, 0.0);
  EXPECT_DOUBLE_EQ(groups[2].lr, 2.0);
  SchedulerStep(&s, 50, &groups);
  EXPECT_EQ(s.num_steps, 110);
  EXPECT_DOUBLE_EQ(groups[0].lr, 0.1);
}

RC_GTEST_PROP(Scheduler, LrStaysWithinBoundsAfterWarmup, ()) {
  SchedulerConfig c;
  c.lr_decay_style =
      *rc::gen::element(LrDecayStyle::kConstant, LrDecayStyle::kLinear, LrDecayStyle::kCosine,
                        LrDecayStyle::kInverseSquareRoot, LrDecayStyle::kWSD);
  c.lr_decay_steps = *rc::gen::inRange<int64_t>(2, 1000);
  c.lr_warmup_steps = *rc::gen::inRange<int64_t>(0, c.lr_decay_steps);
  c.wsd_decay_steps = *rc::gen::inRange<int64_t>(1, c.lr_decay_steps + 1);
  c.min_lr = *rc::gen::inRange(0, 100) * 1e-4;
  c.max_lr = c.min_lr + *rc::gen::inRange(0, 100) * 1e-4;
  const int64_t n = *rc::gen::inRange<int64_t>(c.lr_warmup_steps + 1, 3000);
  RC_ASSERT(ValidateSchedulerConfig(c).ok());
  const double lr = SchedulerLr(c, n, c.max_lr, c.min_lr);
  RC_LOG() << LrDecayStyleName(c.lr_decay_style) << " n=" << n << " lr=" << lr << "\n";
  RC_ASSERT(lr >= c.min_lr - 1e-15);
  RC_ASSERT(lr <= c.max_lr + 1e-15);
}

TEST(Scheduler, JsonRoundTripAndNamedErrors) {
  SchedulerState s;
  s.config = Base(LrDecayStyle::kInverseSquareRoot);
  s.num_steps = 77;
  const nlohmann::json j = SchedulerStateToJson(s);
  EXPECT_EQ(j.size(), 10u);
  SchedulerState back;
  ASSERT_TRUE(SchedulerStateFromJson(j, s.config, &back).ok());
  EXPECT_EQ(back.config, s.config);
  EXPECT_EQ(back.num_steps, 77);
  nlohmann::json broken = j;
  broken.erase("wd_incr_steps");
  Status st = SchedulerStateFromJson(broken, s.config, &back);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_EQ(st.message(), "opt_param_scheduler: missing required member \"wd_incr_steps\"");
  broken = j;
  broken["lr_decay_style"] = "cosine-ish";
  st = SchedulerStateFromJson(broken, s.config, &back);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_EQ(st.message(), "opt_param_scheduler.lr_decay_style: unknown value \"cosine-ish\"");
  broken = j;
  broken["num_steps"] = -1;
  EXPECT_EQ(SchedulerStateFromJson(broken, s.config, &back).message(),
            "opt_param_scheduler.num_steps: expected a non-negative integer, got -1");
}

TEST(Scheduler, LoadRules) {
  SchedulerState ckpt;
  ckpt.config = Base(LrDecayStyle::kCosine);
  ckpt.num_steps = 64;
  SchedulerConfig args = ckpt.config;
  args.max_lr = 2.0;
  SchedulerState out;
  // Mismatch without a flag: named error.
  Status s = LoadSchedulerState(ckpt, args, false, false, &out);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("max_lr"), std::string::npos) << s.ToString();
  // Override: args win; num_steps from the checkpoint.
  ASSERT_TRUE(LoadSchedulerState(ckpt, args, true, false, &out).ok());
  EXPECT_EQ(out.config.max_lr, 2.0);
  EXPECT_EQ(out.num_steps, 64);
  // use_checkpoint: the checkpoint wins.
  ASSERT_TRUE(LoadSchedulerState(ckpt, args, false, true, &out).ok());
  EXPECT_EQ(out.config.max_lr, 1.0);
  EXPECT_EQ(out.num_steps, 64);
  // Both: error.
  EXPECT_EQ(LoadSchedulerState(ckpt, args, true, true, &out).code(),
            Status::Code::kInvalidArgument);
  // Equal values: fine without flags.
  ASSERT_TRUE(LoadSchedulerState(ckpt, ckpt.config, false, false, &out).ok());
  EXPECT_EQ(out.config, ckpt.config);
}

}  // namespace
}  // namespace ckptspec
