#include "runner/expectations.h"

#include <nlohmann/json.hpp>

#include "model/json_fields.h"
#include "model/json_util.h"
#include "properties/property.h"

namespace ckptspec {
namespace {

using nlohmann::json;

bool ParseExpected(const std::string& name, Expected* out) {
  for (Expected e : {Expected::kPass, Expected::kFail, Expected::kNotApplicable}) {
    if (name == ExpectedName(e)) {
      *out = e;
      return true;
    }
  }
  return false;
}

Status ReadExpectation(const JsonField& f, Expectation* out) {
  CKPTSPEC_RETURN_IF_ERROR(f.ExpectOnlyMembers({"expect", "reason", "match"}));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("expect").GetEnum(ParseExpected, &out->expected));
  CKPTSPEC_RETURN_IF_ERROR(f.OptionalMember("reason").GetString(&out->reason));
  if (out->expected != Expected::kPass && out->reason.empty()) {
    return f.Error(std::string("an expected \"") + ExpectedName(out->expected) +
                   "\" needs a non-empty \"reason\"");
  }
  const JsonField match = f.OptionalMember("match");
  if (!match.present()) return Status::OK();
  if (out->expected != Expected::kFail) {
    return match.Error("only an expected \"fail\" has a \"match\"");
  }
  CKPTSPEC_RETURN_IF_ERROR(match.GetString(&out->match));
  if (out->match.empty()) return match.Expected("a non-empty string");
  return Status::OK();
}

Status ReadKnownFailure(const JsonField& e, Expectations* out) {
  CKPTSPEC_RETURN_IF_ERROR(e.ExpectOnlyMembers({"finding", "match", "reason"}));
  KnownFailure k;
  std::string reason;
  CKPTSPEC_RETURN_IF_ERROR(e.Member("finding").GetString(&k.finding));
  CKPTSPEC_RETURN_IF_ERROR(e.Member("match").GetString(&k.match));
  CKPTSPEC_RETURN_IF_ERROR(e.Member("reason").GetString(&reason));
  if (k.finding.empty() || k.match.empty() || reason.empty()) {
    return e.Error("\"finding\", \"match\" and \"reason\" must not be empty");
  }
  out->known.push_back(std::move(k));
  out->known_reasons.push_back(std::move(reason));
  return Status::OK();
}

Status ReadExpectations(const JsonField& root, Expectations* out) {
  CKPTSPEC_RETURN_IF_ERROR(
      root.ExpectOnlyMembers({"format", "version", "properties", "extends", "known"}));
  const JsonField format = root.Member("format");
  std::string format_name;
  CKPTSPEC_RETURN_IF_ERROR(format.GetString(&format_name));
  if (format_name != "ckptspec.expectations") {
    return format.Expected("\"ckptspec.expectations\"");
  }
  const JsonField version = root.Member("version");
  int64_t version_number = 0;
  CKPTSPEC_RETURN_IF_ERROR(version.GetInt64(&version_number));
  if (version_number != 1) return version.Expected("1");
  const JsonField extends = root.OptionalMember("extends");
  CKPTSPEC_RETURN_IF_ERROR(extends.GetString(&out->extends));
  const std::string& name = out->extends;
  if (extends.present() && (name.empty() || name == "." || name == ".." ||
                            name.find('/') != std::string::npos || name.size() > 255)) {
    return extends.Expected("the name of a file in the same directory");
  }
  CKPTSPEC_RETURN_IF_ERROR(
      root.OptionalMember("properties")
          .ForEachMember([out](const std::string& property, const JsonField& f) {
            if (FindProperty(property) == nullptr) {
              return f.Error("no such property");
            }
            return ReadExpectation(f, &out->properties[property]);
          }));
  return root.OptionalMember("known").ForEachElement(
      [out](const JsonField& e) { return ReadKnownFailure(e, out); });
}

bool Failed(Verdict v) {
  return v == Verdict::kFail || v == Verdict::kError || v == Verdict::kGaveUp;
}

}  // namespace

const char* ExpectedName(Expected expected) {
  switch (expected) {
    case Expected::kPass:
      return "pass";
    case Expected::kFail:
      return "fail";
    case Expected::kNotApplicable:
      return "n/a";
  }
  return "?";
}

const Expectation& Expectations::For(const std::string& property) const {
  static const Expectation kPass;
  auto it = properties.find(property);
  return it == properties.end() ? kPass : it->second;
}

Status ParseExpectations(const std::string& text, const std::string& source, Expectations* out) {
  json j;
  const Status read = ParseJson(text, JsonLimits(), &j);
  if (!read.ok()) return Status::InvalidArgument(source + ": " + read.message());
  Expectations result;
  result.source = source;
  CKPTSPEC_RETURN_IF_ERROR(ReadExpectations(JsonField(j), &result).WithContext(source));
  *out = std::move(result);
  return Status::OK();
}

Status ApplyBase(const Expectations& base, Expectations* own) {
  for (const auto& [property, expectation] : base.properties) {
    own->properties.emplace(property, expectation);  // the file's own entry wins
  }
  own->known.insert(own->known.begin(), base.known.begin(), base.known.end());
  own->known_reasons.insert(own->known_reasons.begin(), base.known_reasons.begin(),
                            base.known_reasons.end());
  return Status::OK();
}

Judgement Judge(const Expectation& expectation, const PropertyOutcome& outcome) {
  const bool na = outcome.verdict == Verdict::kNotApplicable;
  const bool failed = Failed(outcome.verdict);
  switch (expectation.expected) {
    case Expected::kPass:
      if (na) return {false, "UNEXPECTED n/a", 'N'};
      return failed ? Judgement{false, "UNEXPECTED FAIL", 'F'} : Judgement{true, "pass", '.'};
    case Expected::kFail:
      if (na) return {false, "UNEXPECTED n/a", 'N'};
      if (!failed) return {false, "UNEXPECTED pass", 'P'};
      if (outcome.message.find(expectation.match) == std::string::npos) {
        return {false, "UNEXPECTED FAIL for another reason", 'F'};
      }
      return {true, "xfail", 'x'};
    case Expected::kNotApplicable:
      if (na) return {true, "n/a", '-'};
      return failed ? Judgement{false, "UNEXPECTED FAIL", 'F'}
                    : Judgement{false, "UNEXPECTED pass", 'P'};
  }
  return {false, "?", '?'};
}

}  // namespace ckptspec
