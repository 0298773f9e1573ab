// SharedStates (stateful_ops.h): copies of the stateful model and the checkpoints it takes share
// the training states until one writes them; a write never shows in another copy.
#include "harness/stateful_ops.h"

#include <vector>

#include <gtest/gtest.h>

namespace ckptspec {
namespace {

TEST(SharedStates, AWriteNeverShowsInAnotherCopyOrACheckpoint) {
  SharedStates model;
  *model.Mutable() = std::vector<TrainingState>(2);
  (*model.Mutable())[0].iteration = 1;
  SharedStates copy = model;  // as RapidCheck copies the model
  const std::shared_ptr<const std::vector<TrainingState>> checkpoint = model.Share();
  EXPECT_EQ(&copy.get(), &model.get()) << "a copy shares until it writes";

  (*copy.Mutable())[0].iteration = 2;
  EXPECT_EQ(model[0].iteration, 1);
  EXPECT_EQ((*checkpoint)[0].iteration, 1);
  EXPECT_EQ(copy[0].iteration, 2);

  (*model.Mutable())[1].iteration = 3;
  EXPECT_EQ((*checkpoint)[1].iteration, 0) << "the checkpoint keeps the states it took";
  EXPECT_EQ(model[1].iteration, 3);

  model = std::vector<TrainingState>(1);
  EXPECT_EQ(model.size(), 1u);
  EXPECT_EQ(checkpoint->size(), 2u);
  copy.clear();
  EXPECT_TRUE(copy.empty());
  EXPECT_EQ(checkpoint->size(), 2u);
}

TEST(SharedStates, AnUnsharedWriteCopiesNothing) {
  SharedStates model;
  *model.Mutable() = std::vector<TrainingState>(1);
  const std::vector<TrainingState>* before = &model.get();
  (*model.Mutable())[0].iteration = 5;
  EXPECT_EQ(&model.get(), before);
}

}  // namespace
}  // namespace ckptspec
