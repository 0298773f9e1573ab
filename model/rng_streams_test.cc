#include "model/rng_streams.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace ckptspec {
namespace {

TEST(RngStreams, MegatronSeeds) {
  RankCoords c;
  c.tp = 3;
  c.pp = 2;
  c.dp = 5;
  c.ep = 1;
  c.etp = 4;
  const RankRngState r = InitialRankRng(1234, c, false);
  EXPECT_EQ(r.streams.at("random").seed, 1434u);
  EXPECT_EQ(r.streams.at("cuda").seed, 1434u);
  EXPECT_EQ(r.trackers.at(kDataParallelTracker).seed, 1434u);
  EXPECT_EQ(r.trackers.at(kModelParallelTracker).seed, 1434u + 2718u + 3u);
  EXPECT_EQ(r.trackers.at(kExpertParallelTracker).seed, 1434u + 1024u + 100u + 4u);
  const RankRngState d = InitialRankRng(1234, c, true);
  EXPECT_EQ(d.streams.at("torch").seed, 1434u + 50u);
}

TEST(RngStreams, DpRanksShareStateUnlessDataParallelRandomInit) {
  RankCoords a, b;
  b.dp = 1;
  b.cp = 1;
  EXPECT_EQ(InitialRankRng(9, a, false), InitialRankRng(9, b, false));
  EXPECT_NE(InitialRankRng(9, a, true), InitialRankRng(9, b, true));
  RankCoords t;
  t.tp = 1;
  EXPECT_NE(InitialRankRng(9, a, false), InitialRankRng(9, t, false));
}

TEST(RngStreams, DrawAdvancesOneStream) {
  RankRngState r = InitialRankRng(1, RankCoords{}, false);
  uint64_t x, y;
  ASSERT_TRUE(Draw(&r, "numpy", &x).ok());
  ASSERT_TRUE(Draw(&r, "numpy", &y).ok());
  EXPECT_NE(x, y);
  EXPECT_EQ(r.streams.at("numpy").counter, 2u);
  EXPECT_EQ(r.streams.at("random").counter, 0u);
  EXPECT_EQ(Draw(&r, "nope", &x).code(), Status::Code::kNotFound);
  // Same seed, different stream names: different values.
  EXPECT_NE(PeekDraw("random", r.streams.at("random")), PeekDraw("torch", r.streams.at("torch")));
}

RC_GTEST_PROP(RngStreams, JsonRoundTripPreservesFutureDraws, ()) {
  RankCoords c;
  c.tp = *rc::gen::inRange(0, 8);
  c.pp = *rc::gen::inRange(0, 8);
  c.ep = *rc::gen::inRange(0, 8);
  RankRngState r = InitialRankRng(*rc::gen::inRange<uint64_t>(1, 1u << 30), c, false);
  AdvanceAll(&r, *rc::gen::inRange<uint64_t>(0, 100));
  RankRngState back;
  RC_ASSERT(RankRngStateFromJson(RankRngStateToJson(r), &back).ok());
  RC_ASSERT(back == r);
  uint64_t a, b;
  RC_ASSERT(Draw(&r, kModelParallelTracker, &a).ok());
  RC_ASSERT(Draw(&back, kModelParallelTracker, &b).ok());
  RC_ASSERT(a == b);
}

TEST(RngStreams, MalformedJsonIsNamed) {
  nlohmann::json j = RankRngStateToJson(InitialRankRng(1, RankCoords{}, false));
  RankRngState out;
  nlohmann::json k = j;
  k.erase("numpy");
  EXPECT_EQ(RankRngStateFromJson(k, &out).message(),
            "rng_state: missing required member \"numpy\"");
  k = j;
  k["rng_tracker_states"].erase(kExpertParallelTracker);
  EXPECT_EQ(RankRngStateFromJson(k, &out).message(),
            "rng_state.rng_tracker_states: missing required member \"expert-parallel-rng\"");
  k = j;
  k["cuda"]["counter"] = -1;
  EXPECT_EQ(RankRngStateFromJson(k, &out).code(), Status::Code::kCorruption);
  EXPECT_EQ(RankRngStateFromJson(k, &out).message(),
            "rng_state.cuda.counter: expected a non-negative integer, got -1");
  k = j;
  k["rng_tracker_states"]["extra-rng"] = {{"seed", 1}};
  EXPECT_EQ(RankRngStateFromJson(k, &out).message(),
            "rng_state.rng_tracker_states.extra-rng: missing required member \"counter\"");
}

}  // namespace
}  // namespace ckptspec
