// The text reports of cli/run_report.h: the kill matrix, the kill times, the outcome descriptions.
#include "cli/run_report.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

namespace ckptspec {

namespace {

// "0.25s/3c/40b": time to the first failing case, cases run, printed size of the shrunk
// counterexample.
std::string KillTime(const PropertyOutcome& o) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << o.time_to_failure_s << "s/" << o.cases << "c/"
     << o.shrunk_size << "b";
  return os.str();
}

// `text` as one word of /bin/sh: in single quotes, each ' closed, escaped and reopened.
std::string ShellWord(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
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
  const int name_w = static_cast<int>(name_width) + 2,
            verdict_w = static_cast<int>(verdict_width) + 2,
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
      row += it == cell.end() ? ' ' : JudgeOutcome(*it->second, judging).symbol;
      row += std::string(static_cast<size_t>(cell_w) - 1, ' ');
    }
    row.erase(row.find_last_not_of(' ') + 1);
    os << std::setw(name_w) << targets[i] << std::setw(verdict_w) << verdicts[i] << row << "\n";
  }
  os << "K killed (a mutant failed it)  F failed  . pass  - n/a  g gave up  E error";
  const bool any_expectations = judging.expectations || !judging.declared.empty();
  if (any_expectations) os << "\nx failed as expected  P passed, N n/a, against expectation";
  os << "\nverdict: a mutant is killed or SURVIVED, another target clean or FAILED";
  if (any_expectations) {
    os << ", or as expected or\nUNEXPECTED against ";
    std::string against;
    for (const auto& [target, declared] : judging.declared) {
      against += (against.empty() ? "" : ", ") + declared.source;
    }
    if (judging.expectations) {
      against += (against.empty() ? "" : ", ") + judging.expectations->source;
    }
    os << against;
  }
  os << "\n";
  return os.str();
}

std::string KillTimesText(const std::vector<PropertyOutcome>& outcomes) {
  std::ostringstream os;
  for (const std::string& t : TargetsInOrder(outcomes)) {
    std::string kills;
    for (const PropertyOutcome& o : outcomes) {
      if (o.target == t && o.verdict == Verdict::kFail)
        kills += "  " + o.property + " " + KillTime(o);
    }
    if (!kills.empty()) os << t << ":" << kills << "\n";
  }
  if (os.str().empty()) return "";
  return "\nfailures, time to the first failing case / cases run / size of the shrunk "
         "counterexample:\n" +
         os.str();
}

std::string OutcomeDescriptions(const std::vector<PropertyOutcome>& outcomes,
                                const RunJudging& judging, bool details) {
  std::ostringstream out;
  size_t kills_left_out = 0;
  for (const std::string& t : TargetsInOrder(outcomes)) {
    for (const PropertyOutcome& outcome : outcomes) {
      if (outcome.target != t) continue;
      const OutcomeJudgement j = JudgeOutcome(outcome, judging);
      if (j.held_to == TargetExpectation::kKilled) {
        if (!j.meets) continue;
        if (details) {
          out << "\n" << DescribeOutcome(outcome);
        } else {
          ++kills_left_out;
        }
      } else if (j.expected) {
        const Expectation& x = *j.expected;
        if (j.meets && !outcome.known_hits.empty()) {
          out << "\n" << t << " " << outcome.property << " stepped over known findings:";
          for (const auto& [finding, cases] : outcome.known_hits) {
            out << " " << finding << " (" << cases << (cases == 1 ? " case)" : " cases)");
          }
          out << "\n";
        }
        if (j.meets) {
          if (x.expected == Expected::kFail) {
            out << "\nxfail " << t << " " << outcome.property << " (" << x.reason
                << "): " << VerdictName(outcome.verdict) << ": " << outcome.message << "\n";
          }
          continue;
        }
        out << "\n"
            << j.words << ": " << t << " " << outcome.property << ", expected "
            << ExpectedName(x.expected) << (x.match.empty() ? "" : " naming '" + x.match + "'")
            << (x.reason.empty() ? "" : " (" + x.reason + ")") << "\n";
        if (outcome.verdict != Verdict::kPass) out << DescribeOutcome(outcome);
      } else if (!j.meets) {
        out << "\n" << DescribeOutcome(outcome);
      }
    }
    if (ExpectationOf(t, judging) == TargetExpectation::kKilled &&
        !JudgeTarget(outcomes, t, judging).met) {
      out << "\n" << t << ": SURVIVED every selected property (no case failed)\n";
    }
  }
  if (kills_left_out > 0) {
    out << "\n"
        << kills_left_out << (kills_left_out == 1 ? " kill" : " kills")
        << " of mutants not described here: --details prints each with its scenario and "
           "reproduce string (so does --json FILE)\n";
  }
  return out.str();
}

std::string AdapterReplayHint(const std::vector<PropertyOutcome>& outcomes,
                              const std::string& target, const std::string& command,
                              double timeout_s) {
  std::ostringstream os;
  for (const PropertyOutcome& o : outcomes) {
    if (o.target != target || o.verdict != Verdict::kFail || o.reproduce.empty()) continue;
    if (os.str().empty()) os << "\nreplay a failure of " << target << ", one case:\n";
    os << "  " << o.property << ": ckptspec replay --adapter " << ShellWord(command)
       << " --adapter-timeout " << timeout_s << " " << ShellWord(o.reproduce) << "\n";
  }
  return os.str();
}

}  // namespace ckptspec
