// The JUnit XML report of cli/run_report.h.
#include "cli/run_report.h"

#include <sstream>

namespace ckptspec {

namespace {

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
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

// How JUnit shows an outcome: failed (it does not meet its target's expectation), skipped (n/a, or
// a failure or n/a the file expects), or passed; with the reason. A mutant's outcomes are never
// failures (its kill is judged by a case of its own).
enum class JUnitKind { kPassed, kSkipped, kFailed };
JUnitKind JUnitKindOf(const PropertyOutcome& o, const OutcomeJudgement& j, std::string* why) {
  if (j.held_to != TargetExpectation::kKilled && !j.meets) {
    *why = j.words;
    return JUnitKind::kFailed;
  }
  if (j.expected) {
    if (j.expected->expected == Expected::kPass) return JUnitKind::kPassed;
    *why =
        (j.expected->expected == Expected::kFail ? "expected failure: " : "") + j.expected->reason;
    return JUnitKind::kSkipped;
  }
  if (o.verdict == Verdict::kNotApplicable) {
    *why = o.message;
    return JUnitKind::kSkipped;
  }
  return JUnitKind::kPassed;
}

}  // namespace

std::string OutcomesJUnit(const std::vector<PropertyOutcome>& outcomes, const RunJudging& judging) {
  int tests = 0, failures = 0, skipped = 0;
  std::string why;
  std::ostringstream cases;
  for (const PropertyOutcome& o : outcomes) {
    const JUnitKind kind = JUnitKindOf(o, JudgeOutcome(o, judging), &why);
    ++tests;
    cases << "  <testcase classname=\"" << XmlEscape(o.target) << "\" name=\""
          << XmlEscape(o.property) << "\" time=\"" << o.seconds << "\">";
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
    if (ExpectationOf(t, judging) != TargetExpectation::kKilled) continue;
    ++tests;
    cases << "  <testcase classname=\"" << XmlEscape(t) << "\" name=\"killed\">";
    if (!JudgeTarget(outcomes, t, judging).met) {
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

}  // namespace ckptspec
