// The ckptspec command: one subcommand per verb; each verb's flags are declared once, in its
// Add*Command function, and drive both parsing and --help.
#include <unistd.h>

#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "cli/diff_command.h"
#include "cli/layout_command.h"
#include "cli/list_command.h"
#include "cli/out_of_memory.h"
#include "cli/replay_command.h"
#include "cli/run_command.h"
#include "cli/verify_commands.h"
#include "targets/process/cleanup_registry.h"

int main(int argc, char** argv) {
  // Before any thread starts: a termination signal ends adapter processes and removes the
  // harness's temporary directories before ckptspec ends.
  ckptspec::InstallTerminationCleanup();
  CLI::App app{
      "ckptspec: an executable specification of distributed training-checkpoint "
      "semantics, and a conformance suite built on it"};
  app.require_subcommand(1);
  ckptspec::LayoutOptions layout_options;
  CLI::App* layout = ckptspec::AddLayoutCommand(app, &layout_options);
  ckptspec::RunOptions run_options;
  CLI::App* run = ckptspec::AddRunCommand(app, &run_options);
  ckptspec::ReplayOptions replay_options;
  CLI::App* replay = ckptspec::AddReplayCommand(app, &replay_options);
  ckptspec::ListOptions list_options;
  CLI::App* list = ckptspec::AddListCommand(app, &list_options);
  ckptspec::VerifyPlanOptions verify_plan_options;
  CLI::App* verify_plan = ckptspec::AddVerifyPlanCommand(app, &verify_plan_options);
  ckptspec::VerifyOptions verify_options;
  CLI::App* verify = ckptspec::AddVerifyCommand(app, &verify_options);
  ckptspec::DiffCommandOptions diff_options;
  CLI::App* diff = ckptspec::AddDiffCommand(app, &diff_options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  const auto run_verb = [&]() -> int {
    if (layout->parsed()) return ckptspec::RunLayoutCommand(layout_options, std::cout, std::cerr);
    if (run->parsed()) {
      // The progress line rewrites itself with carriage returns: only on a terminal.
      if (!isatty(STDERR_FILENO)) run_options.quiet = true;
      return ckptspec::RunRunCommand(run_options, std::cout, std::cerr);
    }
    if (replay->parsed()) return ckptspec::RunReplayCommand(replay_options, std::cout, std::cerr);
    if (list->parsed()) return ckptspec::RunListCommand(list_options, std::cout, std::cerr);
    if (verify_plan->parsed()) {
      return ckptspec::RunVerifyPlanCommand(verify_plan_options, std::cout, std::cerr);
    }
    if (verify->parsed()) return ckptspec::RunVerifyCommand(verify_options, std::cout, std::cerr);
    if (diff->parsed()) return ckptspec::RunDiffCommand(diff_options, std::cout, std::cerr);
    return 2;
  };
  int code = 2;
  try {  // a failed allocation the verb did not name (cli/out_of_memory.h)
    code = run_verb();
  } catch (const std::bad_alloc&) {
    std::cerr << ckptspec::OutOfMemoryMessage(app.get_subcommands().front()->get_name()) << "\n";
    return 2;
  }
  // A report on standard output that did not reach it (a full disk) is an error, as for a file.
  if (!std::cout.flush()) {
    std::cerr << "ckptspec: cannot write standard output\n";
    return 2;
  }
  return code;
}
