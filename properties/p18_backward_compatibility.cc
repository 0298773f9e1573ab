// P18, backward compatibility: golden checkpoints written by earlier format versions
// (corpus/golden/, properties/golden.h) load. A golden scenario's checkpoint tree is copied into
// a fresh target's storage and resumed with the scenario's run under a generated flag set; the
// result is the spec's expectation (the scenario's initial state trained to its iteration,
// resumed under those flags), or the spec's named error when the spec refuses that resume.
// The goldens hold param groups in both forms of the identity key: without LR bounds (written
// before groups recorded their declared bounds) and with them.
// Catches: the bugs its entry in properties/catalog.cc names (docs/BUGS.md): a valid older layout
// misclassified or refused, identifier keys required on load that older checkpoints lack, any
// format change that silently breaks old checkpoints.
#include <sstream>

#include "generators/config_gen.h"
#include "properties/golden.h"
#include "properties/property.h"
#include "properties/property_util.h"

namespace ckptspec {

void CheckBackwardCompatibility(const TargetFactory& factory) {
  const GoldenScenario& scenario = *rc::gen::elementOf(GoldenScenarios());
  const LoadFlags flags = *gen::LoadFlagsGen(/*allow_conflict=*/false);
  GoldenCheckpoint golden;
  CKPTSPEC_RC_ASSERT_OK(ReadGoldenScenario(scenario, Env::Posix(),
                                           JoinPath(GoldenCorpusDir(), scenario.name), &golden));
  std::ostringstream flag_text;
  showValue(flags, flag_text);
  RC_LOG() << "scenario: golden '" << scenario.name << "' (format version " << golden.format_version
           << ", iteration " << golden.iteration << ")\n  " << DescribeRun(scenario.run)
           << "\n  resume on the same layout with flags " << flag_text.str() << "\n";
  RC_TAG(scenario.name);
  RC_TAG("format version " + std::to_string(golden.format_version));
  RC_TAG(golden.param_group_key == IdentityKeySet::kCore
             ? "param groups of the older form (keyed without LR bounds)"
             : "param groups keyed with declared LR bounds");

  std::vector<TrainingState> saved;
  CKPTSPEC_RC_ASSERT_OK(InitialStates(scenario.run, &saved));
  CKPTSPEC_RC_ASSERT_OK(TrainRun(&saved, golden.iteration));
  std::vector<TrainingState> expected;
  const Status spec = ExpectedResume(scenario.run, saved, scenario.run, flags, &expected);

  auto under_test = factory.make(TargetOptions());
  CKPTSPEC_RC_ASSERT_OK(WriteTree(under_test->mem_env(), under_test->root(), golden.tree));
  ResumeOptions options;
  options.flags = flags;
  std::vector<TrainingState> resumed;
  const Status status = ResumeRun(under_test->target(), scenario.run, options, &resumed);
  RC_LOG() << "  spec: " << spec.ToString() << "; resume: " << status.ToString() << "\n";
  RC_CLASSIFY(!spec.ok(), "the spec refuses the resume");
  if (!spec.ok()) {
    RC_ASSERT(!status.ok());
    return;
  }
  CKPTSPEC_RC_ASSERT_OK(status);
  CKPTSPEC_RC_ASSERT_SAME(FirstRunDifference(resumed, expected),
                          "the golden checkpoint resumed to another state");
}

}  // namespace ckptspec
