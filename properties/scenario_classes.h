// The scenario classes each catalog property's generator should reach: the one list of them.
//
// A class is a tag the property's cases carry (RC_TAG or RC_CLASSIFY in the property's source);
// its share is the fraction of a run's passing cases that carried it. `ckptspec run --coverage`
// prints every class with its share (cli/run_report.h CoverageText) and marks those under
// kScenarioClassGoal, so a generator that stops reaching a class, or a tag renamed in a
// property's source, shows as a class at 0 %.
#pragma once

#include <string>
#include <vector>

namespace ckptspec {

struct ScenarioClass {
  const char* property;  // "P3"
  const char* tag;       // as the property tags its cases, e.g. "DP changed"
};

// The share every class should reach (5 % of a property's cases).
inline constexpr double kScenarioClassGoal = 0.05;

// Every property's classes, in catalog order, each property's classes in the order listed.
const std::vector<ScenarioClass>& ScenarioClasses();

// A tag as RapidCheck reports it (a string tag arrives quoted, as rc::toString prints it) in the
// form the table uses: the surrounding quotes removed.
std::string UnquoteTag(const std::string& tag);

}  // namespace ckptspec
