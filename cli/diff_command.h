// `ckptspec diff A B`: compares two checkpoints tensor by tensor in global coordinates, whatever
// layout and format (reference, PyTorch DCP, Megatron torch_dist) each was saved in
// (ondisk/checkpoint_diff.h). Bitwise by default; --ulp K or --rtol/--atol compare with the device
// checks' semantics (device/ckptspec_device.h). Both directories are read through confined views
// under the limits flags (docs/SECURITY.md).
//
// Exit codes: 0 the same model; 1 a difference; 2 unreadable input or usage.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "base/resource_limits.h"

namespace ckptspec {

struct DiffCommandOptions {
  std::string a, b;
  double rtol = -1;  // negative: not given
  double atol = -1;
  int64_t ulp = -1;
  bool equal_nan = false;
  bool json = false;
  ResourceLimits limits;
};

CLI::App* AddDiffCommand(CLI::App& app, DiffCommandOptions* options);
int RunDiffCommand(const DiffCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ckptspec
