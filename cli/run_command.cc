#include "cli/run_command.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/expectations_file.h"
#include "cli/input_file.h"
#include "cli/output_file.h"
#include "properties/adapter_target.h"
#include "properties/plugin.h"
#include "properties/target_registry.h"

namespace ckptspec {

CLI::App* AddRunCommand(CLI::App& app, RunOptions* o) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Run the property catalog (P1-P19) against targets and print the kill matrix");
  cmd->add_option("--target", o->targets,
                  "target name (repeatable): reference, reference-per-writer, a mutant id (B04) or name, "
                  "all (the references and every mutant), all-mutants, or a target a --plugin "
                  "registered (default: all, unless --adapter is given)");
  cmd->add_option("--adapter", o->adapters,
                  "adapter command (repeatable), run by /bin/sh -c once per rank and spoken to in the "
                  "adapter protocol (docs/PROTOCOL.md)");
  AddNumberFlag(cmd, "--adapter-timeout", &o->adapter_timeout_s, kAdapterTimeoutSeconds,
                "seconds an adapter may take per request");
  cmd->add_flag("--adapter-fresh-processes", o->adapter_fresh_processes,
                "start an adapter's rank processes for every engine, even when it declares reset "
                "(slower; rules out state its reset fails to forget)");
  cmd->add_option("--expectations", o->expectations,
                  "expectations file (docs/ADAPTERS.md): known failures and n/a properties; the exit "
                  "code is 0 only when every outcome is as expected");
  cmd->add_option("--plugin", o->plugins,
                  "shared library exporting ckptspec_register_targets (repeatable; properties/plugin.h)");
  cmd->add_option("--properties", o->properties, "comma-separated property ids (default: all)");
  AddNumberFlag(cmd, "--seed", &o->seed, NumberRange<uint64_t>{0, UINT64_MAX}, "RapidCheck seed");
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
  cmd->add_flag("--details", o->details,
                "list every failure's time to detection, cases and shrunk size, and describe every "
                "kill of a mutant (default: its fastest kill only)");
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
        ") nor a time (seconds: " + DescribeRange(kBudgetSeconds) + " with 's', minutes: " +
        DescribeRange(kBudgetMinutes) + " with 'm')");
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

// "0.25s/3c/40b": time to the first failing case, cases run, printed size of the shrunk
// counterexample.
std::string KillTime(const PropertyOutcome& o) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << o.time_to_failure_s << "s/" << o.cases << "c/"
     << o.shrunk_size << "b";
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

bool RunJudging::IsMutant(const std::string& target) const {
  return std::find(expect_killed.begin(), expect_killed.end(), target) != expect_killed.end();
}

TargetVerdict JudgeTarget(const std::vector<PropertyOutcome>& outcomes, const std::string& target,
                          const RunJudging& judging) {
  const bool mutant = judging.IsMutant(target);
  bool killed = false, clean = true;
  for (const PropertyOutcome& o : outcomes) {
    if (o.target != target) continue;
    if (o.verdict == Verdict::kFail) killed = true;
    if (judging.expectations && !mutant) {
      clean = clean && Judge(judging.expectations->For(o.property), o).matches;
    } else if (o.verdict != Verdict::kPass && o.verdict != Verdict::kNotApplicable) {
      clean = false;
    }
  }
  if (mutant) return {killed ? "killed" : "SURVIVED", killed};
  if (judging.expectations) return {clean ? "as expected" : "UNEXPECTED", clean};
  return {clean ? "clean" : "FAILED", clean};
}

namespace {

// One character per outcome (the legend below the matrix says what each means).
char CellChar(const PropertyOutcome& o, const RunJudging& judging) {
  if (judging.expectations && !judging.IsMutant(o.target)) {
    return Judge(judging.expectations->For(o.property), o).symbol;
  }
  switch (o.verdict) {
    case Verdict::kPass: return '.';
    case Verdict::kNotApplicable: return '-';
    case Verdict::kFail: return judging.IsMutant(o.target) ? 'K' : 'F';
    case Verdict::kGaveUp: return 'g';
    case Verdict::kError: return 'E';
  }
  return '?';
}

std::vector<std::string> TargetsInOrder(const std::vector<PropertyOutcome>& outcomes) {
  std::vector<std::string> targets;
  for (const PropertyOutcome& o : outcomes) {
    if (std::find(targets.begin(), targets.end(), o.target) == targets.end()) targets.push_back(o.target);
  }
  return targets;
}

}  // namespace

std::string MatrixText(const std::vector<PropertyOutcome>& outcomes, const RunJudging& judging) {
  const std::vector<std::string> targets = TargetsInOrder(outcomes);
  std::vector<std::string> properties;
  std::map<std::pair<std::string, std::string>, const PropertyOutcome*> cell;
  size_t property_width = 2;
  for (const PropertyOutcome& o : outcomes) {
    if (std::find(properties.begin(), properties.end(), o.property) == properties.end()) {
      properties.push_back(o.property);
      property_width = std::max(property_width, o.property.size());
    }
    cell[{o.target, o.property}] = &o;
  }
  std::vector<std::string> verdicts;
  size_t name_width = 6, verdict_width = 7;
  for (const auto& t : targets) {
    verdicts.push_back(JudgeTarget(outcomes, t, judging).text);
    name_width = std::max(name_width, t.size());
    verdict_width = std::max(verdict_width, verdicts.back().size());
  }
  const int name_w = static_cast<int>(name_width) + 2, verdict_w = static_cast<int>(verdict_width) + 2,
            cell_w = static_cast<int>(property_width) + 1;
  std::ostringstream header;
  header << std::left << std::setw(name_w) << "target" << std::setw(verdict_w) << "verdict";
  for (const auto& p : properties) header << std::setw(cell_w) << p;
  std::string head = header.str();
  head.erase(head.find_last_not_of(' ') + 1);
  std::ostringstream os;
  os << std::left << head << "\n";
  for (size_t i = 0; i < targets.size(); ++i) {
    std::string row;
    for (const auto& p : properties) {
      auto it = cell.find({targets[i], p});
      row += it == cell.end() ? ' ' : CellChar(*it->second, judging);
      row += std::string(static_cast<size_t>(cell_w) - 1, ' ');
    }
    row.erase(row.find_last_not_of(' ') + 1);
    os << std::setw(name_w) << targets[i] << std::setw(verdict_w) << verdicts[i] << row << "\n";
  }
  os << "K killed (a mutant failed it)  F failed  . pass  - n/a  g gave up  E error";
  if (judging.expectations) os << "\nx failed as expected  P passed, N n/a, against expectation";
  os << "\nverdict: a mutant is killed or SURVIVED, another target clean or FAILED";
  if (judging.expectations) {
    os << ", or as expected or\nUNEXPECTED against " << judging.expectations->source;
  }
  os << "\n";
  return os.str();
}

std::string KillTimesText(const std::vector<PropertyOutcome>& outcomes) {
  std::ostringstream os;
  for (const std::string& t : TargetsInOrder(outcomes)) {
    std::string kills;
    for (const PropertyOutcome& o : outcomes) {
      if (o.target == t && o.verdict == Verdict::kFail) kills += "  " + o.property + " " + KillTime(o);
    }
    if (!kills.empty()) os << t << ":" << kills << "\n";
  }
  if (os.str().empty()) return "";
  return "\nfailures, time to the first failing case / cases run / size of the shrunk "
         "counterexample:\n" + os.str();
}

std::string OutcomesJson(const std::vector<PropertyOutcome>& outcomes, uint64_t seed,
                         const RunJudging& judging) {
  nlohmann::json j = {{"format", "ckptspec.run"}, {"version", 1}, {"seed", seed}};
  j["targets"] = nlohmann::json::array();
  for (const std::string& t : TargetsInOrder(outcomes)) {
    const TargetVerdict verdict = JudgeTarget(outcomes, t, judging);
    j["targets"].push_back({{"name", t},
                            {"expect", judging.IsMutant(t) ? "killed"
                                       : judging.expectations ? "as expected" : "clean"},
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
    if (judging.expectations && !judging.IsMutant(o.target)) {
      const Expectation& x = judging.expectations->For(o.property);
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
// reason. A mutant's outcomes are never failures (its kill is judged by a case of its own).
enum class JUnitKind { kPassed, kSkipped, kFailed };
JUnitKind JUnitKindOf(const PropertyOutcome& o, const RunJudging& judging, std::string* why) {
  if (judging.IsMutant(o.target)) {
    *why = o.verdict == Verdict::kNotApplicable ? o.message : "";
    return o.verdict == Verdict::kNotApplicable ? JUnitKind::kSkipped : JUnitKind::kPassed;
  }
  if (judging.expectations) {
    const Expectation& x = judging.expectations->For(o.property);
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

std::string OutcomesJUnit(const std::vector<PropertyOutcome>& outcomes, const RunJudging& judging) {
  int tests = 0, failures = 0, skipped = 0;
  std::string why;
  std::ostringstream cases;
  for (const PropertyOutcome& o : outcomes) {
    const JUnitKind kind = JUnitKindOf(o, judging, &why);
    ++tests;
    cases << "  <testcase classname=\"" << XmlEscape(o.target) << "\" name=\"" << XmlEscape(o.property)
          << "\" time=\"" << o.seconds << "\">";
    if (kind == JUnitKind::kSkipped) {
      ++skipped;
      cases << "<skipped message=\"" << XmlEscape(why) << "\"/>";
    } else if (kind == JUnitKind::kFailed) {
      ++failures;
      cases << "<failure message=\"" << XmlEscape(why) << "\">" << XmlEscape(DescribeOutcome(o))
            << "</failure>";
    }
    cases << "</testcase>\n";
  }
  for (const std::string& t : TargetsInOrder(outcomes)) {
    if (!judging.IsMutant(t)) continue;
    const TargetVerdict verdict = JudgeTarget(outcomes, t, judging);
    ++tests;
    cases << "  <testcase classname=\"" << XmlEscape(t) << "\" name=\"killed\">";
    if (!verdict.met) {
      ++failures;
      cases << "<failure message=\"SURVIVED\">no selected property failed</failure>";
    }
    cases << "</testcase>\n";
  }
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"ckptspec\" tests=\"" << tests
     << "\" failures=\"" << failures << "\" skipped=\"" << skipped << "\">\n"
     << cases.str() << "</testsuite>\n";
  return os.str();
}

namespace {

// Below the matrix: what did not go as expected, in full; each expected failure in a line; for a
// killed mutant, its fastest kill (every kill with `details`).
void DescribeOutcomes(const std::vector<PropertyOutcome>& outcomes, const RunJudging& judging,
                      bool details, std::ostream& out) {
  for (const std::string& t : TargetsInOrder(outcomes)) {
    const bool mutant = judging.IsMutant(t);
    const PropertyOutcome* fastest = nullptr;
    for (const PropertyOutcome& outcome : outcomes) {
      if (outcome.target != t) continue;
      if (mutant) {
        if (outcome.verdict != Verdict::kFail) continue;
        if (details) {
          out << "\n" << DescribeOutcome(outcome);
        } else if (!fastest || outcome.time_to_failure_s < fastest->time_to_failure_s) {
          fastest = &outcome;
        }
      } else if (judging.expectations) {
        const Expectation& x = judging.expectations->For(outcome.property);
        const Judgement j = Judge(x, outcome);
        if (j.matches) {
          if (x.expected == Expected::kFail) {
            out << "\nxfail " << t << " " << outcome.property << " (" << x.reason
                << "): " << VerdictName(outcome.verdict) << ": " << outcome.message << "\n";
          }
          continue;
        }
        out << "\n" << j.cell << ": " << t << " " << outcome.property << ", expected "
            << ExpectedName(x.expected) << (x.reason.empty() ? "" : " (" + x.reason + ")") << "\n";
        if (outcome.verdict != Verdict::kPass) out << DescribeOutcome(outcome);
      } else if (outcome.verdict != Verdict::kPass && outcome.verdict != Verdict::kNotApplicable) {
        out << "\n" << DescribeOutcome(outcome);
      }
    }
    if (mutant && !JudgeTarget(outcomes, t, judging).met) {
      out << "\n" << t << ": SURVIVED every selected property (no case failed)\n";
    }
    if (fastest) out << "\n" << t << " fastest kill:\n" << DescribeOutcome(*fastest);
  }
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

  std::vector<TargetFactory> plugged;
  for (const std::string& path : o.plugins) {
    s = LoadTargetPlugin(path, &plugged);
    if (!s.ok()) return usage_error(s);
  }
  std::vector<TargetFactory> targets;
  const std::vector<std::string> names =
      o.targets.empty() && o.adapters.empty() ? std::vector<std::string>{"all"} : o.targets;
  for (const std::string& name : names) {
    s = ResolveTargets(name, &targets, plugged);
    if (!s.ok()) return usage_error(s);
  }
  for (const std::string& command : o.adapters) {
    AdapterOptions adapter;
    adapter.command = command;
    adapter.timeout_s = o.adapter_timeout_s;
    adapter.fresh_processes = o.adapter_fresh_processes;
    TargetFactory factory;
    s = AdapterTargetFactory(adapter, &factory);
    if (!s.ok()) {
      err << "ckptspec run: " << s.ToString() << "\n";
      return 2;
    }
    targets.push_back(std::move(factory));
  }
  RunJudging judging;
  if (!o.expectations.empty()) judging.expectations = &expectations;
  for (const TargetFactory& target : targets) {
    if (target.expect_killed) judging.expect_killed.push_back(target.name);
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
  out << MatrixText(outcomes, judging);
  if (o.details) out << KillTimesText(outcomes);
  DescribeOutcomes(outcomes, judging, o.details, out);
  bool met = true;
  for (const std::string& t : TargetsInOrder(outcomes)) met = met && JudgeTarget(outcomes, t, judging).met;
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
