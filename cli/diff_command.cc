#include "cli/diff_command.h"

#include <memory>

#include "cli/reference_contents.h"
#include "cli/verify_commands.h"
#include "ondisk/checkpoint_diff.h"

namespace ckptspec {

CLI::App* AddDiffCommand(CLI::App& app, DiffCommandOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare two checkpoints (reference, PyTorch DCP, Megatron torch_dist; any layouts) tensor "
      "by tensor in global coordinates: keys, dtypes, shapes, values");
  cmd->add_option("A", o->a, "the first checkpoint directory")->required();
  cmd->add_option("B", o->b, "the second checkpoint directory")->required();
  cmd->add_option("--rtol", o->rtol,
                  "compare with torch.testing.assert_close's rule: |b - a| <= atol + rtol * |a| "
                  "(default for a dtype: torch's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--atol", o->atol, "absolute tolerance (see --rtol)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--ulp", o->ulp, "compare within K units in the last place")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--equal-nan", o->equal_nan, "with --ulp or --rtol/--atol: NaN equals NaN");
  cmd->add_flag("--json", o->json, "print the report as JSON");
  AddLimitFlags(cmd, &o->limits);
  return cmd;
}

namespace {

// The contents of a checkpoint in any format verify recognises: the reference's own reader for
// the reference format, ondisk/'s for DCP and torch_dist.
Status OpenAnyContents(Env* view, const std::string& root, const ResourceLimits& limits,
                       std::unique_ptr<CheckpointContents>* out) {
  DetectedCheckpoint detected;
  CKPTSPEC_RETURN_IF_ERROR(DetectCheckpoint(view, root, &detected));
  if (detected.kind == CheckpointKind::kReference) {
    return OpenReferenceContents(view, root, limits, out);
  }
  return CheckpointContents::Open(view, root, limits, out);
}

}  // namespace

int RunDiffCommand(const DiffCommandOptions& o, std::ostream& out, std::ostream& err) {
  DiffOptions options;
  if (o.ulp >= 0 && (o.rtol >= 0 || o.atol >= 0)) {
    err << "ckptspec diff: --ulp and --rtol/--atol choose different comparisons; give one\n";
    return 2;
  }
  if (o.ulp >= 0) {
    options.mode = CKPTSPEC_COMPARE_ULP;
    options.max_ulp = static_cast<uint64_t>(o.ulp);
  } else if (o.rtol >= 0 || o.atol >= 0) {
    options.mode = CKPTSPEC_COMPARE_TOLERANCE;
    options.rtol = o.rtol;
    options.atol = o.atol;
  }
  options.equal_nan = o.equal_nan;
  options.limits = o.limits;
  std::unique_ptr<Env> views[2];
  std::unique_ptr<CheckpointContents> contents[2];
  const std::string* dirs[2] = {&o.a, &o.b};
  for (int i = 0; i < 2; ++i) {
    Status s = CheckCheckpointDirectory(*dirs[i]);
    if (s.ok()) s = Env::Posix()->NewConfinedView(*dirs[i], &views[i]);
    if (s.ok()) s = OpenAnyContents(views[i].get(), *dirs[i], o.limits, &contents[i]);
    if (!s.ok()) {
      err << "ckptspec diff: " << (i == 0 ? "A" : "B") << ": " << s.message() << "\n";
      return 2;
    }
  }
  DiffReport report;
  const Status s = DiffCheckpoints(*contents[0], *contents[1], options, &report);
  if (!s.ok()) {
    err << "ckptspec diff: " << s.message() << "\n";
    return 2;
  }
  out << (o.json ? DiffReportJson(report) : FormatDiffReport(report));
  return report.same() ? 0 : 1;
}

}  // namespace ckptspec
