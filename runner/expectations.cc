#include "runner/expectations.h"

#include <nlohmann/json.hpp>

#include "model/json_fields.h"
#include "model/json_util.h"
#include "properties/property.h"

namespace ckptspec {
namespace {

using nlohmann::json;

Status Error(const std::string& source, const std::string& where, const std::string& what) {
  return Status::InvalidArgument(source + ": " + where + ": " + what);
}

Status ReadExpectation(const json& value, const std::string& source, const std::string& where,
                       Expectation* out) {
  if (!value.is_object())
    return Error(source, where, "expected an object, got " + JsonPreview(value));
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it.key() != "expect" && it.key() != "reason" && it.key() != "match") {
      return Error(source, where, "unknown member " + JsonPreview(json(it.key())));
    }
  }
  auto expect = value.find("expect");
  if (expect == value.end() || !expect->is_string()) {
    return Error(source, where + ".expect", "expected \"pass\", \"fail\" or \"n/a\"");
  }
  const std::string e = expect->get<std::string>();
  if (e == "pass") {
    out->expected = Expected::kPass;
  } else if (e == "fail") {
    out->expected = Expected::kFail;
  } else if (e == "n/a") {
    out->expected = Expected::kNotApplicable;
  } else {
    return Error(source, where + ".expect",
                 "expected \"pass\", \"fail\" or \"n/a\", got " + JsonPreview(*expect));
  }
  auto reason = value.find("reason");
  if (reason != value.end()) {
    if (!reason->is_string())
      return Error(source, where + ".reason", "expected a string, got " + JsonPreview(*reason));
    out->reason = reason->get<std::string>();
  }
  if (out->expected != Expected::kPass && out->reason.empty()) {
    return Error(source, where, "an expected \"" + e + "\" needs a non-empty \"reason\"");
  }
  auto match = value.find("match");
  if (match != value.end()) {
    if (out->expected != Expected::kFail) {
      return Error(source, where + ".match", "only an expected \"fail\" has a \"match\"");
    }
    if (!match->is_string() || match->get<std::string>().empty()) {
      return Error(source, where + ".match",
                   "expected a non-empty string, got " + JsonPreview(*match));
    }
    out->match = match->get<std::string>();
  }
  return Status::OK();
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
  if (!j.is_object()) return Error(source, "(root)", "expected an object, got " + JsonPreview(j));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "format" && it.key() != "version" && it.key() != "properties" &&
        it.key() != "extends" && it.key() != "known") {
      return Error(source, "(root)", "unknown member " + JsonPreview(json(it.key())));
    }
  }
  if (j.value("format", json()) != json("ckptspec.expectations")) {
    return Error(source, "format", "expected \"ckptspec.expectations\"");
  }
  if (j.value("version", json()) != json(1)) return Error(source, "version", "expected 1");
  Expectations result;
  result.source = source;
  auto extends = j.find("extends");
  if (extends != j.end()) {
    if (!extends->is_string()) {
      return Error(source, "extends", "expected a file name, got " + JsonPreview(*extends));
    }
    const std::string name = extends->get<std::string>();
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
        name.size() > 255) {
      return Error(
          source, "extends",
          "expected the name of a file in the same directory, got " + JsonPreview(*extends));
    }
    result.extends = name;
  }
  auto properties = j.find("properties");
  if (properties != j.end()) {
    if (!properties->is_object()) {
      return Error(source, "properties", "expected an object, got " + JsonPreview(*properties));
    }
    for (auto it = properties->begin(); it != properties->end(); ++it) {
      const std::string where = "properties." + it.key();
      if (FindProperty(it.key()) == nullptr) return Error(source, where, "no such property");
      CKPTSPEC_RETURN_IF_ERROR(
          ReadExpectation(it.value(), source, where, &result.properties[it.key()]));
    }
  }
  const JsonField root(j);
  const Status known = root.OptionalMember("known").ForEachElement([&result](const JsonField& e) {
    CKPTSPEC_RETURN_IF_ERROR(e.ExpectOnlyMembers({"finding", "match", "reason"}));
    KnownFailure k;
    std::string reason;
    CKPTSPEC_RETURN_IF_ERROR(e.Member("finding").GetString(&k.finding));
    CKPTSPEC_RETURN_IF_ERROR(e.Member("match").GetString(&k.match));
    CKPTSPEC_RETURN_IF_ERROR(e.Member("reason").GetString(&reason));
    if (k.finding.empty() || k.match.empty() || reason.empty()) {
      return e.Error("\"finding\", \"match\" and \"reason\" must not be empty");
    }
    result.known.push_back(std::move(k));
    result.known_reasons.push_back(std::move(reason));
    return Status::OK();
  });
  if (!known.ok()) return Status::InvalidArgument(source + ": " + known.message());
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
