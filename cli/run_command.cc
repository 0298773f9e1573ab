#include "cli/run_command.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "properties/adapter_target.h"
#include "properties/plugin.h"
#include "properties/target_registry.h"

namespace ckptspec {

CLI::App* AddRunCommand(CLI::App& app, RunOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Run the property catalog (P1-P19) against targets and print the kill matrix");
  cmd->add_option("--target", o->targets,
                  "target name (repeatable): reference, a mutant id (B04) or name, all, all-mutants, or a "
                  "target a --plugin registered (default: reference, unless --adapter is given)");
  cmd->add_option("--adapter", o->adapters,
                  "adapter command (repeatable), run by /bin/sh -c once per rank and spoken to in the "
                  "adapter protocol (docs/PROTOCOL.md)");
  cmd->add_option("--adapter-timeout", o->adapter_timeout_s, "seconds an adapter may take per request")
      ->capture_default_str();
  cmd->add_option("--expectations", o->expectations,
                  "expectations file (docs/ADAPTERS.md): known failures and n/a properties; the exit "
                  "code is 0 only when every outcome is as expected");
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

std::string MatrixText(const std::vector<PropertyOutcome>& outcomes, const Expectations* expectations) {
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
  std::ostringstream os;
  os << std::left << std::setw(static_cast<int>(name_width) + 2) << "target";
  for (const auto& p : properties) os << std::setw(22) << p;
  os << "\n";
  for (const auto& t : targets) {
    os << std::setw(static_cast<int>(name_width) + 2) << t;
    for (const auto& p : properties) {
      auto it = cell.find({t, p});
      std::string text = "-";
      if (it != cell.end()) {
        text = expectations ? Judge(expectations->For(p), *it->second).cell : Cell(*it->second);
      }
      os << std::setw(22) << text;
    }
    os << "\n";
  }
  if (expectations) {
    os << "(judged by " << expectations->source
       << ": xfail = an expected failure; UNEXPECTED = an outcome other than the expected one)\n";
  } else {
    os << "(KILLED t/c/b: time to the first failing case, cases run, printed size of the shrunk "
          "counterexample in bytes)\n";
  }
  return os.str();
}

std::string OutcomesJson(const std::vector<PropertyOutcome>& outcomes, uint64_t seed,
                         const Expectations* expectations) {
  nlohmann::json j = {{"format", "ckptspec.run"}, {"version", 1}, {"seed", seed}};
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
    if (expectations) {
      const Expectation& x = expectations->For(o.property);
      e["expected"] = ExpectedName(x.expected);
      if (!x.reason.empty()) e["expected_reason"] = x.reason;
      e["matches"] = Judge(x, o).matches;
    }
    j["outcomes"].push_back(e);
  }
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// How JUnit shows an outcome: skipped (n/a, or an expected failure), failed, or passed; with the
// skip's reason.
enum class JUnitKind { kPassed, kSkipped, kFailed };
JUnitKind JUnitKindOf(const PropertyOutcome& o, const Expectations* expectations, std::string* why) {
  if (expectations) {
    const Expectation& x = expectations->For(o.property);
    const Judgement j = Judge(x, o);
    if (!j.matches) {
      *why = j.cell;
      return JUnitKind::kFailed;
    }
    if (x.expected == Expected::kPass) return JUnitKind::kPassed;
    *why = (x.expected == Expected::kFail ? "expected failure: " : "") + x.reason;
    return JUnitKind::kSkipped;
  }
  *why = o.verdict == Verdict::kNotApplicable ? o.message : VerdictName(o.verdict);
  if (o.verdict == Verdict::kNotApplicable) return JUnitKind::kSkipped;
  return o.verdict == Verdict::kPass ? JUnitKind::kPassed : JUnitKind::kFailed;
}

}  // namespace

std::string OutcomesJUnit(const std::vector<PropertyOutcome>& outcomes, const Expectations* expectations) {
  int failures = 0, skipped = 0;
  std::string why;
  for (const PropertyOutcome& o : outcomes) {
    const JUnitKind kind = JUnitKindOf(o, expectations, &why);
    if (kind == JUnitKind::kSkipped) ++skipped;
    if (kind == JUnitKind::kFailed) ++failures;
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"ckptspec\" tests=\""
     << outcomes.size() << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\">\n";
  for (const PropertyOutcome& o : outcomes) {
    os << "  <testcase classname=\"" << XmlEscape(o.target) << "\" name=\"" << XmlEscape(o.property)
       << "\" time=\"" << o.seconds << "\">";
    const JUnitKind kind = JUnitKindOf(o, expectations, &why);
    if (kind == JUnitKind::kSkipped) {
      os << "<skipped message=\"" << XmlEscape(why) << "\"/>";
    } else if (kind == JUnitKind::kFailed) {
      os << "<failure message=\"" << XmlEscape(why) << "\">" << XmlEscape(DescribeOutcome(o))
         << "</failure>";
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
  const std::vector<std::string> names =
      o.targets.empty() && o.adapters.empty() ? std::vector<std::string>{"reference"} : o.targets;
  for (const std::string& name : names) {
    const Status s = ResolveTargets(name, &targets, plugged);
    if (!s.ok()) {
      err << "ckptspec run: " << s.message() << "\n";
      return 2;
    }
  }
  for (const std::string& command : o.adapters) {
    AdapterOptions adapter;
    adapter.command = command;
    adapter.timeout_s = o.adapter_timeout_s;
    TargetFactory factory;
    const Status s = AdapterTargetFactory(adapter, &factory);
    if (!s.ok()) {
      err << "ckptspec run: " << s.ToString() << "\n";
      return 2;
    }
    targets.push_back(std::move(factory));
  }
  Expectations expectations;
  if (!o.expectations.empty()) {
    const Status s = LoadExpectations(o.expectations, &expectations);
    if (!s.ok()) {
      err << "ckptspec run: " << s.message() << "\n";
      return 2;
    }
  }
  const Expectations* judged = o.expectations.empty() ? nullptr : &expectations;
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
  if (!o.quiet) err << "\r" << std::string(60, ' ') << "\r";
  out << MatrixText(outcomes, judged);
  bool clean = true;
  for (const PropertyOutcome& outcome : outcomes) {
    if (judged) {
      const Expectation& x = judged->For(outcome.property);
      const Judgement j = Judge(x, outcome);
      if (j.matches) {
        if (x.expected == Expected::kFail) {
          out << "\nxfail " << outcome.target << " " << outcome.property << " (" << x.reason
              << "): " << VerdictName(outcome.verdict) << ": " << outcome.message << "\n";
        }
        continue;
      }
      clean = false;
      out << "\n" << j.cell << ": " << outcome.target << " " << outcome.property << ", expected "
          << ExpectedName(x.expected) << (x.reason.empty() ? "" : " (" + x.reason + ")") << "\n";
      if (outcome.verdict != Verdict::kPass) out << DescribeOutcome(outcome);
      continue;
    }
    if (outcome.verdict == Verdict::kPass || outcome.verdict == Verdict::kNotApplicable) continue;
    clean = false;
    out << "\n" << DescribeOutcome(outcome);
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
  if (!write(o.json_out, OutcomesJson(outcomes, o.seed, judged)) ||
      !write(o.junit_out, OutcomesJUnit(outcomes, judged))) {
    return 2;
  }
  return clean ? 0 : 1;
}

}  // namespace ckptspec
