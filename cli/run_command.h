// `ckptspec run`: runs the property catalog against targets and prints the kill matrix
// (a row per target: its verdict against its expectation, then one character per property --
// killed, pass, n/a, ...), with optional JSON and JUnit reports (cli/run_report.h). With neither
// --target nor --adapter: the reference (both index layouts) and every catalog mutant.
//
// Expectations (judged by cli/run_judging.h): a mutant (TargetFactory::expect_killed) must be
// KILLED by at least one selected property; a plugin's target that lists its expectations
// (runner/plugin.h) must have exactly the outcomes they list; any other target must pass
// every selected property (or find it n/a), or, with --expectations FILE, have exactly the
// outcomes the file expects (known failures, n/a).
// Exit codes: 0 every selected target meets its expectation; 1 some target does not (a failure on
// the reference, a mutant that survived, an outcome other than the file's); 2 invalid arguments
// (a number out of its flag's range, an input that is not a regular file, a report path that
// cannot be opened for writing: all found before anything runs), an expectations file that does
// not read, an adapter whose probe fails, or a report that could not be written (a full disk).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/numeric_flag.h"
#include "model/status.h"

namespace ckptspec {

struct RunOptions {
  // Empty: "all" (the references and every mutant), unless adapters are given.
  std::vector<std::string> targets;
  // Adapter commands (docs/PROTOCOL.md, docs/ADAPTERS.md), each run as a target.
  std::vector<std::string> adapters;
  double adapter_timeout_s = 60;         // per request to an adapter
  bool adapter_fresh_processes = false;  // no live groups (docs/PROTOCOL.md, revision 2)
  bool adapter_no_recorder = false;      // no storage recorder: P13, P14, P16 n/a
  // Ranks an outside launcher starts (docs/SCALE.md): > 0 adds one adapter target served by them.
  int adapter_launched = 0;
  std::string adapter_listen = "127.0.0.1:0";  // the coordinator's address
  std::string adapter_coordinator_file;        // written for the launched ranks
  double adapter_connect_timeout_s = 600;      // how long they may take to dial in
  std::string adapter_shared_dir;              // checkpoints and scratch files, seen by every host
  // The most ranks a generated case may have on any target (0: as each property asks, up to 16):
  // smaller worlds run faster against real code (generators/world_cap.h).
  int max_world = 0;
  // A per-target expectations file (runner/expectations.h) every target is judged by, but
  // mutants and the plugins' targets that list their own.
  std::string expectations;
  // Shared libraries to load before resolving targets (runner/plugin.h); their targets can
  // then be named by --target.
  std::vector<std::string> plugins;
  std::string properties;  // comma-separated ids; empty: all
  uint64_t seed = 1;
  // "N" cases per property, or a time such as "30s" / "2m" spread over the properties (runs
  // batches of 100 cases with successive seeds until the time is up or a case fails).
  std::string budget = "100";
  std::string json_out;
  std::string junit_out;
  bool quiet = false;  // no progress line
  // Also list every failure's time to detection, cases and shrunk size, and describe every kill of
  // a mutant (not only the fastest).
  bool details = false;
  // Also print the scenario classes each property reached, with their shares (CoverageText).
  bool coverage = false;
  // Worker processes the (target, property) pairs run in (cli/worker_pool.h); 0: one per online
  // core. Adapter targets run in ckptspec's own process, one pair at a time, whatever this says
  // (their rank processes belong to it). The outcomes and the report are the same for any value.
  int jobs = 0;
};

CLI::App* AddRunCommand(CLI::App& app, RunOptions* options);

int RunRunCommand(const RunOptions& options, std::ostream& out, std::ostream& err);

// What the numeric flags accept (--help states the same ranges; cli/numeric_flag.h).
constexpr NumberRange<double> kAdapterTimeoutSeconds{0.001, 24 * 3600.0};
constexpr NumberRange<int> kJobs{1, 1024};
constexpr NumberRange<int> kLaunchedRanks{1, 65536};
constexpr NumberRange<int> kMaxWorld{1, 65536};
constexpr NumberRange<double> kConnectTimeoutSeconds{0.001, 24 * 3600.0};
constexpr NumberRange<int64_t> kBudgetCases{1, 1000000000};
constexpr NumberRange<double> kBudgetSeconds{0.001, 7 * 24 * 3600.0};  // "30s"
constexpr NumberRange<double> kBudgetMinutes{0.001, 7 * 24 * 60.0};    // "2m"

// Parses --budget: a whole number of cases, or a time in seconds ("30s") or minutes ("2m"),
// within the ranges above. The error names the flag, the value and both ranges.
struct Budget {
  int cases = 0;
  double seconds = 0;
};
Status ParseBudget(const std::string& text, Budget* out);

}  // namespace ckptspec
