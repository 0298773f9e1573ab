#include "model/observation.h"

#include <gtest/gtest.h>

#include "model/json_util.h"

namespace ckptspec {
namespace {

const char* kRank = R"({
  "iteration": 2,
  "model": {"w": "00000000000000ff", "b": "0000000000000001"},
  "main": {"w": "0000000000000100"},
  "exp_avg": {"w": "0000000000000002"}, "exp_avg_sq": {"w": "0000000000000003"},
  "param_steps": {"w": 2},
  "groups": [{"optimizer": "0", "params": ["w"], "lr": 0.001, "weight_decay": 0.01,
              "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "step": null,
              "wd_mult": 1.0, "is_expert_parallel": false, "is_decoupled_lr": false,
              "max_lr": 0.001, "min_lr": null}],
  "scheduler": {"num_steps": 16, "max_lr": 0.001, "min_lr": 1e-05, "lr_warmup_steps": 0,
                "lr_decay_steps": 1000, "lr_decay_style": "cosine", "start_wd": 0.01,
                "end_wd": 0.01, "wd_incr_steps": 1000, "wd_incr_style": "constant"},
  "rng": "0123456789abcdef", "consumed_samples": 16,
  "rerun": {"mode": "disabled", "state": "NOT_RUNNING_YET", "current_iteration": 2,
            "digest": "fedcba9876543210"}})";

Status Read(const std::string& text, RankObservation* out) {
  nlohmann::json j;
  CKPTSPEC_RETURN_IF_ERROR(ParseJson(text, JsonLimits(), &j));
  return RankObservationFromJson(JsonField(j), out);
}

TEST(Observation, ReadsTheDocumentedForm) {
  RankObservation o;
  ASSERT_TRUE(Read(kRank, &o).ok()) << Read(kRank, &o).ToString();
  EXPECT_EQ(o.iteration, 2);
  EXPECT_EQ(o.copy(Copy::kModel).at("w"), 0xffu);
  EXPECT_TRUE(o.copy(Copy::kOffload).empty());
  ASSERT_EQ(o.groups.size(), 1u);
  const ParamGroupIdentity& id = o.groups[0].identity;
  EXPECT_FALSE(id.Has(IdentityField::kLrMult));  // the group's dict lacks it
  EXPECT_TRUE(id.Has(IdentityField::kMinLr));
  EXPECT_FALSE(id.min_lr.has_value());  // None
  EXPECT_EQ(*id.max_lr, 0.001);
  EXPECT_FALSE(o.groups[0].step.has_value());
  ASSERT_TRUE(o.scheduler.has_value());
  EXPECT_EQ(o.scheduler->num_steps, 16);
  EXPECT_EQ(o.rerun.current_iteration, 2);
  // What ToJson writes reads back the same.
  RankObservation back;
  ASSERT_TRUE(RankObservationFromJson(JsonField(RankObservationToJson(o)), &back).ok());
  EXPECT_EQ(FirstObservationDifference({o}, {back}), "");
}

TEST(Observation, RefusalsNameThePath) {
  RankObservation o;
  std::string text = kRank;
  text.replace(text.find("00000000000000ff"), 16, "xyz");
  EXPECT_EQ(Read(text, &o).message(), "model: \"w\": expected 16 hex digits, got \"xyz\"");
  text = kRank;
  text.replace(text.find("\"params\": [\"w\"]"), 15, "\"params\": [3]");
  EXPECT_EQ(Read(text, &o).message(), "groups[0].params[0]: expected a string, got 3");
  text = kRank;
  text.replace(text.find("\"rng\""), 5, "\"rnd\"");
  EXPECT_EQ(Read(text, &o).message(), "(root): unknown member \"rnd\"");
  text = kRank;
  text.replace(text.find("\"param_steps\": {\"w\": 2}"), 23, "\"param_steps\": {\"w\": -2}");
  EXPECT_EQ(Read(text, &o).message(),
            "param_steps: \"w\": expected a non-negative integer, got -2");
  EXPECT_FALSE(Read("[]", &o).ok());
}

TEST(Observation, DigestsAddOverRanks) {
  RankObservation a, b;
  a.copy(Copy::kModel)["w"] = 5;
  b.copy(Copy::kModel)["w"] = 7;
  b.copy(Copy::kModel)["v"] = 1;
  const Digests sum = GlobalDigests({a, b}, Copy::kModel);
  EXPECT_EQ(sum.at("w"), 12u);
  EXPECT_EQ(sum.at("v"), 1u);
}

TEST(Observation, FirstDifferenceNamesRankAndMember) {
  RankObservation o;
  ASSERT_TRUE(Read(kRank, &o).ok());
  RankObservation p = o;
  p.groups[0].identity.lr_mult = 2.0;
  p.groups[0].identity.absent &= ~(1u << static_cast<int>(IdentityField::kLrMult));
  EXPECT_EQ(FirstObservationDifference({o, o}, {o, p}),
            "rank 1: param group 0 ([w]): lr_mult absent vs present");
  p = o;
  p.copy(Copy::kExpAvg)["w"] = 9;
  EXPECT_EQ(FirstObservationDifference({o}, {p}),
            "rank 0: exp_avg of w: 0000000000000002 vs 0000000000000009");
  p = o;
  p.rerun.current_iteration = 3;
  EXPECT_EQ(FirstObservationDifference({o}, {p}), "rank 0: rerun current_iteration 2 vs 3");
}

}  // namespace
}  // namespace ckptspec
