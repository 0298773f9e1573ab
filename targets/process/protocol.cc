#include "targets/process/protocol.h"

#include <utility>

#include "model/json_fields.h"
#include "model/json_util.h"
#include "model/signature_json.h"

namespace ckptspec {
namespace {

using nlohmann::json;

// The optional "offset" and "length" of an entry (revision 4): both or neither, integers >= 0
// whose sum is at most INT64_MAX.
Status ReadRange(const JsonField& entry, std::optional<FileRange>* out) {
  out->reset();
  const JsonField offset = entry.OptionalMember("offset");
  const JsonField length = entry.OptionalMember("length");
  if (!offset.present() && !length.present()) return Status::OK();
  if (!offset.present() || !length.present()) {
    return entry.Error(std::string("\"offset\" and \"length\" come together, got only \"") +
                       (offset.present() ? "offset" : "length") + "\"");
  }
  int64_t o = 0, n = 0;
  CKPTSPEC_RETURN_IF_ERROR(offset.GetNonNegativeInt64(&o));
  CKPTSPEC_RETURN_IF_ERROR(length.GetNonNegativeInt64(&n));
  if (n > INT64_MAX - o) return length.Expected("a length whose range ends before 2^63");
  *out = FileRange{static_cast<uint64_t>(o), static_cast<uint64_t>(n)};
  return Status::OK();
}

void RangeToJson(const std::optional<FileRange>& range, json* entry) {
  if (!range) return;
  (*entry)["offset"] = range->offset;
  (*entry)["length"] = range->length;
}

// The optional array `list` of entries, each an object with "file" and maybe a range; the entry
// without its wire-only members ("file", "offset", "length"; a save tensor's "placement", read by
// ReadPlacements) goes to the signature reader, its errors after the entry's path.
template <typename Wire, typename Reader>
Status ReadEntries(const JsonField& list, Reader read, std::vector<Wire>* out) {
  out->clear();
  CKPTSPEC_RETURN_IF_ERROR(list.ExpectArray());
  out->resize(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const JsonField entry = list.Element(i);
    CKPTSPEC_RETURN_IF_ERROR(entry.ExpectObject());
    CKPTSPEC_RETURN_IF_ERROR(entry.Member("file").GetString(&(*out)[i].file));
    CKPTSPEC_RETURN_IF_ERROR(ReadRange(entry, &(*out)[i].range));
    json spec = entry.value();
    for (const char* wire_only : {"file", "offset", "length", "placement"}) spec.erase(wire_only);
    CKPTSPEC_RETURN_IF_ERROR(read(spec, &(*out)[i].spec).WithContext(entry.Path()));
  }
  return Status::OK();
}

template <typename Wire, typename Writer>
json EntriesToJson(const std::vector<Wire>& entries, Writer write) {
  json list = json::array();
  for (const Wire& e : entries) {
    json j = write(e.spec);
    j["file"] = e.file;
    RangeToJson(e.range, &j);
    list.push_back(std::move(j));
  }
  return list;
}

struct CapabilityField {
  const char* name;
  bool Capabilities::*member;
};
constexpr CapabilityField kCapabilityFields[] = {
    {"resharding", &Capabilities::resharding},
    {"objects", &Capabilities::objects},
    {"async", &Capabilities::async},
    {"checksums", &Capabilities::checksums},
    {"plan_cache", &Capabilities::plan_cache},
    {"deterministic", &Capabilities::deterministic},
    {"strict_modes", &Capabilities::strict_modes},
};

// The harness's own capabilities in hello (not the engine's): revision 2's reset, revision 3's
// poll, revision 4's packed, revision 6's regroup; and revision 5's framework, which brings the
// member "framework" along.
struct HelloFlag {
  const char* name;
  bool HelloReply::*member;
};
constexpr HelloFlag kHelloFlags[] = {
    {"reset", &HelloReply::reset},
    {"poll", &HelloReply::poll},
    {"packed", &HelloReply::packed},
    {"regroup", &HelloReply::regroup},
};
constexpr const char* kFrameworkFlag = "framework";

bool IsHelloFlag(const std::string& name) {
  for (const HelloFlag& f : kHelloFlags) {
    if (name == f.name) return true;
  }
  return name == kFrameworkFlag;
}

// The engine's capabilities: each member of `caps` one of kCapabilityFields, a boolean, except the
// harness's flags when `in_hello` (read by HelloReplyFromJson).
Status ReadCapabilities(const JsonField& caps, bool in_hello, Capabilities* out) {
  Capabilities c;
  CKPTSPEC_RETURN_IF_ERROR(
      caps.ForEachMember([&](const std::string& name, const JsonField& value) -> Status {
        for (const CapabilityField& f : kCapabilityFields) {
          if (name == f.name) return value.GetBool(&(c.*f.member));
        }
        if (in_hello && IsHelloFlag(name)) return Status::OK();
        return caps.UnknownMember(name);
      }));
  *out = c;
  return Status::OK();
}

bool ParsePlacement(const std::string& name, Placement* out) {
  for (Placement p : {Placement::kDevice, Placement::kHost}) {
    if (name == PlacementName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

// The Status codes an error member may name: all but OK and OutOfMemory (the harness's own).
constexpr Status::Code kErrorCodes[] = {
    Status::Code::kInvalidArgument, Status::Code::kNotFound,     Status::Code::kCorruption,
    Status::Code::kIOError,         Status::Code::kNotSupported, Status::Code::kFailedPrecondition,
};

bool ParseErrorCode(const std::string& name, Status::Code* out) {
  for (Status::Code c : kErrorCodes) {
    if (name == StatusCodeName(c)) {
      *out = c;
      return true;
    }
  }
  return false;
}

Status MakeStatus(Status::Code code, std::string message) {
  using Code = Status::Code;
  switch (code) {
    case Code::kInvalidArgument:
      return Status::InvalidArgument(std::move(message));
    case Code::kNotFound:
      return Status::NotFound(std::move(message));
    case Code::kCorruption:
      return Status::Corruption(std::move(message));
    case Code::kIOError:
      return Status::IOError(std::move(message));
    case Code::kNotSupported:
      return Status::NotSupported(std::move(message));
    default:
      return Status::FailedPrecondition(std::move(message));
  }
}

}  // namespace

json CapabilitiesToJson(const Capabilities& c) {
  json j = json::object();
  for (const CapabilityField& f : kCapabilityFields) j[f.name] = c.*f.member;
  return j;
}

Status CapabilitiesFromJson(const json& value, Capabilities* out) {
  return ReadCapabilities(JsonField(value, "capabilities"), false, out);
}

void HelloReplyToJson(const HelloReply& hello, json* reply) {
  (*reply)["protocol"] = hello.protocol;
  (*reply)["adapter"] = hello.adapter;
  (*reply)["capabilities"] = CapabilitiesToJson(hello.capabilities);
  for (const HelloFlag& f : kHelloFlags) {
    if (hello.*f.member) (*reply)["capabilities"][f.name] = true;
  }
  if (hello.framework) {
    (*reply)["capabilities"][kFrameworkFlag] = true;
    (*reply)["framework"] = FrameworkSupportToJson(*hello.framework);
  }
}

Status HelloReplyFromJson(const json& reply, HelloReply* out) {
  const JsonField hello(reply, "hello");
  const JsonField protocol = hello.Member("protocol");
  int64_t version = 0;
  CKPTSPEC_RETURN_IF_ERROR(protocol.GetInt64(&version));
  if (version != kProtocolVersion) {
    return protocol.Error("the adapter speaks version " + std::to_string(version) +
                          ", the harness version " + std::to_string(kProtocolVersion));
  }
  out->protocol = static_cast<int>(version);
  out->adapter.clear();
  CKPTSPEC_RETURN_IF_ERROR(hello.OptionalMember("adapter").GetString(&out->adapter));
  const JsonField caps = hello.Member("capabilities");
  CKPTSPEC_RETURN_IF_ERROR(caps.ExpectObject());
  for (const HelloFlag& f : kHelloFlags) {
    out->*f.member = false;
    CKPTSPEC_RETURN_IF_ERROR(caps.OptionalMember(f.name).GetBool(&(out->*f.member)));
  }
  out->framework.reset();
  bool framework = false;
  CKPTSPEC_RETURN_IF_ERROR(caps.OptionalMember(kFrameworkFlag).GetBool(&framework));
  if (framework) {
    FrameworkSupport support;
    CKPTSPEC_RETURN_IF_ERROR(FrameworkSupportFromJson(hello.Member("framework"), &support));
    out->framework = std::move(support);
  }
  if (out->regroup && !out->reset) return caps.Error("regroup is declared without reset");
  return ReadCapabilities(caps, true, &out->capabilities);
}

void SaveCallToJson(const SaveCall& call, json* request) {
  json& r = *request;
  r["directory"] = call.directory;
  r["iteration"] = call.iteration;
  r["validate"] = call.options.validate;
  r["assume_constant_structure"] = call.options.assume_constant_structure;
  r["async"] = call.options.async;
  r["layout"] = call.options.layout;
  r["tensors"] = EntriesToJson(call.tensors, TensorSpecToJson);
  for (size_t i = 0; i < call.tensors.size(); ++i) {
    r["tensors"][i]["placement"] =
        PlacementName(i < call.placements.size() ? call.placements[i] : Placement::kDevice);
  }
  r["objects"] = EntriesToJson(call.objects, ObjectSpecToJson);
  r["common"] = call.common;
}

namespace {

// The optional "placement" member of each entry of `tensors` (read by ReadEntries before), "device"
// when absent, into *placements.
Status ReadPlacements(const JsonField& tensors, std::vector<Placement>* placements) {
  placements->assign(tensors.size(), Placement::kDevice);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const JsonField entry = tensors.Element(i);
    CKPTSPEC_RETURN_IF_ERROR(
        entry.OptionalMember("placement").GetEnum(ParsePlacement, &(*placements)[i]));
  }
  return Status::OK();
}

}  // namespace

Status SaveCallFromJson(const json& r, SaveCall* out) {
  const JsonField save(r, "save");
  CKPTSPEC_RETURN_IF_ERROR(save.ExpectObject());
  CKPTSPEC_RETURN_IF_ERROR(save.Member("directory").GetString(&out->directory));
  CKPTSPEC_RETURN_IF_ERROR(save.Member("iteration").GetInt64(&out->iteration));
  out->options = SaveOptions();
  CKPTSPEC_RETURN_IF_ERROR(save.OptionalMember("validate").GetBool(&out->options.validate));
  CKPTSPEC_RETURN_IF_ERROR(save.OptionalMember("assume_constant_structure")
                               .GetBool(&out->options.assume_constant_structure));
  CKPTSPEC_RETURN_IF_ERROR(save.OptionalMember("async").GetBool(&out->options.async));
  const JsonField layout = save.OptionalMember("layout");
  if (layout.present()) out->options.layout = layout.value();
  const JsonField tensors = save.OptionalMember("tensors");
  CKPTSPEC_RETURN_IF_ERROR(ReadEntries(tensors, TensorSpecFromJson, &out->tensors));
  CKPTSPEC_RETURN_IF_ERROR(ReadPlacements(tensors, &out->placements));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadEntries(save.OptionalMember("objects"), ObjectSpecFromJson, &out->objects));
  const JsonField common = save.OptionalMember("common");
  out->common = common.present() ? common.value() : json::object();
  return Status::OK();
}

void PollCallToJson(const PollCall& call, json* request) {
  json updates = json::array();
  for (const PollUpdate& u : call.updates) {
    json update = {{"index", u.index}, {"file", u.file}};
    RangeToJson(u.range, &update);
    updates.push_back(std::move(update));
  }
  (*request)["tensors"] = std::move(updates);
}

Status PollCallFromJson(const json& r, PollCall* out) {
  const JsonField poll(r, "poll");
  CKPTSPEC_RETURN_IF_ERROR(poll.ExpectObject());
  out->updates.clear();
  return poll.OptionalMember("tensors").ForEachElement([out](const JsonField& entry) {
    CKPTSPEC_RETURN_IF_ERROR(entry.ExpectObject());
    PollUpdate u;
    CKPTSPEC_RETURN_IF_ERROR(entry.Member("index").GetNonNegativeInt64(&u.index));
    CKPTSPEC_RETURN_IF_ERROR(entry.Member("file").GetString(&u.file));
    CKPTSPEC_RETURN_IF_ERROR(ReadRange(entry, &u.range));
    out->updates.push_back(std::move(u));
    return Status::OK();
  });
}

void PollReplyToJson(const PollReply& poll, json* reply) { (*reply)["complete"] = poll.complete; }

Status PollReplyFromJson(const json& r, PollReply* out) {
  const JsonField reply(r, "poll reply");
  return reply.Member("complete").GetBool(&out->complete);
}

void LoadCallToJson(const LoadCall& call, json* request) {
  json& r = *request;
  r["directory"] = call.directory;
  r["iteration"] = call.iteration ? json(*call.iteration) : json(nullptr);
  r["strict"] = StrictModeName(call.strict);
  r["allow_shape_mismatch"] = call.allow_shape_mismatch;
  r["tensors"] = EntriesToJson(call.tensors, TensorSpecToJson);
  r["objects"] = EntriesToJson(call.objects, ObjectSpecToJson);
}

Status LoadCallFromJson(const json& r, LoadCall* out) {
  const JsonField load(r, "load");
  CKPTSPEC_RETURN_IF_ERROR(load.ExpectObject());
  CKPTSPEC_RETURN_IF_ERROR(load.Member("directory").GetString(&out->directory));
  out->iteration.reset();
  const JsonField iteration = load.OptionalMember("iteration");
  if (iteration.present() && !iteration.is_null()) {
    int64_t i = 0;
    CKPTSPEC_RETURN_IF_ERROR(iteration.GetInt64(&i));
    out->iteration = i;
  }
  out->strict = StrictMode::kAssumeOkUnexpected;
  CKPTSPEC_RETURN_IF_ERROR(load.OptionalMember("strict").GetEnum(ParseStrictMode, &out->strict));
  out->allow_shape_mismatch = false;
  CKPTSPEC_RETURN_IF_ERROR(
      load.OptionalMember("allow_shape_mismatch").GetBool(&out->allow_shape_mismatch));
  CKPTSPEC_RETURN_IF_ERROR(
      ReadEntries(load.OptionalMember("tensors"), TensorSpecFromJson, &out->tensors));
  return ReadEntries(load.OptionalMember("objects"), ObjectSpecFromJson, &out->objects);
}

void LoadReplyToJson(const LoadReply& load, json* reply) {
  json& r = *reply;
  r["iteration"] = load.iteration;
  r["common"] = load.common;
  r["dropped"] = load.dropped;
  r["unexpected"] = load.unexpected;
  r["missing"] = load.missing;
  r["warnings"] = load.warnings;
}

Status LoadReplyFromJson(const json& r, LoadReply* out) {
  const JsonField reply(r, "load reply");
  CKPTSPEC_RETURN_IF_ERROR(reply.Member("iteration").GetInt64(&out->iteration));
  const JsonField common = reply.Member("common");
  CKPTSPEC_RETURN_IF_ERROR(common.ExpectObject());
  out->common = common.value();
  // The lists may be left out when empty.
  for (auto [name, list] :
       {std::pair{"dropped", &out->dropped}, std::pair{"unexpected", &out->unexpected},
        std::pair{"missing", &out->missing}, std::pair{"warnings", &out->warnings}}) {
    list->clear();
    CKPTSPEC_RETURN_IF_ERROR(reply.OptionalMember(name).GetStringArray(list));
  }
  return Status::OK();
}

json ErrorToJson(const Status& status) {
  return json{{"code", StatusCodeName(status.code())}, {"message", status.message()}};
}

Status ErrorFromJson(const json& error, Status* out) {
  const JsonField e(error, "error");
  Status::Code code = Status::Code::kInvalidArgument;
  std::string message;
  CKPTSPEC_RETURN_IF_ERROR(e.Member("code").GetEnum(ParseErrorCode, &code));
  CKPTSPEC_RETURN_IF_ERROR(e.Member("message").GetString(&message));
  *out = MakeStatus(code, std::move(message));
  return Status::OK();
}

std::string DumpLine(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ckptspec
