#include "cli/run_command.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "properties/plugin.h"
#include "properties/target_registry.h"

namespace ckptspec {

CLI::App* AddRunCommand(CLI::App& app, RunOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Run the property catalog (P1-P19) against targets and print the kill matrix");
  cmd->add_option("--target", o->targets,
                  "target name (repeatable): reference, a mutant id (B04) or name, all (the reference and "
                  "every mutant), all-mutants, or a target a --plugin registered")->capture_default_str();
  cmd->add_option("--plugin", o->plugins,
                  "shared library exporting ckptspec_register_targets (repeatable; properties/plugin.h)");
  cmd->add_option("--properties", o->properties, "comma-separated property ids (default: all)");
  cmd->add_option("--seed", o->seed, "RapidCheck seed")->capture_default_str();
  cmd->add_option("--budget", o->budget,
                  "cases per property (e.g. 200), or a time for the whole run (e.g. 30s, 2m)")
      ->capture_default_str();
  cmd->add_option("--json", o->json_out, "write a JSON report to FILE");
  cmd->add_option("--junit", o->junit_out, "write a JUnit XML report to FILE");
  cmd->add_flag("--quiet", o->quiet, "no progress line");
  cmd->add_flag("--details", o->details,
                "describe every kill of a mutant (default: its fastest kill only)");
  return cmd;
}

Status ParseBudget(const std::string& text, Budget* out) {
  *out = Budget();
  if (text.empty()) return Status::InvalidArgument("--budget is empty");
  char unit = text.back();
  const bool timed = unit == 's' || unit == 'm';
  const std::string number = timed ? text.substr(0, text.size() - 1) : text;
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != number.size() || number.empty() || !(value > 0)) {
    return Status::InvalidArgument("--budget '" + text +
                                   "' is neither a case count (e.g. 200) nor a time (e.g. 30s, 2m)");
  }
  if (timed) {
    out->seconds = unit == 'm' ? value * 60 : value;
  } else {
    if (value != static_cast<int>(value) || value > 1e9) {
      return Status::InvalidArgument("--budget '" + text + "': a case count must be a whole number");
    }
    out->cases = static_cast<int>(value);
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
// successive seeds until `seconds` pass or a case fails.
PropertyOutcome RunWithinBudget(const Property& p, const TargetFactory& f, uint64_t seed,
                                const Budget& budget, double seconds) {
  RunParams params;
  params.seed = seed;
  if (budget.cases > 0) {
    params.max_success = budget.cases;
    return RunProperty(p, f, params);
  }
  PropertyOutcome total;
  int cases = 0;
  double spent = 0;
  do {
    PropertyOutcome batch = RunProperty(p, f, params);
    cases += batch.cases;
    const double before = spent;
    spent += batch.seconds;
    if (batch.verdict != Verdict::kPass) {
      batch.time_to_failure_s += before;
      batch.seconds = spent;
      batch.cases = cases;
      return batch;
    }
    total = batch;
    ++params.seed;
  } while (spent < seconds);
  total.cases = cases;
  total.seconds = spent;
  return total;
}

std::string Cell(const PropertyOutcome& o) {
  std::ostringstream os;
  switch (o.verdict) {
    case Verdict::kPass: os << "pass"; break;
    case Verdict::kNotApplicable: os << "n/a"; break;
    case Verdict::kFail:
      os << "KILLED " << std::fixed << std::setprecision(2) << o.time_to_failure_s << "s/"
         << o.cases << "c/" << o.shrunk_size << "b";
      break;
    default: os << VerdictName(o.verdict); break;
  }
  return os.str();
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace

TargetVerdict JudgeTarget(const std::vector<PropertyOutcome>& outcomes, const std::string& target,
                          bool expect_killed) {
  bool killed = false, clean = true;
  for (const PropertyOutcome& o : outcomes) {
    if (o.target != target) continue;
    if (o.verdict == Verdict::kFail) killed = true;
    if (o.verdict != Verdict::kPass && o.verdict != Verdict::kNotApplicable) clean = false;
  }
  if (expect_killed) return {killed ? "killed" : "SURVIVED", killed};
  return {clean ? "clean" : "FAILED", clean};
}

std::string MatrixText(const std::vector<PropertyOutcome>& outcomes,
                       const std::vector<std::string>& expect_killed) {
  std::vector<std::string> targets, properties;
  std::map<std::pair<std::string, std::string>, const PropertyOutcome*> cell;
  for (const PropertyOutcome& o : outcomes) {
    if (std::find(targets.begin(), targets.end(), o.target) == targets.end()) targets.push_back(o.target);
    if (std::find(properties.begin(), properties.end(), o.property) == properties.end()) {
      properties.push_back(o.property);
    }
    cell[{o.target, o.property}] = &o;
  }
  size_t name_width = 6;
  for (const auto& t : targets) name_width = std::max(name_width, t.size());
  size_t cell_width = 4;
  for (const PropertyOutcome& o : outcomes) cell_width = std::max(cell_width, Cell(o).size());
  const int name_w = static_cast<int>(name_width) + 2, cell_w = static_cast<int>(cell_width) + 2;
  std::ostringstream os;
  os << std::left << std::setw(name_w) << "target";
  for (const auto& p : properties) os << std::setw(cell_w) << p;
  os << "verdict\n";
  for (const auto& t : targets) {
    os << std::setw(name_w) << t;
    for (const auto& p : properties) {
      auto it = cell.find({t, p});
      os << std::setw(cell_w) << (it == cell.end() ? "-" : Cell(*it->second));
    }
    const bool mutant = std::find(expect_killed.begin(), expect_killed.end(), t) != expect_killed.end();
    os << JudgeTarget(outcomes, t, mutant).text << "\n";
  }
  os << "(KILLED t/c/b: time to the first failing case, cases run, printed size of the shrunk "
        "counterexample in bytes; verdict: clean or FAILED for the reference, killed or SURVIVED for "
        "a mutant)\n";
  return os.str();
}

std::string OutcomesJson(const std::vector<PropertyOutcome>& outcomes, uint64_t seed,
                         const std::vector<std::string>& expect_killed) {
  nlohmann::json j = {{"format", "ckptspec.run"}, {"version", 1}, {"seed", seed}};
  j["targets"] = nlohmann::json::array();
  std::vector<std::string> seen;
  for (const PropertyOutcome& o : outcomes) {
    if (std::find(seen.begin(), seen.end(), o.target) != seen.end()) continue;
    seen.push_back(o.target);
    const bool mutant =
        std::find(expect_killed.begin(), expect_killed.end(), o.target) != expect_killed.end();
    const TargetVerdict verdict = JudgeTarget(outcomes, o.target, mutant);
    j["targets"].push_back({{"name", o.target},
                            {"expect", mutant ? "killed" : "clean"},
                            {"verdict", verdict.text},
                            {"met", verdict.met}});
  }
  j["outcomes"] = nlohmann::json::array();
  for (const PropertyOutcome& o : outcomes) {
    nlohmann::json e = {{"target", o.target},   {"property", o.property},
                        {"verdict", VerdictName(o.verdict)}, {"cases", o.cases},
                        {"seconds", o.seconds}, {"message", o.message}};
    if (o.verdict == Verdict::kFail) {
      e["time_to_failure_s"] = o.time_to_failure_s;
      e["shrunk_size"] = o.shrunk_size;
      e["reproduce"] = o.reproduce;
      nlohmann::json ce = nlohmann::json::array();
      for (const auto& [name, value] : o.counterexample) ce.push_back({{"name", name}, {"value", value}});
      e["counterexample"] = ce;
    }
    j["outcomes"].push_back(e);
  }
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string OutcomesJUnit(const std::vector<PropertyOutcome>& outcomes) {
  int failures = 0, skipped = 0;
  for (const PropertyOutcome& o : outcomes) {
    if (o.verdict == Verdict::kNotApplicable) {
      ++skipped;
    } else if (o.verdict != Verdict::kPass) {
      ++failures;
    }
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"ckptspec\" tests=\""
     << outcomes.size() << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\">\n";
  for (const PropertyOutcome& o : outcomes) {
    os << "  <testcase classname=\"" << XmlEscape(o.target) << "\" name=\"" << XmlEscape(o.property)
       << "\" time=\"" << o.seconds << "\">";
    if (o.verdict == Verdict::kNotApplicable) {
      os << "<skipped message=\"" << XmlEscape(o.message) << "\"/>";
    } else if (o.verdict != Verdict::kPass) {
      os << "<failure message=\"" << XmlEscape(VerdictName(o.verdict)) << "\">"
         << XmlEscape(DescribeOutcome(o)) << "</failure>";
    }
    os << "</testcase>\n";
  }
  os << "</testsuite>\n";
  return os.str();
}

int RunRunCommand(const RunOptions& o, std::ostream& out, std::ostream& err) {
  std::vector<TargetFactory> plugged;
  for (const std::string& path : o.plugins) {
    const Status s = LoadTargetPlugin(path, &plugged);
    if (!s.ok()) {
      err << "ckptspec run: " << s.message() << "\n";
      return 2;
    }
  }
  std::vector<TargetFactory> targets;
  for (const std::string& name : o.targets) {
    const Status s = ResolveTargets(name, &targets, plugged);
    if (!s.ok()) {
      err << "ckptspec run: " << s.message() << "\n";
      return 2;
    }
  }
  std::vector<Property> properties;
  Budget budget;
  Status s = SelectProperties(o.properties, &properties);
  if (s.ok()) s = ParseBudget(o.budget, &budget);
  if (!s.ok()) {
    err << "ckptspec run: " << s.message() << "\n";
    return 2;
  }
  const double per_property_s =
      budget.seconds > 0 ? budget.seconds / static_cast<double>(targets.size() * properties.size()) : 0;
  std::vector<PropertyOutcome> outcomes;
  const size_t total = targets.size() * properties.size();
  for (const TargetFactory& target : targets) {
    for (const Property& p : properties) {
      if (!o.quiet) {
        err << "\r[" << outcomes.size() + 1 << "/" << total << "] " << target.name << " " << p.id
            << " (" << p.name << ")          " << std::flush;
      }
      outcomes.push_back(RunWithinBudget(p, target, o.seed, budget, per_property_s));
    }
  }
  if (!o.quiet) err << "\r" << std::string(79, ' ') << "\r" << std::flush;
  std::vector<std::string> mutants;
  for (const TargetFactory& target : targets) {
    if (target.expect_killed) mutants.push_back(target.name);
  }
  out << MatrixText(outcomes, mutants);
  // Every unexpected outcome in full; for a killed mutant, its fastest kill (all with --details).
  bool met = true;
  for (const TargetFactory& target : targets) {
    const TargetVerdict verdict = JudgeTarget(outcomes, target.name, target.expect_killed);
    met = met && verdict.met;
    const PropertyOutcome* fastest = nullptr;
    for (const PropertyOutcome& outcome : outcomes) {
      if (outcome.target != target.name) continue;
      if (outcome.verdict == Verdict::kPass || outcome.verdict == Verdict::kNotApplicable) continue;
      if (!target.expect_killed || o.details || outcome.verdict != Verdict::kFail) {
        out << "\n" << DescribeOutcome(outcome);
      } else if (!fastest || outcome.time_to_failure_s < fastest->time_to_failure_s) {
        fastest = &outcome;
      }
    }
    if (target.expect_killed && !verdict.met) {
      out << "\n" << target.name << ": SURVIVED every selected property (no case failed)\n";
    }
    if (fastest) out << "\n" << target.name << " fastest kill:\n" << DescribeOutcome(*fastest);
  }
  auto write = [&](const std::string& path, const std::string& text) {
    if (path.empty()) return true;
    std::ofstream file(path);
    file << text;
    if (!file) {
      err << "ckptspec run: cannot write '" << path << "'\n";
      return false;
    }
    return true;
  };
  if (!write(o.json_out, OutcomesJson(outcomes, o.seed, mutants)) || !write(o.junit_out, OutcomesJUnit(outcomes))) {
    return 2;
  }
  return met ? 0 : 1;
}

}  // namespace ckptspec
