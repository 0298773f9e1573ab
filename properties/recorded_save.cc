#include "properties/recorded_save.h"

#include <atomic>

#include "generators/run_gen.h"
#include "harness/harness.h"
#include "properties/property_util.h"

namespace ckptspec {

TwoSaves DrawTwoSaves(const TargetFactory& factory) {
  TwoSaves saves;
  saves.run = *gen::RunUpTo(8);
  saves.a = *rc::gen::inRange<int64_t>(0, 3);
  saves.b = saves.a + *rc::gen::inRange<int64_t>(1, 3);
  saves.async = factory.capabilities.async && *rc::gen::arbitrary<bool>();
  CKPTSPEC_RC_ASSERT_OK(InitialStates(saves.run, &saves.at_a));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&saves.at_a, saves.a));
  saves.at_b = saves.at_a;
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&saves.at_b, saves.b - saves.a));
  return saves;
}

std::string DescribeTwoSaves(const TwoSaves& saves) {
  return "train " + std::to_string(saves.a) + ", save (sync), train to " + std::to_string(saves.b) +
         ", save (" + (saves.async ? "async, completed by Finalize" : "sync") + ")";
}

Status RecordSave(const TargetFactory& factory, const TargetOptions& options, const TwoSaves& saves,
                  const DiskFault& fault, RecordedSave* out) {
  *out = RecordedSave();
  std::unique_ptr<TargetUnderTest> made = factory.make(options);
  FsRecorder* recorder = made->storage_recorder();
  if (recorder == nullptr) {
    return Status::FailedPrecondition("the target's processes run without the storage recorder");
  }
  Target& target = made->target();
  CKPTSPEC_RETURN_IF_ERROR(
      SaveRun(target, saves.run, saves.at_a, saves.a, SaveOptions())
          .WithContext("the committed save of iteration " + std::to_string(saves.a)));
  CKPTSPEC_RETURN_IF_ERROR(target.engine().Finalize());
  CKPTSPEC_RETURN_IF_ERROR(SnapshotDirectory(made->root(), kMaxRecordedRootBytes, &out->before));
  // The log goes beside the root, in the target's own directory (removed with it).
  static std::atomic<uint64_t> recordings{0};
  const std::string log_dir =
      JoinPath(ParentDir(made->root()), "fs-recording-" + std::to_string(++recordings));
  recorder->SetFault(fault);
  CKPTSPEC_RETURN_IF_ERROR(recorder->Start(made->root(), log_dir));
  SaveOptions save;
  save.async = saves.async;
  out->saved = SaveRun(target, saves.run, saves.at_b, saves.b, save);
  if (out->saved.ok()) out->saved = target.engine().Finalize();
  const uint64_t completed = recorder->operations_so_far();
  const Status stopped = recorder->Stop();
  out->faults_injected = recorder->faults_injected();  // since Start
  recorder->ClearFault();
  CKPTSPEC_RETURN_IF_ERROR(stopped);
  CKPTSPEC_RETURN_IF_ERROR(recorder->ReadRecording(&out->ops));
  if (out->saved.ok()) out->completed_after = completed;
  CKPTSPEC_RETURN_IF_ERROR(ReadTree(made->storage_env(), made->root(), &out->after));
  // Every process of the target goes back before the states are judged by fresh ones.
  made.reset();
  return Status::OK();
}

}  // namespace ckptspec
