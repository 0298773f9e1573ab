// `ckptspec verify-plan FILE [--against FILE]`: P4, P5 and P11 on a structure signature (the plan
// dump of docs/SIGNATURE.md) that any framework can write, and P6 against a second dump.
// `ckptspec verify DIR`: static checks of a checkpoint directory, whose format is recognised by
// its content (ondisk/checkpoint_kind.h): the reference format (metadata integrity, checksums,
// coverage, tracker; targets/reference/verify.h), PyTorch DCP and Megatron torch_dist (the index,
// and with --data every item's bytes; ondisk/dcp_verify.h). --json prints the report as JSON.
//
// Both read input nobody vouches for (docs/SECURITY.md): each takes a flag per row of the limits
// table (base/resource_limits.h: --max-json-depth, --max-metadata-bytes,
// --max-chunks, --max-read-ratio), and refuses an input that is not what it expects before opening
// it: a plan dump must be a regular file, DIR a directory ("plan dump '/tmp/p': a FIFO, not a
// regular file"; "'/tmp/p': a FIFO, not a checkpoint directory").
//
// Exit codes (both): 0 no finding; 1 findings; 2 unreadable or malformed input, or a plan dump
// beyond a limit.
#pragma once

#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "base/resource_limits.h"

namespace ckptspec {

// One flag per row of the limits table (--max-json-depth, ...), bound to *limits.
void AddLimitFlags(CLI::App* cmd, ResourceLimits* limits);

// InvalidArgument naming `dir` unless it is a directory: anything else is never opened.
Status CheckCheckpointDirectory(const std::string& dir);

struct VerifyPlanOptions {
  std::string file;
  std::string against;  // optional: a second dump to diff structure against (P6)
  ResourceLimits limits;
};
CLI::App* AddVerifyPlanCommand(CLI::App& app, VerifyPlanOptions* options);
int RunVerifyPlanCommand(const VerifyPlanOptions& options, std::ostream& out, std::ostream& err);

struct VerifyOptions {
  std::string dir;
  bool all_iterations = false;  // reference format
  bool data = false;            // DCP, torch_dist: read every item
  bool checksums = false;       // DCP, torch_dist: print each tensor's checksum (implies data)
  bool json = false;
  ResourceLimits limits;
};
CLI::App* AddVerifyCommand(CLI::App& app, VerifyOptions* options);
int RunVerifyCommand(const VerifyOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ckptspec
