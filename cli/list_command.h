// `ckptspec list`: the properties (id, name, the docs/BUGS.md entries each is meant to catch, the
// catalog mutants it kills) and the targets `ckptspec run --target` accepts (the registered clean
// targets, then each catalog mutant with its name, upstream thread and killers). Exit code 0.
//
// `ckptspec list --plugin FILE` (repeatable) loads each plugin as `run --plugin` does and lists
// its targets too, each with the expectation it declared ("plugin FILE: killed", "clean",
// "listed"), so that a script can ask a plugin's target names. A plugin that does not load is
// exit 2 with run's message. Not with --markdown, whose tables are the catalogs' alone (exit 2).
//
// `ckptspec list --markdown` prints the same facts as the tables docs/PROPERTIES.md and
// docs/MUTANTS.md hold, each between a begin and an end marker line:
//   <!-- begin generated: ckptspec list --markdown, NAME -->
//   ...
//   <!-- end generated -->
// tools/check_generated_docs.py fails when a committed document's marked table differs from the
// command's (and rewrites them with --update): the tables are never edited by hand.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ckptspec {

struct ListOptions {
  bool markdown = false;
  std::vector<std::string> plugins;  // shared libraries whose targets to list too
};

CLI::App* AddListCommand(CLI::App& app, ListOptions* options);
int RunListCommand(const ListOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ckptspec
