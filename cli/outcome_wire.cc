#include "cli/outcome_wire.h"

#include <cstdint>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_fields.h"

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

namespace {

Status Get(const JsonField& f, std::string* out) { return f.GetString(out); }
Status Get(const JsonField& f, int* out) { return f.GetInt(out); }

// A vector of pairs as nlohmann writes it: [[first, second], ...].
template <typename First, typename Second>
Status GetPairs(const JsonField& f, std::vector<std::pair<First, Second>>* out) {
  out->clear();
  return f.ForEachElement([out](const JsonField& pair) {
    CKPTSPEC_RETURN_IF_ERROR(pair.ExpectArrayOfSize(2));
    std::pair<First, Second> p;
    CKPTSPEC_RETURN_IF_ERROR(Get(pair.Element(0), &p.first));
    CKPTSPEC_RETURN_IF_ERROR(Get(pair.Element(1), &p.second));
    out->push_back(std::move(p));
    return Status::OK();
  });
}

Status ReadOutcome(const JsonField& f, PropertyOutcome* o) {
  CKPTSPEC_RETURN_IF_ERROR(f.Member("property").GetString(&o->property));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("target").GetString(&o->target));
  int64_t verdict = 0;
  CKPTSPEC_RETURN_IF_ERROR(f.Member("verdict").GetInt64(
      static_cast<int64_t>(Verdict::kPass), static_cast<int64_t>(Verdict::kError), &verdict));
  o->verdict = static_cast<Verdict>(verdict);
  CKPTSPEC_RETURN_IF_ERROR(f.Member("cases").GetInt(&o->cases));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("seconds").GetDouble(&o->seconds));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("time_to_failure_s").GetDouble(&o->time_to_failure_s));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("message").GetString(&o->message));
  CKPTSPEC_RETURN_IF_ERROR(GetPairs(f.Member("counterexample"), &o->counterexample));
  uint64_t shrunk_size = 0;
  CKPTSPEC_RETURN_IF_ERROR(f.Member("shrunk_size").GetUint64(&shrunk_size));
  o->shrunk_size = static_cast<size_t>(shrunk_size);
  CKPTSPEC_RETURN_IF_ERROR(f.Member("reproduce").GetString(&o->reproduce));
  CKPTSPEC_RETURN_IF_ERROR(GetPairs(f.Member("tag_counts"), &o->tag_counts));
  return GetPairs(f.Member("known_hits"), &o->known_hits);
}

}  // namespace

Status DecodeOutcome(const std::string& bytes, PropertyOutcome* out) {
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded()) return Status::Corruption("a worker's outcome is not JSON");
  PropertyOutcome o;
  CKPTSPEC_RETURN_IF_ERROR(AsCorruption(ReadOutcome(JsonField(j, "worker outcome"), &o)));
  *out = std::move(o);
  return Status::OK();
}

}  // namespace ckptspec
