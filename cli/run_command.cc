#include "cli/run_command.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "cli/expectations_file.h"
#include "cli/input_file.h"
#include "cli/output_file.h"
#include "cli/run_judging.h"
#include "cli/run_report.h"
#include "cli/worker_pool.h"
#include "runner/adapter_target.h"
#include "runner/plugin.h"
#include "runner/runner.h"
#include "runner/target_registry.h"

namespace ckptspec {

CLI::App* AddRunCommand(CLI::App& app, RunOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Run the property catalog (P1-P20) against targets and print the kill matrix");
  cmd->add_option(
      "--target", o->targets,
      "target name (repeatable): reference, reference-per-writer, a mutant id (B04) or name, "
      "all (the references and every mutant), all-mutants, or a target a --plugin "
      "registered (default: all, unless --adapter is given)");
  cmd->add_option(
      "--adapter", o->adapters,
      "adapter command (repeatable), run by /bin/sh -c once per rank and spoken to in the "
      "adapter protocol (docs/PROTOCOL.md)");
  AddNumberFlag(cmd, "--adapter-timeout", &o->adapter_timeout_s, kAdapterTimeoutSeconds,
                "seconds an adapter may take per request");
  cmd->add_flag("--adapter-fresh-processes", o->adapter_fresh_processes,
                "start an adapter's rank processes for every engine, even when it declares reset "
                "(slower; rules out state its reset fails to forget)");
  cmd->add_flag("--adapter-no-recorder", o->adapter_no_recorder,
                "run an adapter's ranks without the storage recorder (an LD_PRELOAD interposer, "
                "docs/ADAPTERS.md); P13, P14 and P16 are then n/a");
  AddNumberFlag(cmd, "--adapter-launched", &o->adapter_launched, kLaunchedRanks,
                "ranks an outside launcher (torchrun, srun) starts, which dial in to ckptspec: one "
                "adapter target served by them; needs --adapter-coordinator-file (docs/SCALE.md)");
  cmd->add_option("--adapter-listen", o->adapter_listen,
                  "HOST:PORT the coordinator of launched ranks listens on (port 0: any free port; "
                  "only that interface)")
      ->default_str(o->adapter_listen);
  cmd->add_option("--adapter-coordinator-file", o->adapter_coordinator_file,
                  "where ckptspec writes its address and token for launched ranks (mode 0600; "
                  "the ranks read it through CKPTSPEC_COORDINATOR_FILE)");
  AddNumberFlag(cmd, "--adapter-connect-timeout", &o->adapter_connect_timeout_s,
                kConnectTimeoutSeconds, "seconds launched ranks may take to dial in");
  cmd->add_option("--adapter-shared-dir", o->adapter_shared_dir,
                  "a directory every rank's host sees: adapter checkpoints and scratch files go "
                  "under it (default: $TMPDIR, and $CKPTSPEC_SCRATCH_DIR or /dev/shm)");
  AddNumberFlag(cmd, "--max-world", &o->max_world, kMaxWorld,
                "the most ranks a generated case may have on any target (default: as each "
                "property asks, up to 16; launched ranks cap it at their number)");
  cmd->add_option(
      "--expectations", o->expectations,
      "expectations file (docs/ADAPTERS.md): known failures and n/a properties; the exit "
      "code is 0 only when every outcome is as expected");
  cmd->add_option(
      "--plugin", o->plugins,
      "a plugin: a shared library defined with CKPTSPEC_PLUGIN (repeatable; docs/PLUGINS.md)");
  cmd->add_option("--properties", o->properties, "comma-separated property ids (default: all)");
  AddNumberFlag(cmd, "--seed", &o->seed, NumberRange<uint64_t>{0, UINT64_MAX}, "RapidCheck seed");
  AddNumberFlag(cmd, "--jobs", &o->jobs, kJobs,
                "worker processes the properties run in (default: one per core; adapter targets "
                "run one pair at a time in ckptspec's own process); the report is the same for "
                "any value");
  cmd->add_option_function<std::string>(
         "--budget",
         [o](const std::string& text) {
           Budget budget;
           const Status s = ParseBudget(text, &budget);
           if (!s.ok()) throw CLI::ValidationError(s.message());
           o->budget = text;
         },
         "cases per property (" + DescribeRange(kBudgetCases) +
             "), or a time for the whole run: seconds (" + DescribeRange(kBudgetSeconds) +
             ", e.g. 30s) or minutes (" + DescribeRange(kBudgetMinutes) + ", e.g. 2m)")
      ->default_str(o->budget);
  cmd->add_option("--json", o->json_out, "write a JSON report to FILE");
  cmd->add_option("--junit", o->junit_out, "write a JUnit XML report to FILE");
  cmd->add_flag("--quiet", o->quiet, "no progress line");
  cmd->add_flag(
      "--details", o->details,
      "list every failure's time to detection, cases and shrunk size, and describe every "
      "kill of a mutant with its scenario and reproduce string (default: the kills counted in one "
      "line)");
  cmd->add_flag("--coverage", o->coverage,
                "print the scenario classes each property should reach and the share of its "
                "passing cases that reached each (goal 5 %)");
  return cmd;
}

Status ParseBudget(const std::string& text, Budget* out) {
  *out = Budget();
  const char unit = text.empty() ? '\0' : text.back();
  Status s;
  if (unit == 's' || unit == 'm') {
    double value = 0;
    s = ParseNumber("--budget", text.substr(0, text.size() - 1),
                    unit == 'm' ? kBudgetMinutes : kBudgetSeconds, &value);
    out->seconds = unit == 'm' ? value * 60 : value;
  } else {
    int64_t cases = 0;
    s = ParseNumber("--budget", text, kBudgetCases, &cases);
    out->cases = static_cast<int>(cases);
  }
  if (!s.ok()) {
    *out = Budget();
    return Status::InvalidArgument(
        "--budget '" + text + "' is neither a case count (" + DescribeRange(kBudgetCases) +
        ") nor a time (seconds: " + DescribeRange(kBudgetSeconds) +
        " with 's', minutes: " + DescribeRange(kBudgetMinutes) + " with 'm')");
  }
  return Status::OK();
}

namespace {

Status SelectProperties(const std::string& list, std::vector<Property>* out) {
  if (list.empty()) {
    *out = AllProperties();
    return Status::OK();
  }
  std::stringstream ss(list);
  std::string id;
  while (std::getline(ss, id, ',')) {
    const Property* p = FindProperty(id);
    if (!p) return Status::InvalidArgument("--properties: unknown property '" + id + "'");
    out->push_back(*p);
  }
  return Status::OK();
}

// Runs one property within the budget: a fixed number of cases, or batches of 100 with
// successive seeds until `seconds` pass or a case fails. `shrink` false: a failure is reported as
// found (RunJudging::ShrinksFailures).
PropertyOutcome RunWithinBudget(const Property& p, const TargetFactory& f, uint64_t seed,
                                const Budget& budget, double seconds, bool shrink,
                                const std::vector<KnownFailure>& known) {
  RunParams params;
  params.seed = seed;
  params.shrink = shrink;
  params.known = known;
  if (budget.cases > 0) {
    params.max_success = budget.cases;
    return RunProperty(p, f, params);
  }
  PropertyOutcome total;
  int cases = 0;
  double spent = 0;
  std::map<std::string, int> tag_counts, known_hits;
  do {
    PropertyOutcome batch = RunProperty(p, f, params);
    cases += batch.cases;
    const double before = spent;
    spent += batch.seconds;
    for (const auto& [finding, n] : batch.known_hits) known_hits[finding] += n;
    if (batch.verdict != Verdict::kPass) {
      batch.time_to_failure_s += before;
      batch.seconds = spent;
      batch.cases = cases;
      batch.known_hits.assign(known_hits.begin(), known_hits.end());
      return batch;
    }
    for (const auto& [tag, n] : batch.tag_counts) tag_counts[tag] += n;
    total = batch;
    ++params.seed;
  } while (spent < seconds);
  total.cases = cases;
  total.seconds = spent;
  total.tag_counts.assign(tag_counts.begin(), tag_counts.end());
  total.known_hits.assign(known_hits.begin(), known_hits.end());
  return total;
}

}  // namespace

int RunRunCommand(const RunOptions& o, std::ostream& out, std::ostream& err) {
  const auto usage_error = [&err](const Status& s) {
    err << "ckptspec run: " << s.message() << "\n";
    return 2;
  };
  // Everything the flags name is checked before anything runs (an adapter's probe included): the
  // numbers, the input files, and the report files, opened now.
  std::vector<Property> properties;
  Budget budget;
  Status s = SelectProperties(o.properties, &properties);
  if (s.ok()) s = ParseBudget(o.budget, &budget);
  Expectations expectations;
  if (s.ok() && !o.expectations.empty()) {
    s = ReadExpectationsFile(o.expectations, &expectations);
  }
  for (const std::string& path : o.plugins) {
    if (s.ok()) s = CheckRegularFile("--plugin", path);
  }
  OutputFile json, junit;
  if (s.ok() && !o.json_out.empty()) s = json.Open("--json", o.json_out);
  if (s.ok() && !o.junit_out.empty()) s = junit.Open("--junit", o.junit_out);
  if (!s.ok()) return usage_error(s);

  std::vector<PluginTarget> plugins;
  for (const std::string& path : o.plugins) {
    s = LoadTargetPlugin(path, &plugins);
    if (!s.ok()) return usage_error(s);
  }
  std::vector<TargetFactory> plugged;
  for (const PluginTarget& p : plugins) plugged.push_back(p.factory);
  std::vector<TargetFactory> targets;
  const std::vector<std::string> names =
      o.targets.empty() && o.adapters.empty() && o.adapter_launched == 0
          ? std::vector<std::string>{"all"}
          : o.targets;
  for (const std::string& name : names) {
    s = ResolveTargets(name, &targets, plugged);
    if (!s.ok()) return usage_error(s);
  }
  const size_t first_adapter = targets.size();  // adapter targets run in this process
  std::vector<std::string> adapter_commands = o.adapters;
  if (o.adapter_launched > 0) adapter_commands.push_back("");  // the launched ranks' target
  for (const std::string& command : adapter_commands) {
    AdapterOptions adapter;
    adapter.command = command;
    adapter.timeout_s = o.adapter_timeout_s;
    adapter.fresh_processes = o.adapter_fresh_processes;
    adapter.record_storage = !o.adapter_no_recorder;
    adapter.shared_dir = o.adapter_shared_dir;
    if (command.empty()) {
      adapter.launched_ranks = o.adapter_launched;
      adapter.listen = o.adapter_listen;
      adapter.coordinator_file = o.adapter_coordinator_file;
      adapter.connect_timeout_s = o.adapter_connect_timeout_s;
    }
    TargetFactory factory;
    s = AdapterTargetFactory(adapter, &factory);
    if (!s.ok()) {
      err << "ckptspec run: " << s.ToString() << "\n";
      return 2;
    }
    targets.push_back(std::move(factory));
  }
  if (o.max_world > 0) {
    for (TargetFactory& target : targets) {
      const bool capped = target.max_world_size > 0 && target.max_world_size < o.max_world;
      if (!capped) target.max_world_size = o.max_world;
    }
  }
  RunJudging judging;
  if (!o.expectations.empty()) judging.expectations = &expectations;
  for (const PluginTarget& p : plugins) {
    const bool selected = std::any_of(targets.begin(), targets.end(), [&](const TargetFactory& t) {
      return t.name == p.factory.name;
    });
    if (!selected) continue;
    if (p.expected == PluginExpectation::Kind::kListed) {
      judging.declared.emplace(p.factory.name, p.listed);
    } else if (p.expected == PluginExpectation::Kind::kClean) {
      judging.declared_clean.insert(p.factory.name);
    }
  }
  for (const TargetFactory& target : targets) {
    if (target.expect_killed) judging.expect_killed.push_back(target.name);
  }
  const double per_property_s =
      budget.seconds > 0 ? budget.seconds / static_cast<double>(targets.size() * properties.size())
                         : 0;
  // Pair i is target i / |properties| with property i % |properties|: the report's order.
  const size_t total = targets.size() * properties.size();
  const auto run_pair = [&](size_t i) {
    const Property& property = properties[i % properties.size()];
    const TargetFactory& target = targets[i / properties.size()];
    return RunWithinBudget(
        property, target, o.seed, budget, per_property_s,
        judging.ShrinksFailures(target.name, property.id),
        judging.expectations ? judging.expectations->known : std::vector<KnownFailure>());
  };
  size_t shown = 0;
  const auto show = [&](size_t i) {
    if (o.quiet) return;
    const Property& p = properties[i % properties.size()];
    err << "\r[" << ++shown << "/" << total << "] " << targets[i / properties.size()].name << " "
        << p.id << " (" << p.name << ")          " << std::flush;
  };
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  std::vector<PropertyOutcome> outcomes(total);
  std::vector<size_t> in_workers, here;
  for (size_t i = 0; i < total; ++i) {
    (jobs > 1 && i / properties.size() < first_adapter ? in_workers : here).push_back(i);
  }
  if (!in_workers.empty()) {
    err << std::flush;
    out << std::flush;
    const std::vector<PropertyOutcome> done = RunInWorkers(
        in_workers.size(), jobs, [&](size_t k) { return run_pair(in_workers[k]); },
        [&](size_t k, const PropertyOutcome&) { show(in_workers[k]); });
    for (size_t k = 0; k < in_workers.size(); ++k) outcomes[in_workers[k]] = done[k];
  }
  for (size_t i : here) {
    show(i);
    outcomes[i] = run_pair(i);
  }
  if (!o.quiet) err << "\r" << std::string(79, ' ') << "\r" << std::flush;
  out << MatrixText(outcomes, judging);
  if (o.details) out << KillTimesText(outcomes);
  out << OutcomeDescriptions(outcomes, judging, o.details);
  for (size_t a = 0; a < o.adapters.size(); ++a) {
    out << AdapterReplayHint(outcomes, targets[first_adapter + a].name, o.adapters[a],
                             o.adapter_timeout_s);
  }
  if (o.coverage) out << CoverageText(outcomes);
  const bool met = EveryTargetMet(outcomes, judging);
  bool written = true;
  for (const Status& report : {json.WriteAndClose(OutcomesJson(outcomes, o.seed, judging)),
                               junit.WriteAndClose(OutcomesJUnit(outcomes, judging))}) {
    if (!report.ok()) {
      err << "ckptspec run: " << report.message() << "\n";
      written = false;
    }
  }
  if (!written) return 2;
  return met ? 0 : 1;
}

}  // namespace ckptspec
