#include "properties/export_resume.h"

#include <memory>

#include "harness/harness.h"
#include "base/env.h"

namespace ckptspec {

std::string ExportResumeDifference(const TargetFactory& factory, const RunSpec& saved_run,
                                   const std::vector<TrainingState>& states, const RunSpec& run,
                                   const LoadFlags& flags, bool* applied) {
  *applied = false;
  if (states.empty()) return "no states to save";
  std::unique_ptr<TargetUnderTest> saving = factory.make(TargetOptions());
  if (saving->target().checkpoint_export() == nullptr) return "";
  *applied = true;
  const int64_t iteration = states.front().iteration;
  Status s = SaveRun(saving->target(), saved_run, states, iteration, SaveOptions());
  if (s.ok()) s = saving->target().engine().Finalize();
  if (!s.ok()) return "the save before the export failed: " + s.ToString();
  // The export is an offline tool: a new process over the saved storage.
  saving->NewProcess();
  Env* env = saving->storage_env();
  const std::string path = JoinPath(saving->root() + ".exports", "checkpoint.export");
  s = saving->target().checkpoint_export()->Export(iteration, env, path);
  if (!s.ok()) return "the export failed: " + s.ToString();
  std::unique_ptr<TargetUnderTest> importing = factory.make(TargetOptions());
  int64_t imported = -1;
  s = saving->target().checkpoint_export()->Import(env, path, importing->target().engine(),
                                                   &imported);
  if (!s.ok()) return "the import of the export failed: " + s.ToString();
  if (imported != iteration) {
    return "the export of iteration " + std::to_string(iteration) + " imported as iteration " +
           std::to_string(imported);
  }
  importing->NewProcess();

  std::vector<TrainingState> expected;
  const Status spec = ExpectedResume(saved_run, states, run, flags, &expected);
  ResumeOptions options;
  options.flags = flags;
  std::vector<TrainingState> resumed;
  const Status got = ResumeRun(importing->target(), run, options, &resumed);
  if (!spec.ok()) {
    if (!got.ok()) return "";
    return "resumed from the export, the target accepted a resume the spec refuses: " +
           spec.ToString();
  }
  if (!got.ok()) {
    return "resumed from the export, the target refused a resume the spec accepts: " +
           got.ToString();
  }
  const std::string difference = FirstRunDifference(resumed, expected);
  if (difference.empty()) return "";
  return "the state resumed from the export differs from the spec's expected resume: " + difference;
}

}  // namespace ckptspec
