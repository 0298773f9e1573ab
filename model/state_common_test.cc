#include "model/state_common.h"

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

}  // namespace
}  // namespace ckptspec
