// The rule a crash with several async saves in flight is judged by (saves_in_flight.h): which
// checkpoints must survive, how InFlightDriver reads each call by the Engine contract, and what
// JudgeSurvivors says of storage that keeps, or lacks, what must survive.
#include "properties/saves_in_flight.h"

#include <vector>

#include <gtest/gtest.h>

#include "harness/harness.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

using Outcome = InFlightDriver::Outcome;

TEST(CheckpointsThatMustSurvive, TheTrackersAndTheNewestKeepLastOfTheCommitted) {
  EXPECT_EQ(CheckpointsThatMustSurvive({1, 2, 3}, 0), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(CheckpointsThatMustSurvive({1, 2, 3}, 1), (std::vector<int64_t>{3}));
  EXPECT_EQ(CheckpointsThatMustSurvive({3, 1, 2}, 2), (std::vector<int64_t>{2, 3}));
  // The tracker's is kept though newer ones committed before it (a resumed, older run).
  EXPECT_EQ(CheckpointsThatMustSurvive({5, 6, 2}, 1), (std::vector<int64_t>{2, 6}));
  // A later save of an iteration replaces its checkpoint: counted once.
  EXPECT_EQ(CheckpointsThatMustSurvive({4, 2, 4}, 2), (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(CheckpointsThatMustSurvive({}, 1).empty());
}

RunSpec SmallRun() {
  Layout layout;
  EXPECT_TRUE(Layout::Make(2, ParallelSizes(), RankOrder(), &layout).ok());
  TrainingConfig c;
  c.model.num_layers = 2;
  c.model.hidden_size = 8;
  c.model.num_attention_heads = 2;
  c.model.ffn_hidden_size = 16;
  c.model.vocab_size = 16;
  c.data.dp_size = layout.dp();
  c.data.global_batch_size = 4;
  c.data.micro_batch_size = 2;
  c.data.num_samples = 64;
  c.ranks = RankCoordsOf(layout);
  RunSpec run;
  run.layout = HeterogeneousLayout::Single(layout);
  run.configs = {c};
  return run;
}

// A deferred reference target holding `bound` saves, keeping `keep_last`, with states trained to
// each of `iterations` saved through `driver`-like calls by the test.
struct Fixture {
  Fixture(int bound, int keep_last) : run(SmallRun()) {
    TargetOptions options;
    options.deferred_async = true;
    options.max_async_in_flight = bound;
    options.keep_last = keep_last;
    under_test = ReferenceTargetFactory().make(options);
    EXPECT_TRUE(InitialStates(run, &states).ok());
  }
  // Trains to `iteration` and schedules an async save of it through `driver`.
  Status SaveAsync(InFlightDriver* driver, int64_t iteration) {
    EXPECT_TRUE(TrainRun(&states, iteration - states.front().iteration).ok());
    SaveOptions async;
    async.async = true;
    return driver->Save([&] { return SaveRun(target(), run, states, iteration, async); });
  }
  Target& target() { return under_test->target(); }
  RunSpec run;
  std::unique_ptr<TargetUnderTest> under_test;
  std::vector<TrainingState> states;
};

TEST(InFlightDriver, ReadsEachCallByTheContract) {
  Fixture f(2, 0);
  InFlightDriver driver(&f.target().engine(), 2);
  ASSERT_TRUE(f.SaveAsync(&driver, 1).ok());
  ASSERT_TRUE(f.SaveAsync(&driver, 2).ok());
  ASSERT_TRUE(f.SaveAsync(&driver, 3).ok());  // the bound reached: completes save 1 first
  EXPECT_EQ(driver.outcomes(),
            (std::vector<Outcome>{Outcome::kSucceeded, Outcome::kInFlight, Outcome::kInFlight}));
  f.under_test->mem_env()->FailWritesTo("iter_0000002.tmp/");
  EXPECT_FALSE(driver.Poll().ok());
  f.under_test->mem_env()->ClearFaults();
  ASSERT_TRUE(driver.Finalize().ok());
  EXPECT_EQ(driver.outcomes(),
            (std::vector<Outcome>{Outcome::kSucceeded, Outcome::kFailed, Outcome::kSucceeded}));
  EXPECT_EQ(driver.reported(), 1u);
  EXPECT_EQ(driver.errors(), 1);
}

TEST(InFlightDriver, AFailedFinalizeLeavesEverySaveUnknown) {
  Fixture f(3, 0);
  InFlightDriver driver(&f.target().engine(), 3);
  ASSERT_TRUE(f.SaveAsync(&driver, 1).ok());
  ASSERT_TRUE(f.SaveAsync(&driver, 2).ok());
  f.under_test->mem_env()->FailWritesTo("iter_0000002.tmp/");
  EXPECT_FALSE(driver.Finalize().ok());
  EXPECT_EQ(driver.outcomes(), (std::vector<Outcome>{Outcome::kUnknown, Outcome::kUnknown}));
  EXPECT_EQ(driver.reported(), 0u);
}

TEST(JudgeSurvivors, AcceptsWhatTheRuleKeepsAndNamesWhatIsMissing) {
  Fixture f(2, 1);
  InFlightDriver driver(&f.target().engine(), 2);
  ASSERT_TRUE(f.SaveAsync(&driver, 1).ok());
  ASSERT_TRUE(f.SaveAsync(&driver, 2).ok());
  ASSERT_TRUE(driver.Finalize().ok());
  size_t t = 0;
  EXPECT_EQ(JudgeSurvivors(f.target(), f.run, {1, 2}, {false, false}, 1, 1, &t), "");
  EXPECT_EQ(t, 1u);
  // keep_last 1 removed iteration 1: judged under keep_last 2, it is missing.
  EXPECT_NE(JudgeSurvivors(f.target(), f.run, {1, 2}, {false, false}, 1, 2, &t)
                .find("iteration 1 must survive"),
            std::string::npos);
  // Unless save 1 may have failed.
  EXPECT_EQ(JudgeSurvivors(f.target(), f.run, {1, 2}, {true, false}, 1, 2, &t), "");
  // A save that reported success but is not what the tracker names.
  EXPECT_NE(JudgeSurvivors(f.target(), f.run, {1, 2, 3}, {false, false, false}, 2, 1, &t)
                .find("though the save of 3 had reported success"),
            std::string::npos);
  EXPECT_NE(JudgeSurvivors(f.target(), f.run, {1, 5}, {false, false}, 0, 1, &t)
                .find("which no save made"),
            std::string::npos);
}

}  // namespace
}  // namespace ckptspec
