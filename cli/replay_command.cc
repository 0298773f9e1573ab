#include "cli/replay_command.h"

#include "cli/input_file.h"
#include "cli/numeric_flag.h"
#include "cli/run_command.h"
#include "runner/adapter_target.h"
#include "runner/plugin.h"
#include "runner/runner.h"
#include "runner/target_registry.h"

namespace ckptspec {

CLI::App* AddReplayCommand(CLI::App& app, ReplayOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "replay", "Replay the failing case of a reproduce string printed by `ckptspec run`");
  cmd->add_option("reproduce", o->reproduce, "the RC_PARAMS value after \"reproduce:\"")
      ->required();
  cmd->add_option("--plugin", o->plugins, "shared library registering the target (repeatable)");
  cmd->add_option("--adapter", o->adapter,
                  "the adapter command the case was recorded against (docs/PROTOCOL.md), run by "
                  "/bin/sh -c once per rank");
  AddNumberFlag(cmd, "--adapter-timeout", &o->adapter_timeout_s, kAdapterTimeoutSeconds,
                "seconds the adapter may take per request");
  return cmd;
}

int RunReplayCommand(const ReplayOptions& o, std::ostream& out, std::ostream& err) {
  std::string target_name, property_id;
  Status s = ParseReproduceKey(o.reproduce, &target_name, &property_id);
  std::vector<PluginTarget> plugins;
  for (const std::string& path : o.plugins) {
    if (s.ok()) s = CheckRegularFile("--plugin", path);
    if (s.ok()) s = LoadTargetPlugin(path, &plugins);
  }
  std::vector<TargetFactory> plugged, targets;
  for (const PluginTarget& p : plugins) plugged.push_back(p.factory);
  if (s.ok() && !o.adapter.empty()) {
    AdapterOptions adapter;
    adapter.command = o.adapter;
    adapter.timeout_s = o.adapter_timeout_s;
    TargetFactory factory;
    s = AdapterTargetFactory(adapter, &factory);
    if (s.ok() && factory.name != target_name) {
      s = Status::InvalidArgument("the string was recorded against '" + target_name +
                                  "'; --adapter names itself '" + factory.name + "'");
    }
    if (s.ok()) targets.push_back(std::move(factory));
  } else if (s.ok() && target_name.rfind(kAdapterTargetPrefix, 0) == 0) {
    s = Status::InvalidArgument("the string was recorded against the adapter target '" +
                                target_name +
                                "': pass the adapter's command as `ckptspec run` had it, "
                                "with --adapter CMD");
  } else if (s.ok()) {
    s = ResolveTargets(target_name, &targets, plugged);
  }
  const Property* property = FindProperty(property_id);
  if (s.ok() && !property) s = Status::InvalidArgument("unknown property '" + property_id + "'");
  if (!s.ok()) {
    err << "ckptspec replay: " << s.message() << "\n";
    return 2;
  }
  RunParams params;
  params.reproduce = o.reproduce;
  const PropertyOutcome outcome = RunProperty(*property, targets.front(), params);
  out << DescribeOutcome(outcome);
  return outcome.verdict == Verdict::kPass ? 0 : 1;
}

}  // namespace ckptspec
