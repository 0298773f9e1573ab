// `ckptspec list`: the properties (id, name, the docs/BUGS.md entries each is meant to catch) and the
// targets `ckptspec run --target` accepts (the registered clean targets, then each catalog mutant
// with its name, upstream thread and killers). Exit code 0.
#pragma once

#include <ostream>

#include <CLI/CLI.hpp>

namespace ckptspec {

CLI::App* AddListCommand(CLI::App& app);
int RunListCommand(std::ostream& out);

}  // namespace ckptspec
