// The coverage table of cli/run_report.h.
#include <cstdio>
#include <map>
#include <string>

#include "cli/run_report.h"
#include "properties/scenario_classes.h"

namespace ckptspec {
namespace {

// The start of a row: the property id, padded to a column of 5.
std::string Lead(const std::string& property) {
  return "  " + property + std::string(property.size() < 5 ? 5 - property.size() : 1, ' ');
}

}  // namespace

std::string CoverageText(const std::vector<PropertyOutcome>& outcomes) {
  struct Counts {
    int64_t cases = 0;
    std::map<std::string, int64_t> tags;
  };
  std::map<std::string, Counts> by_property;  // every property the run ran
  for (const PropertyOutcome& o : outcomes) {
    Counts& c = by_property[o.property];
    if (o.verdict != Verdict::kPass) continue;
    c.cases += o.cases;
    for (const auto& [tag, n] : o.tag_counts) c.tags[tag] += n;
  }
  std::string out = "scenario classes (share of each property's passing cases, all targets; goal " +
                    std::to_string(static_cast<int>(kScenarioClassGoal * 100)) + " %):\n";
  int under = 0, measured = 0;
  for (const ScenarioClass& sc : ScenarioClasses()) {
    const auto it = by_property.find(sc.property);
    if (it == by_property.end()) continue;  // not run
    if (it->second.cases == 0) {
      out += Lead(sc.property) + "    -    " + sc.tag + "  (no passing cases)\n";
      continue;
    }
    const auto tag = it->second.tags.find(sc.tag);
    const int64_t n = tag == it->second.tags.end() ? 0 : tag->second;
    const double share = static_cast<double>(n) / static_cast<double>(it->second.cases);
    ++measured;
    const bool low = share < kScenarioClassGoal;
    under += low ? 1 : 0;
    char share_text[16];
    std::snprintf(share_text, sizeof share_text, "%5.1f %%", 100.0 * share);
    out +=
        Lead(sc.property) + share_text + "  " + sc.tag + (low ? "  (under the goal)" : "") + "\n";
  }
  out += std::to_string(under) + " of " + std::to_string(measured) +
         " measured classes under the goal\n";
  return out;
}

}  // namespace ckptspec
