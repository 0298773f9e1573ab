#include "model/param_groups.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>

namespace ckptspec {
namespace {

ModelConfig MoeConfig() {
  ModelConfig c;
  c.num_layers = 2;
  c.hidden_size = 8;
  c.num_attention_heads = 2;
  c.vocab_size = 16;
  c.num_experts = 2;
  c.tie_embeddings = false;
  return c;
}

TEST(ParamGroups, DefaultGroupingSplitsByWeightDecayExpertAndLrMult) {
  const auto params = ModelParameters(MoeConfig());
  GroupingConfig g;
  g.lr_mult_overrides.push_back({"router", 2.0});
  const auto groups =
      DefaultParamGroups(params, std::vector<bool>(params.size(), false), g, 1e-3, 1e-5);
  // dense wd, dense no-wd, router (lr_mult 2), expert wd.
  ASSERT_EQ(groups.size(), 4u);
  size_t total = 0;
  for (const ParamGroup& grp : groups) {
    total += grp.params.size();
    for (int i : grp.params) {
      EXPECT_EQ(grp.identity.wd_mult, params[i].no_weight_decay ? 0.0 : 1.0) << params[i].name;
      EXPECT_EQ(grp.identity.is_expert_parallel, params[i].is_expert()) << params[i].name;
      const bool router = params[i].name.find("router") != std::string::npos;
      EXPECT_EQ(grp.identity.lr_mult, router ? 2.0 : 1.0) << params[i].name;
    }
    EXPECT_EQ(grp.identity.max_lr, 1e-3);
    EXPECT_EQ(grp.identity.min_lr, 1e-5);
  }
  EXPECT_EQ(total, params.size());
}

TEST(ParamGroups, FrozenParametersAreInNoGroupAndDecoupledLrSetsBounds) {
  const auto params = ModelParameters(MoeConfig());
  std::vector<bool> frozen(params.size(), false);
  frozen[1] = true;
  GroupingConfig g;
  g.decoupled_lr = 5e-3;
  const auto groups = DefaultParamGroups(params, frozen, g, 1e-3, 1e-5);
  bool saw_decoupled = false;
  for (const ParamGroup& grp : groups) {
    EXPECT_EQ(std::count(grp.params.begin(), grp.params.end(), 1), 0);
    if (grp.identity.is_decoupled_lr) {
      saw_decoupled = true;
      EXPECT_EQ(grp.identity.max_lr, 5e-3);
      EXPECT_EQ(grp.identity.min_lr, 1e-5);
      for (int i : grp.params) {
        EXPECT_TRUE(params[i].placement == ParamPlacement::kEmbedding ||
                    params[i].name.find("output_layer") != std::string::npos);
      }
    }
  }
  EXPECT_TRUE(saw_decoupled);
}

std::vector<ParamGroupIdentity> FourIdentities() {
  std::vector<ParamGroupIdentity> ids(4);
  ids[1].wd_mult = 0.0;
  ids[2].is_expert_parallel = true;
  ids[3].lr_mult = 0.5;
  return ids;
}

RC_GTEST_PROP(ParamGroups, MatchingIsByIdentityIndependentOfOrder, ()) {
  const auto saved = FourIdentities();
  // A random permutation of the current groups.
  std::vector<int> p = {0, 1, 2, 3};
  const int swaps = *rc::gen::inRange(0, 8);
  for (int s = 0; s < swaps; ++s) {
    const int a = *rc::gen::inRange(0, 4), b = *rc::gen::inRange(0, 4);
    std::swap(p[a], p[b]);
  }
  std::vector<ParamGroupIdentity> current;
  for (int i : p) current.push_back(saved[i]);
  RC_LOG() << "current order: " << p[0] << p[1] << p[2] << p[3] << "\n";
  std::vector<int> match;
  const Status s = MatchParamGroups(saved, current, IdentityKeySet::kCore, &match);
  RC_ASSERT(s.ok());
  for (size_t c = 0; c < current.size(); ++c) RC_ASSERT(match[c] == p[c]);
}

TEST(ParamGroups, MissingLrMultIsANamedErrorOnEitherSide) {  // B01
  auto saved = FourIdentities();
  auto current = saved;
  current[3].Remove(IdentityField::kLrMult);
  std::vector<int> match;
  Status s = MatchParamGroups(saved, current, IdentityKeySet::kCore, &match);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("current param group 3 lacks identifier key 'lr_mult'"),
            std::string::npos)
      << s.ToString();
  s = MatchParamGroups(current, saved, IdentityKeySet::kCore, &match);
  EXPECT_NE(s.message().find("saved param group 3 lacks identifier key 'lr_mult'"),
            std::string::npos)
      << s.ToString();
}

TEST(ParamGroups, DuplicateIdentitiesAreAnErrorNotASilentMerge) {
  auto saved = FourIdentities();
  saved[3] = saved[0];
  std::vector<int> match;
  Status s = MatchParamGroups(saved, FourIdentities(), IdentityKeySet::kCore, &match);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("saved param groups 0 and 3 share the identity"), std::string::npos)
      << s.ToString();
  s = MatchParamGroups(FourIdentities(), saved, IdentityKeySet::kCore, &match);
  EXPECT_NE(s.message().find("current param groups 0 and 3"), std::string::npos) << s.ToString();
}

TEST(ParamGroups, UnmatchedGroupsOnEitherSideAreNamed) {
  auto saved = FourIdentities();
  auto current = saved;
  current[2].lr_mult = 3.0;
  std::vector<int> match;
  Status s = MatchParamGroups(saved, current, IdentityKeySet::kCore, &match);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("current param group 2"), std::string::npos) << s.ToString();
  current = saved;
  current.pop_back();
  s = MatchParamGroups(saved, current, IdentityKeySet::kCore, &match);
  EXPECT_NE(s.message().find("saved param group 3"), std::string::npos) << s.ToString();
}

// L3 drops the saved groups whose parameters are all frozen now before it matches, and the
// indexes it gives back are the saved list's, not the list left after the drop.
TEST(ParamGroups, SavedGroupsOfFrozenParametersAreDroppedBeforeTheMatch) {
  std::vector<ParamGroup> saved(4), current;
  const auto ids = FourIdentities();
  for (int g = 0; g < 4; ++g) {
    saved[g].identity = ids[g];
    saved[g].params = {2 * g, 2 * g + 1};
  }
  for (int g : {3, 0, 1}) current.push_back(saved[g]);  // group 2's parameters are frozen now
  std::vector<bool> frozen_now(8, false);
  frozen_now[4] = frozen_now[5] = true;
  std::vector<int> match;
  IdentityKeySet key_set = IdentityKeySet::kWithLrBounds;
  ASSERT_TRUE(MatchSavedParamGroups(saved, current, frozen_now, false, &match, &key_set).ok());
  EXPECT_EQ(match, (std::vector<int>{3, 0, 1}));
  // One parameter of the group trainable: the group stays, and has no current group.
  frozen_now[5] = false;
  Status s = MatchSavedParamGroups(saved, current, frozen_now, false, &match, &key_set);
  EXPECT_NE(s.message().find("saved param group 2"), std::string::npos) << s.ToString();
  // torch.optim's groups hold frozen parameters too: none is dropped.
  frozen_now[5] = true;
  s = MatchSavedParamGroups(saved, current, frozen_now, true, &match, &key_set);
  EXPECT_NE(s.message().find("saved param group 2"), std::string::npos) << s.ToString();
}

TEST(ParamGroups, OnlyDeclaredLrBoundsAreIdentityAndOnlyInTheNewerKeySet) {
  auto saved = FourIdentities();
  auto current = saved;
  for (auto& id : saved) id.max_lr = 1e-3;
  for (auto& id : current) id.max_lr = 2e-3;
  std::vector<int> match;
  // Undeclared bounds are the scheduler's: they may change without changing any key.
  EXPECT_TRUE(MatchParamGroups(saved, current, IdentityKeySet::kCore, &match).ok());
  EXPECT_TRUE(MatchParamGroups(saved, current, IdentityKeySet::kWithLrBounds, &match).ok());
  // A declared bound is identity in the newer key set only.
  saved[1].declares_max_lr = current[1].declares_max_lr = true;
  EXPECT_TRUE(MatchParamGroups(saved, current, IdentityKeySet::kCore, &match).ok());
  const Status s = MatchParamGroups(saved, current, IdentityKeySet::kWithLrBounds, &match);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_NE(s.message().find("max_lr=0.002"), std::string::npos) << s.ToString();
  current = saved;
  current[0].Remove(IdentityField::kMinLr);
  EXPECT_TRUE(MatchParamGroups(saved, current, IdentityKeySet::kCore, &match).ok());
  EXPECT_EQ(MatchParamGroups(saved, current, IdentityKeySet::kWithLrBounds, &match).code(),
            Status::Code::kNotFound);
  current = saved;
  current[2].declares_min_lr = true;
  current[2].min_lr.reset();
  EXPECT_EQ(MatchParamGroups(saved, current, IdentityKeySet::kWithLrBounds, &match).code(),
            Status::Code::kInvalidArgument);
}

TEST(ParamGroups, GroupsDifferingOnlyInDeclaredBoundsAreDistinctInTheNewerKeyOnly) {
  const auto params = ModelParameters(MoeConfig());
  GroupingConfig g;
  g.lr_bound_overrides.push_back({"mlp.linear_fc1", 4e-3, std::nullopt});
  g.lr_bound_overrides.push_back({"self_attention", 2e-3, 0.0});
  const auto groups =
      DefaultParamGroups(params, std::vector<bool>(params.size(), false), g, 1e-3, 1e-5);
  int bounded = 0;
  for (const ParamGroup& grp : groups) {
    for (int i : grp.params) {
      const bool fc1 = params[i].name.find("mlp.linear_fc1") != std::string::npos;
      const bool attention = params[i].name.find("self_attention") != std::string::npos;
      EXPECT_EQ(*grp.identity.max_lr, fc1 ? 4e-3 : attention ? 2e-3 : 1e-3) << params[i].name;
      EXPECT_EQ(*grp.identity.min_lr, attention ? 0.0 : 1e-5) << params[i].name;
      EXPECT_EQ(grp.identity.declares_max_lr, fc1 || attention) << params[i].name;
      EXPECT_EQ(grp.identity.declares_min_lr, attention) << params[i].name;
    }
    bounded += grp.identity.declares_max_lr;
  }
  EXPECT_GE(bounded, 2);
  std::vector<int> match;
  const auto ids = Identities(groups);
  ASSERT_TRUE(MatchParamGroups(ids, ids, IdentityKeySet::kWithLrBounds, &match).ok());
  for (size_t c = 0; c < match.size(); ++c) EXPECT_EQ(match[c], static_cast<int>(c));
  // The older key cannot tell them apart: refused, never merged.
  const Status s = MatchParamGroups(ids, ids, IdentityKeySet::kCore, &match);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("share the identity"), std::string::npos) << s.ToString();
}

TEST(ParamGroups, TheSavedGroupsTellTheKeyVersion) {
  auto ids = FourIdentities();
  IdentityKeySet set = IdentityKeySet::kCore;
  ASSERT_TRUE(KeySetOfSavedGroups(ids, &set).ok());
  EXPECT_EQ(set, IdentityKeySet::kWithLrBounds);
  ASSERT_TRUE(KeySetOfSavedGroups({}, &set).ok());
  EXPECT_EQ(set, IdentityKeySet::kCore);
  for (auto& id : ids) id.Remove(IdentityField::kLrBoundsDeclared);
  ASSERT_TRUE(KeySetOfSavedGroups(ids, &set).ok());
  EXPECT_EQ(set, IdentityKeySet::kCore);
  // A mix is refused, whichever form comes first.
  for (size_t older : {size_t{0}, size_t{3}}) {
    auto mixed = FourIdentities();
    mixed[older].Remove(IdentityField::kLrBoundsDeclared);
    const Status s = KeySetOfSavedGroups(mixed, &set);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
    EXPECT_NE(s.message().find("saved param group " + std::to_string(older) +
                               " lacks identifier key 'lr_bounds_declared'"),
              std::string::npos)
        << s.ToString();
  }
}

TEST(ParamGroups, GroupsDifferingOnlyInLrBoundsAreDetected) {
  auto ids = FourIdentities();
  EXPECT_FALSE(SomeGroupsDifferOnlyInLrBounds(ids));
  ids.push_back(ids[1]);
  EXPECT_FALSE(SomeGroupsDifferOnlyInLrBounds(ids));  // a duplicate, not a bound-only difference
  ids.back().declares_max_lr = true;
  ids.back().max_lr = 3e-3;
  EXPECT_TRUE(SomeGroupsDifferOnlyInLrBounds(ids));
  ids.back().lr_mult = 7.0;
  EXPECT_FALSE(SomeGroupsDifferOnlyInLrBounds(ids));
}

}  // namespace
}  // namespace ckptspec
