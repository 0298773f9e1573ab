#include "cli/outcome_wire.h"

#include <nlohmann/json.hpp>

namespace ckptspec {

std::string EncodeOutcome(const PropertyOutcome& o) {
  nlohmann::json j;
  j["property"] = o.property;
  j["target"] = o.target;
  j["verdict"] = static_cast<int>(o.verdict);
  j["cases"] = o.cases;
  j["seconds"] = o.seconds;
  j["time_to_failure_s"] = o.time_to_failure_s;
  j["message"] = o.message;
  j["counterexample"] = o.counterexample;
  j["shrunk_size"] = o.shrunk_size;
  j["reproduce"] = o.reproduce;
  j["tag_counts"] = o.tag_counts;
  j["known_hits"] = o.known_hits;
  // Messages hold whatever a target printed: invalid UTF-8 is replaced, never thrown on.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status DecodeOutcome(const std::string& bytes, PropertyOutcome* out) {
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (!j.is_object()) return Status::Corruption("a worker's outcome is not a JSON object");
  PropertyOutcome o;
  try {
    o.property = j.at("property").get<std::string>();
    o.target = j.at("target").get<std::string>();
    const int verdict = j.at("verdict").get<int>();
    if (verdict < static_cast<int>(Verdict::kPass) || verdict > static_cast<int>(Verdict::kError)) {
      return Status::Corruption("a worker's outcome has verdict " + std::to_string(verdict));
    }
    o.verdict = static_cast<Verdict>(verdict);
    o.cases = j.at("cases").get<int>();
    o.seconds = j.at("seconds").get<double>();
    o.time_to_failure_s = j.at("time_to_failure_s").get<double>();
    o.message = j.at("message").get<std::string>();
    o.counterexample =
        j.at("counterexample").get<std::vector<std::pair<std::string, std::string>>>();
    o.shrunk_size = j.at("shrunk_size").get<size_t>();
    o.reproduce = j.at("reproduce").get<std::string>();
    o.tag_counts = j.at("tag_counts").get<std::vector<std::pair<std::string, int>>>();
    o.known_hits = j.at("known_hits").get<std::vector<std::pair<std::string, int>>>();
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(std::string("a worker's outcome does not decode: ") + e.what());
  }
  *out = std::move(o);
  return Status::OK();
}

}  // namespace ckptspec
