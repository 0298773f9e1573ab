// The JSON report of cli/run_report.h.
#include "cli/run_report.h"

#include <nlohmann/json.hpp>

namespace ckptspec {

std::string OutcomesJson(const std::vector<PropertyOutcome>& outcomes, uint64_t seed,
                         const RunJudging& judging) {
  nlohmann::json j = {{"format", "ckptspec.run"}, {"version", 1}, {"seed", seed}};
  j["targets"] = nlohmann::json::array();
  for (const std::string& t : TargetsInOrder(outcomes)) {
    const TargetVerdict verdict = JudgeTarget(outcomes, t, judging);
    j["targets"].push_back({{"name", t},
                            {"expect", TargetExpectationName(ExpectationOf(t, judging))},
                            {"verdict", verdict.text},
                            {"met", verdict.met}});
  }
  j["outcomes"] = nlohmann::json::array();
  for (const PropertyOutcome& o : outcomes) {
    nlohmann::json e = {
        {"target", o.target}, {"property", o.property}, {"verdict", VerdictName(o.verdict)},
        {"cases", o.cases},   {"seconds", o.seconds},   {"message", o.message}};
    if (o.verdict == Verdict::kFail) {
      e["time_to_failure_s"] = o.time_to_failure_s;
      e["shrunk_size"] = o.shrunk_size;
      e["reproduce"] = o.reproduce;
      nlohmann::json ce = nlohmann::json::array();
      for (const auto& [name, value] : o.counterexample)
        ce.push_back({{"name", name}, {"value", value}});
      e["counterexample"] = ce;
    }
    if (!o.tag_counts.empty()) {
      nlohmann::json tags = nlohmann::json::object();
      for (const auto& [tag, n] : o.tag_counts) tags[tag] = n;
      e["tags"] = tags;
    }
    if (!o.known_hits.empty()) {
      nlohmann::json known = nlohmann::json::object();
      for (const auto& [finding, n] : o.known_hits) known[finding] = n;
      e["known_findings"] = known;  // cases set aside as each known finding's
    }
    const OutcomeJudgement judged = JudgeOutcome(o, judging);
    if (judged.expected) {
      e["expected"] = ExpectedName(judged.expected->expected);
      if (!judged.expected->reason.empty()) e["expected_reason"] = judged.expected->reason;
      if (!judged.expected->match.empty()) e["expected_match"] = judged.expected->match;
      e["matches"] = judged.meets;
    }
    j["outcomes"].push_back(e);
  }
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ckptspec
