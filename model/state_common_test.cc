#include "model/state_common.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

ParamGroup GroupDeclaringMaxLr() {
  ParamGroup g;
  g.identity.max_lr = 2e-3;
  g.identity.min_lr = 1e-5;
  g.identity.declares_max_lr = true;
  g.lr = 1e-3;
  g.params = {0, 2};
  return g;
}

TEST(StateCommon, ParamGroupRoundTripKeepsWhichBoundsAreDeclared) {
  const ParamGroup g = GroupDeclaringMaxLr();
  const nlohmann::json j = ParamGroupToJson(g);
  EXPECT_EQ(j["lr_bounds_declared"], nlohmann::json::array({"max_lr"}));
  ParamGroup back;
  ASSERT_TRUE(ParamGroupFromJson(j, &back).ok());
  EXPECT_TRUE(back.identity.declares_max_lr);
  EXPECT_FALSE(back.identity.declares_min_lr);
  EXPECT_TRUE(back.identity.Has(IdentityField::kLrBoundsDeclared));
  EXPECT_EQ(back.identity.max_lr, g.identity.max_lr);
}

TEST(StateCommon, AGroupOfTheOlderFormLacksTheField) {
  nlohmann::json j = ParamGroupToJson(GroupDeclaringMaxLr());
  j.erase("lr_bounds_declared");
  ParamGroup back;
  ASSERT_TRUE(ParamGroupFromJson(j, &back).ok());
  EXPECT_FALSE(back.identity.Has(IdentityField::kLrBoundsDeclared));
  EXPECT_FALSE(back.identity.declares_max_lr);
  EXPECT_FALSE(ParamGroupToJson(back).contains("lr_bounds_declared"));
}

TEST(StateCommon, AMalformedDeclarationIsCorruptionNamingTheField) {
  for (const nlohmann::json& bad :
       {nlohmann::json("max_lr"), nlohmann::json::array({"max_lr", "max_lr"}),
        nlohmann::json::array({"lr"}), nlohmann::json::array({1}),
        nlohmann::json::array({"max_lr", "min_lr", "max_lr"})}) {
    nlohmann::json j = ParamGroupToJson(GroupDeclaringMaxLr());
    j["lr_bounds_declared"] = bad;
    ParamGroup back;
    const Status s = ParamGroupFromJson(j, &back);
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << bad.dump();
    EXPECT_NE(s.message().find("lr_bounds_declared"), std::string::npos) << s.ToString();
  }
}

HeterogeneousLayout TwoModules() {
  ParallelSizes tp2;
  tp2.tp = 2;
  Layout vision, language;
  EXPECT_TRUE(Layout::Make(2, tp2, RankOrder(), &vision).ok());
  EXPECT_TRUE(Layout::Make(4, ParallelSizes(), RankOrder(), &language).ok());
  HeterogeneousLayout layout;
  EXPECT_TRUE(
      HeterogeneousLayout::Make({{"vision", 0, vision}, {"language", 2, language}}, &layout).ok());
  return layout;
}

TEST(StateCommon, ALayoutIsWrittenWithTheLayoutMembersAndReadBack) {
  const HeterogeneousLayout layout = TwoModules();
  const nlohmann::json j = HeterogeneousLayoutToJson(layout);
  EXPECT_EQ(
      j.dump(),
      R"([{"cp":1,"dp":1,"ep":1,"etp":2,"first_rank":0,"name":"vision","order":"tp-cp-ep-dp-pp",)"
      R"("pp":1,"tp":2,"world_size":2},{"cp":1,"dp":4,"ep":1,"etp":1,"first_rank":2,)"
      R"("name":"language","order":"tp-cp-ep-dp-pp","pp":1,"tp":1,"world_size":4}])");
  HeterogeneousLayout back;
  ASSERT_TRUE(HeterogeneousLayoutFromJson(JsonField(j, "parallel_layout"), &back).ok());
  EXPECT_EQ(HeterogeneousLayoutToJson(back), j);
}

TEST(StateCommon, AStoredLayoutNeedsEveryMember) {
  const nlohmann::json good = HeterogeneousLayoutToJson(TwoModules());
  const auto error = [&](const char* member, const nlohmann::json& value) {
    nlohmann::json j = good;
    if (value.is_discarded()) {
      j[1].erase(member);
    } else {
      j[1][member] = value;
    }
    HeterogeneousLayout out;
    const Status s = HeterogeneousLayoutFromJson(JsonField(j, "parallel_layout"), &out);
    EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
    return s.message();
  };
  const nlohmann::json gone(nlohmann::json::value_t::discarded);
  EXPECT_EQ(error("tp", gone), "parallel_layout[1]: missing required member \"tp\"");
  EXPECT_EQ(error("order", gone), "parallel_layout[1]: missing required member \"order\"");
  EXPECT_EQ(error("first_rank", "2"),
            "parallel_layout[1].first_rank: expected an integer, got \"2\"");
  EXPECT_EQ(error("tp", 3).rfind("parallel_layout[1]: ", 0), 0u) << error("tp", 3);
  EXPECT_EQ(error("first_rank", 1).rfind("parallel_layout: ", 0), 0u) << error("first_rank", 1);
}

TEST(StateCommon, BadGroupsAreCorruptionNamingThePath) {
  nlohmann::json subs = SubOptimizersToJson({{"dense", {GroupDeclaringMaxLr()}}});
  std::vector<SubOptimizer> out;
  ASSERT_TRUE(SubOptimizersFromJson(subs, &out).ok());
  subs[0]["param_groups"][0]["betas"] = {0.9};
  Status s = SubOptimizersFromJson(subs, &out);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_EQ(s.message(),
            "optimizer[0].param_groups[0].betas: expected an array of 2 elements, got [0.9]");
  subs[0].erase("name");
  EXPECT_EQ(SubOptimizersFromJson(subs, &out).message(),
            "optimizer[0]: missing required member \"name\"");
}

}  // namespace
}  // namespace ckptspec
