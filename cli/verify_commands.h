// `ckptspec verify-plan FILE [--against FILE]`: P4, P5 and P11 on a structure signature (the plan
// dump of docs/SIGNATURE.md) that any framework can write, and P6 against a second dump.
// `ckptspec verify DIR`: static checks of a reference-format checkpoint directory (metadata
// integrity, checksums, coverage, tracker; targets/reference/verify.h).
//
// Exit codes (both): 0 no finding; 1 findings; 2 unreadable or malformed input.
#pragma once

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

namespace ckptspec {

struct VerifyPlanOptions {
  std::string file;
  std::string against;  // optional: a second dump to diff structure against (P6)
};
CLI::App* AddVerifyPlanCommand(CLI::App& app, VerifyPlanOptions* options);
int RunVerifyPlanCommand(const VerifyPlanOptions& options, std::ostream& out, std::ostream& err);

struct VerifyOptions {
  std::string dir;
  bool all_iterations = false;
};
CLI::App* AddVerifyCommand(CLI::App& app, VerifyOptions* options);
int RunVerifyCommand(const VerifyOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ckptspec
