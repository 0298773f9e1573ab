#include "targets/process/protocol.h"

#include <utility>

#include "model/json_fields.h"
#include "model/json_util.h"
#include "model/signature_json.h"

namespace ckptspec {
namespace {

using nlohmann::json;

// Field readers: `where` names the member in errors ("save.iteration").
Status Bad(const std::string& where, const std::string& what, const json& got) {
  return Status::InvalidArgument(where + ": expected " + what + ", got " + JsonPreview(got));
}

const json* Find(const json& object, const char* name) {
  auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

Status Need(const json& object, const std::string& where, const char* name, const json** out) {
  *out = Find(object, name);
  if (*out == nullptr) return Status::InvalidArgument(where + ": missing member \"" + name + "\"");
  return Status::OK();
}

Status GetString(const json& object, const std::string& where, const char* name, std::string* out) {
  const json* m;
  CKPTSPEC_RETURN_IF_ERROR(Need(object, where, name, &m));
  if (!m->is_string()) return Bad(where + "." + name, "a string", *m);
  *out = m->get<std::string>();
  return Status::OK();
}

Status GetInt(const json& object, const std::string& where, const char* name, int64_t* out) {
  const json* m;
  CKPTSPEC_RETURN_IF_ERROR(Need(object, where, name, &m));
  if (!m->is_number_integer()) return Bad(where + "." + name, "an integer", *m);
  if (m->is_number_unsigned() && m->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Bad(where + "." + name, "a 64-bit integer", *m);
  }
  *out = m->get<int64_t>();
  return Status::OK();
}

// An optional boolean: absent leaves *out as it is.
Status GetBool(const json& object, const std::string& where, const char* name, bool* out) {
  const json* m = Find(object, name);
  if (m == nullptr) return Status::OK();
  if (!m->is_boolean()) return Bad(where + "." + name, "true or false", *m);
  *out = m->get<bool>();
  return Status::OK();
}

// An optional array of strings: absent means empty.
Status GetStrings(const json& object, const std::string& where, const char* name,
                  std::vector<std::string>* out) {
  out->clear();
  const json* m = Find(object, name);
  if (m == nullptr) return Status::OK();
  if (!m->is_array()) return Bad(where + "." + name, "an array of strings", *m);
  for (size_t i = 0; i < m->size(); ++i) {
    if (!(*m)[i].is_string()) {
      return Bad(where + "." + name + "[" + std::to_string(i) + "]", "a string", (*m)[i]);
    }
    out->push_back((*m)[i].get<std::string>());
  }
  return Status::OK();
}

// The optional "offset" and "length" of an entry at `at` (revision 4): both or neither, integers
// >= 0 whose sum is at most INT64_MAX.
Status GetRange(const json& entry, const std::string& at, std::optional<FileRange>* out) {
  out->reset();
  const json* offset = Find(entry, "offset");
  const json* length = Find(entry, "length");
  if (offset == nullptr && length == nullptr) return Status::OK();
  if (offset == nullptr || length == nullptr) {
    return Status::InvalidArgument(at + ": \"offset\" and \"length\" come together, got only \"" +
                                   (offset ? "offset" : "length") + "\"");
  }
  int64_t o = 0, n = 0;
  CKPTSPEC_RETURN_IF_ERROR(GetInt(entry, at, "offset", &o));
  CKPTSPEC_RETURN_IF_ERROR(GetInt(entry, at, "length", &n));
  if (o < 0) return Bad(at + ".offset", "an offset >= 0", *offset);
  if (n < 0) return Bad(at + ".length", "a length >= 0", *length);
  if (n > INT64_MAX - o) return Bad(at + ".length", "a range that ends before 2^63", *length);
  *out = FileRange{static_cast<uint64_t>(o), static_cast<uint64_t>(n)};
  return Status::OK();
}

void RangeToJson(const std::optional<FileRange>& range, json* entry) {
  if (!range) return;
  (*entry)["offset"] = range->offset;
  (*entry)["length"] = range->length;
}

// The entry without its wire-only members ("file", "offset", "length"; a save tensor's
// "placement", read by ReadPlacements) goes to the signature reader.
template <typename Wire, typename Reader>
Status GetEntries(const json& object, const std::string& where, const char* name, Reader read,
                  std::vector<Wire>* out) {
  out->clear();
  const json* m = Find(object, name);
  if (m == nullptr) return Status::OK();
  const std::string list = where + "." + name;
  if (!m->is_array()) return Bad(list, "an array of entries", *m);
  out->resize(m->size());
  for (size_t i = 0; i < m->size(); ++i) {
    const std::string at = list + "[" + std::to_string(i) + "]";
    const json& entry = (*m)[i];
    if (!entry.is_object()) return Bad(at, "an object", entry);
    CKPTSPEC_RETURN_IF_ERROR(GetString(entry, at, "file", &(*out)[i].file));
    CKPTSPEC_RETURN_IF_ERROR(GetRange(entry, at, &(*out)[i].range));
    json spec = entry;
    for (const char* wire_only : {"file", "offset", "length", "placement"}) spec.erase(wire_only);
    CKPTSPEC_RETURN_IF_ERROR(read(spec, &(*out)[i].spec).WithContext(at));
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

}  // namespace

json CapabilitiesToJson(const Capabilities& c) {
  json j = json::object();
  for (const CapabilityField& f : kCapabilityFields) j[f.name] = c.*f.member;
  return j;
}

Status CapabilitiesFromJson(const json& value, Capabilities* out) {
  if (!value.is_object()) return Bad("capabilities", "an object", value);
  Capabilities c;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const CapabilityField* field = nullptr;
    for (const CapabilityField& f : kCapabilityFields) {
      if (it.key() == f.name) field = &f;
    }
    if (field == nullptr) {
      return Status::InvalidArgument("capabilities: unknown capability " +
                                     JsonPreview(json(it.key())));
    }
    if (!it.value().is_boolean())
      return Bad("capabilities." + it.key(), "true or false", it.value());
    c.*field->member = it.value().get<bool>();
  }
  *out = c;
  return Status::OK();
}

void HelloReplyToJson(const HelloReply& hello, json* reply) {
  (*reply)["protocol"] = hello.protocol;
  (*reply)["adapter"] = hello.adapter;
  (*reply)["capabilities"] = CapabilitiesToJson(hello.capabilities);
  if (hello.reset) (*reply)["capabilities"]["reset"] = true;
  if (hello.poll) (*reply)["capabilities"]["poll"] = true;
  if (hello.packed) (*reply)["capabilities"]["packed"] = true;
  if (hello.regroup) (*reply)["capabilities"]["regroup"] = true;
  if (hello.framework) {
    (*reply)["capabilities"]["framework"] = true;
    (*reply)["framework"] = FrameworkSupportToJson(*hello.framework);
  }
}

Status HelloReplyFromJson(const json& reply, HelloReply* out) {
  int64_t protocol = 0;
  CKPTSPEC_RETURN_IF_ERROR(GetInt(reply, "hello", "protocol", &protocol));
  if (protocol != kProtocolVersion) {
    return Status::InvalidArgument("hello.protocol: the adapter speaks version " +
                                   std::to_string(protocol) + ", the harness version " +
                                   std::to_string(kProtocolVersion));
  }
  out->protocol = static_cast<int>(protocol);
  out->adapter.clear();
  if (const json* a = Find(reply, "adapter")) {
    if (!a->is_string()) return Bad("hello.adapter", "a string", *a);
    out->adapter = a->get<std::string>();
  }
  const json* caps;
  CKPTSPEC_RETURN_IF_ERROR(Need(reply, "hello", "capabilities", &caps));
  json engine_caps = *caps;
  // The harness's own capabilities (not the engine's): revision 2's reset, revision 3's poll,
  // revision 4's packed, revision 6's regroup.
  for (const auto& [name, member] :
       {std::pair<const char*, bool HelloReply::*>{"reset", &HelloReply::reset},
        std::pair<const char*, bool HelloReply::*>{"poll", &HelloReply::poll},
        std::pair<const char*, bool HelloReply::*>{"packed", &HelloReply::packed},
        std::pair<const char*, bool HelloReply::*>{"regroup", &HelloReply::regroup}}) {
    out->*member = false;
    if (engine_caps.is_object() && engine_caps.contains(name)) {
      const json& value = engine_caps[name];
      if (!value.is_boolean()) {
        return Bad(std::string("hello.capabilities.") + name, "true or false", value);
      }
      out->*member = value.get<bool>();
      engine_caps.erase(name);
    }
  }
  out->framework.reset();
  bool framework = false;
  if (engine_caps.is_object() && engine_caps.contains("framework")) {
    const json& value = engine_caps["framework"];
    if (!value.is_boolean()) return Bad("hello.capabilities.framework", "true or false", value);
    framework = value.get<bool>();
    engine_caps.erase("framework");
  }
  if (framework) {
    const json* support;
    CKPTSPEC_RETURN_IF_ERROR(Need(reply, "hello", "framework", &support));
    FrameworkSupport s;
    CKPTSPEC_RETURN_IF_ERROR(
        FrameworkSupportFromJson(JsonField(*support), &s).WithContext("hello.framework"));
    out->framework = std::move(s);
  }
  if (out->regroup && !out->reset) {
    return Status::InvalidArgument("hello.capabilities: regroup is declared without reset");
  }
  return CapabilitiesFromJson(engine_caps, &out->capabilities).WithContext("hello");
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

// The optional "placement" member of each entry of request["tensors"] (an array of objects, else
// left for GetEntries to refuse), "device" when absent, into *placements.
Status ReadPlacements(const json& request, std::vector<Placement>* placements) {
  placements->clear();
  const json* tensors = Find(request, "tensors");
  if (tensors == nullptr || !tensors->is_array()) return Status::OK();
  for (size_t i = 0; i < tensors->size(); ++i) {
    const json& entry = (*tensors)[i];
    Placement placement = Placement::kDevice;
    if (const json* name = entry.is_object() ? Find(entry, "placement") : nullptr) {
      if (*name == PlacementName(Placement::kHost)) {
        placement = Placement::kHost;
      } else if (*name != PlacementName(Placement::kDevice)) {
        return Bad("save.tensors[" + std::to_string(i) + "].placement", "\"device\" or \"host\"",
                   *name);
      }
    }
    placements->push_back(placement);
  }
  return Status::OK();
}

}  // namespace

Status SaveCallFromJson(const json& r, SaveCall* out) {
  if (!r.is_object()) return Bad("save", "an object", r);
  CKPTSPEC_RETURN_IF_ERROR(ReadPlacements(r, &out->placements));
  CKPTSPEC_RETURN_IF_ERROR(GetString(r, "save", "directory", &out->directory));
  CKPTSPEC_RETURN_IF_ERROR(GetInt(r, "save", "iteration", &out->iteration));
  out->options = SaveOptions();
  CKPTSPEC_RETURN_IF_ERROR(GetBool(r, "save", "validate", &out->options.validate));
  CKPTSPEC_RETURN_IF_ERROR(
      GetBool(r, "save", "assume_constant_structure", &out->options.assume_constant_structure));
  CKPTSPEC_RETURN_IF_ERROR(GetBool(r, "save", "async", &out->options.async));
  if (const json* layout = Find(r, "layout")) out->options.layout = *layout;
  CKPTSPEC_RETURN_IF_ERROR(GetEntries(r, "save", "tensors", TensorSpecFromJson, &out->tensors));
  CKPTSPEC_RETURN_IF_ERROR(GetEntries(r, "save", "objects", ObjectSpecFromJson, &out->objects));
  out->common = json::object();
  if (const json* common = Find(r, "common")) out->common = *common;
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
  if (!r.is_object()) return Bad("poll", "an object", r);
  out->updates.clear();
  const json* m = Find(r, "tensors");
  if (m == nullptr) return Status::OK();
  if (!m->is_array()) return Bad("poll.tensors", "an array of updates", *m);
  for (size_t i = 0; i < m->size(); ++i) {
    const std::string at = "poll.tensors[" + std::to_string(i) + "]";
    const json& entry = (*m)[i];
    if (!entry.is_object()) return Bad(at, "an object", entry);
    PollUpdate u;
    CKPTSPEC_RETURN_IF_ERROR(GetInt(entry, at, "index", &u.index));
    if (u.index < 0)
      return Bad(at + ".index", "a tensor index of the pending save", entry["index"]);
    CKPTSPEC_RETURN_IF_ERROR(GetString(entry, at, "file", &u.file));
    CKPTSPEC_RETURN_IF_ERROR(GetRange(entry, at, &u.range));
    out->updates.push_back(std::move(u));
  }
  return Status::OK();
}

void PollReplyToJson(const PollReply& poll, json* reply) { (*reply)["complete"] = poll.complete; }

Status PollReplyFromJson(const json& r, PollReply* out) {
  const json* m;
  CKPTSPEC_RETURN_IF_ERROR(Need(r, "poll reply", "complete", &m));
  if (!m->is_boolean()) return Bad("poll reply.complete", "true or false", *m);
  out->complete = m->get<bool>();
  return Status::OK();
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
  if (!r.is_object()) return Bad("load", "an object", r);
  CKPTSPEC_RETURN_IF_ERROR(GetString(r, "load", "directory", &out->directory));
  out->iteration.reset();
  const json* it = Find(r, "iteration");
  if (it != nullptr && !it->is_null()) {
    int64_t iteration = 0;
    CKPTSPEC_RETURN_IF_ERROR(GetInt(r, "load", "iteration", &iteration));
    out->iteration = iteration;
  }
  out->strict = StrictMode::kAssumeOkUnexpected;
  if (Find(r, "strict") != nullptr) {
    std::string name;
    CKPTSPEC_RETURN_IF_ERROR(GetString(r, "load", "strict", &name));
    if (!ParseStrictMode(name, &out->strict)) {
      return Status::InvalidArgument("load.strict: unknown strict mode " + JsonPreview(json(name)));
    }
  }
  out->allow_shape_mismatch = false;
  CKPTSPEC_RETURN_IF_ERROR(GetBool(r, "load", "allow_shape_mismatch", &out->allow_shape_mismatch));
  CKPTSPEC_RETURN_IF_ERROR(GetEntries(r, "load", "tensors", TensorSpecFromJson, &out->tensors));
  return GetEntries(r, "load", "objects", ObjectSpecFromJson, &out->objects);
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
  CKPTSPEC_RETURN_IF_ERROR(GetInt(r, "load reply", "iteration", &out->iteration));
  const json* common;
  CKPTSPEC_RETURN_IF_ERROR(Need(r, "load reply", "common", &common));
  if (!common->is_object()) return Bad("load reply.common", "an object", *common);
  out->common = *common;
  CKPTSPEC_RETURN_IF_ERROR(GetStrings(r, "load reply", "dropped", &out->dropped));
  CKPTSPEC_RETURN_IF_ERROR(GetStrings(r, "load reply", "unexpected", &out->unexpected));
  CKPTSPEC_RETURN_IF_ERROR(GetStrings(r, "load reply", "missing", &out->missing));
  return GetStrings(r, "load reply", "warnings", &out->warnings);
}

json ErrorToJson(const Status& status) {
  return json{{"code", StatusCodeName(status.code())}, {"message", status.message()}};
}

Status ErrorFromJson(const json& error, Status* out) {
  if (!error.is_object()) return Bad("error", "an object {\"code\", \"message\"}", error);
  std::string code, message;
  CKPTSPEC_RETURN_IF_ERROR(GetString(error, "error", "code", &code));
  CKPTSPEC_RETURN_IF_ERROR(GetString(error, "error", "message", &message));
  using Code = Status::Code;
  for (Code c : {Code::kInvalidArgument, Code::kNotFound, Code::kCorruption, Code::kIOError,
                 Code::kNotSupported, Code::kFailedPrecondition}) {
    if (code != StatusCodeName(c)) continue;
    switch (c) {
      case Code::kInvalidArgument:
        *out = Status::InvalidArgument(message);
        break;
      case Code::kNotFound:
        *out = Status::NotFound(message);
        break;
      case Code::kCorruption:
        *out = Status::Corruption(message);
        break;
      case Code::kIOError:
        *out = Status::IOError(message);
        break;
      case Code::kNotSupported:
        *out = Status::NotSupported(message);
        break;
      default:
        *out = Status::FailedPrecondition(message);
        break;
    }
    return Status::OK();
  }
  return Status::InvalidArgument("error.code: unknown code " + JsonPreview(json(code)));
}

std::string DumpLine(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace ckptspec
