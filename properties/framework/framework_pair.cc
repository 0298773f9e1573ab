#include "properties/framework/framework_pair.h"

#include "model/describe.h"
#include "targets/reference/reference_factory.h"

namespace ckptspec {
namespace {

Status Twin(const Status& s) { return s.ok() ? s : s.WithContext("the spec's twin"); }

Status ByTarget(const char* op, const Status& s) {
  return s.ok() ? s : s.WithContext(std::string(op) + " failed");
}

}  // namespace

FrameworkPair::FrameworkPair(const TargetFactory& factory, const TargetOptions& options)
    : target_(factory.make_framework(options)),
      twin_(ReferenceTargetFactory().make(TargetOptions())) {}

Status FrameworkPair::Build(const FrameworkJob& job) {
  Note("build: " + DescribeJob(job));
  CKPTSPEC_RETURN_IF_ERROR(Twin(twin_.Build(job)));
  return ByTarget("build", target_->Build(job));
}

Status FrameworkPair::Train(int64_t steps, bool fault) {
  Note("train " + std::to_string(steps) + (fault ? ", then a persistent fault" : ""));
  TrainResult want, got;
  CKPTSPEC_RETURN_IF_ERROR(Twin(twin_.Train(steps, fault, &want)));
  CKPTSPEC_RETURN_IF_ERROR(ByTarget("train", target_->Train(steps, fault, &got)));
  if (got.iteration != want.iteration) {
    return Status::InvalidArgument("train: the framework is at iteration " +
                                   std::to_string(got.iteration) + ", the spec at " +
                                   std::to_string(want.iteration));
  }
  if (got.checkpoint_and_exit != want.checkpoint_and_exit) {
    return Status::InvalidArgument(
        std::string("train: after the fault the framework's rerun machine ") +
        (got.checkpoint_and_exit ? "asks" : "does not ask") + " for a checkpoint and exit; the " +
        "spec's " + (want.checkpoint_and_exit ? "does" : "does not"));
  }
  return Status::OK();
}

Status FrameworkPair::Save(bool async, FrameworkSaveResult* result) {
  Note(std::string("save") + (async ? " (async)" : ""));
  FrameworkSaveResult twin_result, got;
  CKPTSPEC_RETURN_IF_ERROR(Twin(twin_.Save(async, &twin_result)));
  CKPTSPEC_RETURN_IF_ERROR(ByTarget("save", target_->Save(async, &got)));
  if (got.iteration != twin_result.iteration) {
    return Status::InvalidArgument("save: the framework saved iteration " +
                                   std::to_string(got.iteration) + ", the spec " +
                                   std::to_string(twin_result.iteration));
  }
  if (result) *result = std::move(got);
  return Status::OK();
}

Status FrameworkPair::Finalize() {
  CKPTSPEC_RETURN_IF_ERROR(Twin(twin_.Finalize()));
  return ByTarget("finalize", target_->Finalize());
}

Status FrameworkPair::Load(const FrameworkLoad& load, bool* loaded, std::string* refusal) {
  Note("load " + DescribeLoadFlags(load.flags) +
       (load.strict == StrictMode::kAssumeOkUnexpected
            ? std::string()
            : std::string(", strict ") + StrictModeName(load.strict)));
  int64_t want = 0, got = 0;
  const Status spec = twin_.Load(load, &want);
  const Status framework = target_->Load(load, &got);
  *loaded = spec.ok();
  if (!spec.ok()) {
    Note("  the spec refuses: " + spec.ToString());
    if (refusal) *refusal = spec.ToString();
    if (framework.ok()) {
      return Status::InvalidArgument("the framework loaded where the spec refuses: " +
                                     spec.ToString());
    }
    Note("  the framework refuses too: " + framework.ToString());
    return Status::OK();
  }
  if (!framework.ok()) {
    return framework.WithContext("load failed where the spec loads");
  }
  if (got != want) {
    return Status::InvalidArgument("load: the framework resumes at iteration " +
                                   std::to_string(got) + ", the spec at " + std::to_string(want));
  }
  return Status::OK();
}

Status FrameworkPair::Observe(Observation* out) {
  return ByTarget("observe", target_->Observe(out));
}

void FrameworkPair::NewProcess() {
  Note("restart (a new process)");
  target_->NewProcess();
  twin_.NewProcess();
}

}  // namespace ckptspec
