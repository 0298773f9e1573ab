// `ckptspec replay REPRODUCE`: runs the one failing case a reproduce string names (the RC_PARAMS
// value `ckptspec run` prints under "reproduce:" and writes to its JSON report), on the target and
// property it was recorded for, and prints the outcome with its scenario.
//
// The string is decoded and checked field by field before any of it reaches RapidCheck
// (runner/reproduce_string.h): a damaged or forged string is a usage error naming the field,
// never a crash.
//
// A case recorded against an adapter (`ckptspec run --adapter CMD`) replays with the same
// `--adapter CMD`: one command reruns a finding against the third party.
//
// Exit codes: 0 the case passes now (the failure no longer reproduces); 1 it fails again (or the
// property errors); 2 invalid arguments (a string that does not decode, or holds values no run
// records; an unknown target or property; a plugin that is not a regular file or does not load).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ckptspec {

struct ReplayOptions {
  std::string reproduce;
  std::vector<std::string> plugins;  // for a target a plugin registered
  // For a target an adapter served (its name must be the one the string was recorded for).
  std::string adapter;
  double adapter_timeout_s = 60;
};
CLI::App* AddReplayCommand(CLI::App& app, ReplayOptions* options);
int RunReplayCommand(const ReplayOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ckptspec
