// The op-sequence input format (op_input.h): what OpInputWriter writes, the reader reads back.
#include "fuzz/op_input.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "generators/run_gen.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

TEST(OpInput, WriterAndReaderAgree) {
  const std::string bytes = OpInputWriter()
                                .Run(5, 50)
                                .Train(3)
                                .Save(true, true)
                                .Crash(-1)
                                .RestartOther(true, 11, 0x18 | 0x01)
                                .Finalize()
                                .Crash(15)
                                .Finish();
  FuzzedDataProvider input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  const std::optional<RunSpec> run = ReadRun(&input);
  ASSERT_TRUE(run.has_value()) << "the run generator gave up on seed 5";
  StatefulModel model;
  StatefulSut sut;
  ASSERT_TRUE(StartScenario(ReferenceTargetFactory(), *run, &model, &sut).ok());

  std::optional<StatefulOp> op = ReadOp(&input, model);
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->kind, OpKind::kTrain);
  EXPECT_EQ(op->n, 3);
  op = ReadOp(&input, model);
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->kind, OpKind::kSave);
  EXPECT_TRUE(op->async);
  EXPECT_TRUE(op->cached);
  op = ReadOp(&input, model);
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->kind, OpKind::kCrash);
  EXPECT_EQ(op->at_op, -1);
  op = ReadOp(&input, model);
  if (op.has_value()) {  // the resume generator may find no other layout for this run
    EXPECT_EQ(op->kind, OpKind::kRestart);
    EXPECT_EQ(op->restart, RestartKind::kOtherRun);
    EXPECT_TRUE(op->flags.finetune);
    EXPECT_TRUE(op->flags.override_scheduler);
    EXPECT_FALSE(op->flags.use_checkpoint_scheduler) << "dropped together with override";
    EXPECT_EQ(op->run.configs.size(), run->configs.size());
  }
  op = ReadOp(&input, model);
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->kind, OpKind::kFinalize);
  op = ReadOp(&input, model);
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->kind, OpKind::kCrash);
  EXPECT_EQ(op->at_op, 15);
  EXPECT_EQ(input.remaining_bytes(), 0u);
}

TEST(OpInput, SameBytesSameRun) {
  const std::string bytes = OpInputWriter().Run(42, 80).Finish();
  FuzzedDataProvider a(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  FuzzedDataProvider b(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  const std::optional<RunSpec> first = ReadRun(&a), second = ReadRun(&b);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(DescribeRun(*first), DescribeRun(*second));
}

TEST(OpInput, FreezeNeedsTwoTrainableKeys) {
  const std::string bytes = OpInputWriter().Freeze(0, 0).Finish();
  FuzzedDataProvider input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  StatefulModel dead;
  dead.alive = false;
  EXPECT_FALSE(ReadOp(&input, dead).has_value()) << "no process, nothing to freeze";
  EXPECT_EQ(input.remaining_bytes(), 0u) << "the arguments are consumed all the same";
}

TEST(OpInput, UnfreezeReadsAFrozenKeyOfATorchOptimModule) {
  const std::string bytes = OpInputWriter().Run(5, 50).Freeze(0, 0).Unfreeze(0, 0).Finish();
  FuzzedDataProvider input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  const std::optional<RunSpec> run = ReadRun(&input);
  ASSERT_TRUE(run.has_value()) << "the run generator gave up on seed 5";
  StatefulModel model;
  StatefulSut sut;
  ASSERT_TRUE(
      StartScenario(ReferenceTargetFactory(), gen::WithTorchOptimFreezing(*run), &model, &sut)
          .ok());
  const std::optional<StatefulOp> freeze = ReadOp(&input, model);
  ASSERT_TRUE(freeze.has_value()) << "seed 5's run has fewer than two trainable keys: pick another";
  ASSERT_EQ(freeze->kind, OpKind::kFreeze);
  ApplyOp(*freeze, &model);
  ASSERT_TRUE(model.expect_ok);
  const std::optional<StatefulOp> unfreeze = ReadOp(&input, model);
  ASSERT_TRUE(unfreeze.has_value());
  EXPECT_EQ(unfreeze->kind, OpKind::kUnfreeze);
  const std::vector<std::string> frozen = UnfreezableKeys(model, 0);
  EXPECT_EQ(unfreeze->key, frozen.front()) << "key index 0 of the frozen keys";
  ApplyOp(*unfreeze, &model);
  EXPECT_TRUE(model.expect_ok);
  const std::vector<std::string> trainable = FreezableKeys(model, 0);
  EXPECT_NE(std::find(trainable.begin(), trainable.end(), unfreeze->key), trainable.end());
  EXPECT_EQ(input.remaining_bytes(), 0u);
}

TEST(OpInput, HealDecodesWithoutArguments) {
  const std::string bytes = OpInputWriter().Heal().Train(1).Finish();
  FuzzedDataProvider input(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  const std::optional<StatefulOp> heal = ReadOp(&input, StatefulModel());
  ASSERT_TRUE(heal.has_value());
  EXPECT_EQ(heal->kind, OpKind::kHeal);
  const std::optional<StatefulOp> train = ReadOp(&input, StatefulModel());
  ASSERT_TRUE(train.has_value());
  EXPECT_EQ(train->kind, OpKind::kTrain);
}

}  // namespace
}  // namespace ckptspec
