#include "model/signature_json.h"

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/json_fields.h"
#include "model/json_util.h"

namespace ckptspec {
namespace {

using nlohmann::json;

enum class EmptyReplicaId {
  kRefused,           // a tensor's
  kRefusedForShards,  // a sharded object's (global_shape not [])
  kRankLocal,         // a rank-local object's (global_shape []): the one replica id allowed empty
};

Status ReadReplicaId(const JsonField& field, EmptyReplicaId empty, ReplicaId* out) {
  const json& value = field.value();
  if (value.is_number()) {
    int64_t v;
    CKPTSPEC_RETURN_IF_ERROR(field.GetNonNegativeInt64(&v));
    *out = ReplicaId{v};
    return Status::OK();
  }
  if (!value.is_array()) return field.Expected("a non-negative integer or an array of them");
  if (value.empty() && empty != EmptyReplicaId::kRankLocal) {
    return field.Error(empty == EmptyReplicaId::kRefused
                           ? "replica id is an empty array"
                           : "replica id is an empty array (only a rank-local object, of "
                             "global_shape [], declares none)");
  }
  return field.GetNonNegativeInt64Array(out);
}

// An optional digest: 16 hex digits.
Status ReadDigest(const JsonField& field, std::optional<uint64_t>* out) {
  if (!field.present()) return field.ExpectPresent();
  const char* expected = "a 16-hex-digit string";
  if (!field.value().is_string()) return field.Expected(expected);
  const std::string& s = field.value().get_ref<const std::string&>();
  if (s.size() != 16) return field.Expected(expected);
  uint64_t digest = 0;
  for (char c : s) {
    int nibble;
    if (c >= '0' && c <= '9') {
      nibble = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      nibble = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      nibble = c - 'A' + 10;
    } else {
      return field.Expected(expected);
    }
    digest = (digest << 4) | static_cast<uint64_t>(nibble);
  }
  *out = digest;
  return Status::OK();
}

Status ReadTensor(const JsonField& entry, TensorSpec* out) {
  CKPTSPEC_RETURN_IF_ERROR(entry.ExpectOnlyMembers(
      {"key", "dtype", "global_shape", "global_offset", "local_shape", "axis_fragmentations",
       "prepend_axis_num", "replica_id", "origin", "digest"}));
  TensorSpec spec;
  CKPTSPEC_RETURN_IF_ERROR(entry.Member("key").GetString(&spec.key));
  const JsonField dtype = entry.Member("dtype");
  std::string dtype_name;
  CKPTSPEC_RETURN_IF_ERROR(dtype.GetString(&dtype_name));
  if (!ParseDType(dtype_name, &spec.dtype)) {
    return dtype.Error("unknown dtype " + JsonPreview(dtype.value()));
  }
  CKPTSPEC_RETURN_IF_ERROR(
      entry.Member("global_shape").GetNonNegativeInt64Array(&spec.global_shape));
  CKPTSPEC_RETURN_IF_ERROR(
      entry.Member("global_offset").GetNonNegativeInt64Array(&spec.global_offset));
  CKPTSPEC_RETURN_IF_ERROR(entry.Member("local_shape").GetNonNegativeInt64Array(&spec.local_shape));
  const JsonField fragmentations = entry.OptionalMember("axis_fragmentations");
  if (!fragmentations.value().is_null()) {  // left out or null: an irregular grid
    if (!fragmentations.value().is_array()) {
      return fragmentations.Expected("an array of positive integers or null");
    }
    CKPTSPEC_RETURN_IF_ERROR(fragmentations.GetNonNegativeInt64Array(&spec.axis_fragmentations));
  }
  const JsonField prepend = entry.OptionalMember("prepend_axis_num");
  int64_t prepend_axis_num = spec.prepend_axis_num;
  CKPTSPEC_RETURN_IF_ERROR(prepend.GetNonNegativeInt64(&prepend_axis_num));
  if (prepend_axis_num > std::numeric_limits<int>::max()) {
    return prepend.Error("value " + std::to_string(prepend_axis_num) + " is too large");
  }
  spec.prepend_axis_num = static_cast<int>(prepend_axis_num);
  CKPTSPEC_RETURN_IF_ERROR(
      ReadReplicaId(entry.Member("replica_id"), EmptyReplicaId::kRefused, &spec.replica_id));
  CKPTSPEC_RETURN_IF_ERROR(entry.OptionalMember("origin").GetString(&spec.origin));
  CKPTSPEC_RETURN_IF_ERROR(ReadDigest(entry.OptionalMember("digest"), &spec.digest));
  const Status valid = ValidateTensorSpec(spec);
  if (!valid.ok()) return entry.Error(valid.message());
  *out = std::move(spec);
  return Status::OK();
}

Status ReadObject(const JsonField& entry, ObjectSpec* out) {
  CKPTSPEC_RETURN_IF_ERROR(entry.ExpectOnlyMembers(
      {"key", "global_shape", "global_offset", "replica_id", "origin", "digest"}));
  ObjectSpec spec;
  CKPTSPEC_RETURN_IF_ERROR(entry.Member("key").GetString(&spec.key));
  CKPTSPEC_RETURN_IF_ERROR(
      entry.Member("global_shape").GetNonNegativeInt64Array(&spec.global_shape));
  CKPTSPEC_RETURN_IF_ERROR(
      entry.Member("global_offset").GetNonNegativeInt64Array(&spec.global_offset));
  CKPTSPEC_RETURN_IF_ERROR(ReadReplicaId(
      entry.Member("replica_id"),
      spec.global_shape.empty() ? EmptyReplicaId::kRankLocal : EmptyReplicaId::kRefusedForShards,
      &spec.replica_id));
  CKPTSPEC_RETURN_IF_ERROR(entry.OptionalMember("origin").GetString(&spec.origin));
  CKPTSPEC_RETURN_IF_ERROR(ReadDigest(entry.OptionalMember("digest"), &spec.digest));
  const Status valid = ValidateObjectSpec(spec);
  if (!valid.ok()) return entry.Error(valid.message());
  *out = std::move(spec);
  return Status::OK();
}

// A rank's tensor and object entries read one by one while the text streams (ParseSignature):
// what was read before the first error, and that error.
struct StreamedEntries {
  std::vector<TensorSpec> tensors;
  std::vector<ObjectSpec> objects;
  Status tensors_error, objects_error;
};

// A rank's optional "tensors" or "objects" array, each entry read with `read_entry`. With
// `streamed`, the array arrives empty and its entries (already read) and their error come from
// there, the error reported where reading them would be.
template <typename Spec>
Status ReadEntries(const JsonField& list, Status (*read_entry)(const JsonField&, Spec*),
                   std::vector<Spec>* streamed, const Status* streamed_error,
                   std::vector<Spec>* out) {
  CKPTSPEC_RETURN_IF_ERROR(list.ExpectArray());
  if (!list.present()) return Status::OK();
  if (streamed != nullptr) {
    CKPTSPEC_RETURN_IF_ERROR(*streamed_error);
    *out = std::move(*streamed);
    return Status::OK();
  }
  return list.ForEachElement([&](const JsonField& entry) {
    out->emplace_back();
    return read_entry(entry, &out->back());
  });
}

// Reads ranks[i]. With `streamed`, its "tensors" and "objects" arrays arrive empty and their
// entries (already read) come from there.
Status ReadRank(const JsonField& field, RankSignature* out, StreamedEntries* streamed = nullptr) {
  CKPTSPEC_RETURN_IF_ERROR(field.ExpectOnlyMembers({"rank", "tensors", "objects", "common"}));
  RankSignature rank;
  CKPTSPEC_RETURN_IF_ERROR(field.Member("rank").GetNonNegativeInt64(&rank.rank));
  CKPTSPEC_RETURN_IF_ERROR(ReadEntries(
      field.OptionalMember("tensors"), ReadTensor, streamed ? &streamed->tensors : nullptr,
      streamed ? &streamed->tensors_error : nullptr, &rank.tensors));
  CKPTSPEC_RETURN_IF_ERROR(ReadEntries(
      field.OptionalMember("objects"), ReadObject, streamed ? &streamed->objects : nullptr,
      streamed ? &streamed->objects_error : nullptr, &rank.objects));
  const JsonField common = field.OptionalMember("common");
  if (common.present()) {
    if (JsonDeeperThan(common.value(), kMaxCommonDepth)) {
      return common.Error("nests deeper than " + std::to_string(kMaxCommonDepth) + " levels");
    }
    rank.common = common.value();
  }
  *out = std::move(rank);
  return Status::OK();
}

}  // namespace

json TensorSpecToJson(const TensorSpec& t) {
  json j = json::object();
  j["key"] = t.key;
  j["dtype"] = DTypeName(t.dtype);
  j["global_shape"] = t.global_shape;
  j["global_offset"] = t.global_offset;
  j["local_shape"] = t.local_shape;
  if (t.has_regular_grid()) j["axis_fragmentations"] = t.axis_fragmentations;
  if (t.prepend_axis_num != 0) j["prepend_axis_num"] = t.prepend_axis_num;
  j["replica_id"] = t.replica_id;
  if (!t.origin.empty()) j["origin"] = t.origin;
  if (t.digest) j["digest"] = DigestHex(*t.digest);
  return j;
}

json ObjectSpecToJson(const ObjectSpec& o) {
  json j = json::object();
  j["key"] = o.key;
  j["global_shape"] = o.global_shape;
  j["global_offset"] = o.global_offset;
  j["replica_id"] = o.replica_id;
  if (!o.origin.empty()) j["origin"] = o.origin;
  if (o.digest) j["digest"] = DigestHex(*o.digest);
  return j;
}

Status TensorSpecFromJson(const json& value, TensorSpec* out) {
  return ReadTensor(JsonField(value), out);
}

Status ObjectSpecFromJson(const json& value, ObjectSpec* out) {
  return ReadObject(JsonField(value), out);
}

namespace {

// Never throws: invalid UTF-8 in keys (possible in signatures built in C++) is replaced.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

json SignatureToJson(const GlobalSignature& signature) {
  json ranks = json::array();
  for (const RankSignature& r : signature.ranks) {
    json rank = json::object();
    rank["rank"] = r.rank;
    json tensors = json::array();
    for (const TensorSpec& t : r.tensors) tensors.push_back(TensorSpecToJson(t));
    rank["tensors"] = std::move(tensors);
    json objects = json::array();
    for (const ObjectSpec& o : r.objects) objects.push_back(ObjectSpecToJson(o));
    rank["objects"] = std::move(objects);
    if (!r.common->is_null()) rank["common"] = r.common.get();
    ranks.push_back(std::move(rank));
  }
  json out = json::object();
  out["format"] = kSignatureFormat;
  out["version"] = kSignatureVersion;
  out["ranks"] = std::move(ranks);
  return out;
}

namespace {

// The document's own members: format, version, and "ranks" an array.
Status ReadTopLevel(const JsonField& root) {
  CKPTSPEC_RETURN_IF_ERROR(root.ExpectOnlyMembers({"format", "version", "ranks"}));
  const JsonField format = root.Member("format");
  CKPTSPEC_RETURN_IF_ERROR(format.ExpectPresent());
  if (format.value() != kSignatureFormat) {
    return format.Expected(std::string("\"") + kSignatureFormat + "\"");
  }
  const JsonField version = root.Member("version");
  int64_t number;
  CKPTSPEC_RETURN_IF_ERROR(version.GetNonNegativeInt64(&number));
  if (number != kSignatureVersion) {
    return version.Error("unsupported version " + std::to_string(number) + " (this reader knows " +
                         std::to_string(kSignatureVersion) + ")");
  }
  return root.Member("ranks").ExpectArray();
}

// Orders the ranks read from ranks[0..read.size()) of an array of `n` by their numbers, which
// must be 0..n-1 once each; `read_error` is the error of ranks[read.size()], if any, reported
// after the ranks before it are checked. `ranks` names the array (its entries may have been
// streamed).
Status AssembleRanks(const JsonField& ranks, std::vector<RankSignature> read, size_t n,
                     const Status& read_error, GlobalSignature* out) {
  // where[r] = 1 + the array index that holds rank r, or 0.
  std::vector<size_t> where(n, 0);
  for (size_t i = 0; i < read.size(); ++i) {
    const JsonField entry = ranks.Element(i);
    const JsonField rank_field = entry.Member("rank");
    const int64_t r = read[i].rank;
    if (static_cast<uint64_t>(r) >= n) {
      return rank_field.Error(
          "rank " + std::to_string(r) + " is out of range: " + std::to_string(n) +
          " ranks must be numbered 0.." + std::to_string(static_cast<int64_t>(n) - 1));
    }
    if (where[r] != 0) {
      return rank_field.Error("duplicate rank " + std::to_string(r) + " (also at ranks[" +
                              std::to_string(where[r] - 1) + "])");
    }
    where[r] = i + 1;
  }
  CKPTSPEC_RETURN_IF_ERROR(read_error);
  GlobalSignature signature;
  signature.ranks.resize(n);
  for (RankSignature& rank : read) {
    const int64_t r = rank.rank;
    signature.ranks[r] = std::move(rank);
  }
  *out = std::move(signature);
  return Status::OK();
}

// ParseSignature's reader: each ranks[i].tensors[j] and ranks[i].objects[j] is built alone and
// read at once, each ranks[i] without them when it is complete; no tree of the document exists.
class StreamedSignature : public JsonStreamHandler {
 public:
  Action Classify(const JsonPath& p) override {
    if (p.size() == 2 && p.Matches({"ranks", "[]"})) {
      rank_count_ = p.Index(1) + 1;
      return error_.ok() ? Action::kStream : Action::kSkip;
    }
    if (p.size() == 4 && p.Matches({"ranks", "[]", "tensors", "[]"})) {
      return entries_.tensors_error.ok() ? Action::kStream : Action::kSkip;
    }
    if (p.size() == 4 && p.Matches({"ranks", "[]", "objects", "[]"})) {
      return entries_.objects_error.ok() ? Action::kStream : Action::kSkip;
    }
    return Action::kKeep;
  }

  Status Take(const JsonPath& p, json&& value) override {
    const JsonField field(value, p);
    if (p.size() == 4) {
      const bool tensor = p.Key(2) == "tensors";
      Status& error = tensor ? entries_.tensors_error : entries_.objects_error;
      if (tensor) {
        entries_.tensors.emplace_back();
        error = ReadTensor(field, &entries_.tensors.back());
      } else {
        entries_.objects.emplace_back();
        error = ReadObject(field, &entries_.objects.back());
      }
      return Status::OK();
    }
    RankSignature read;
    error_ = ReadRank(field, &read, &entries_);
    if (error_.ok()) read_.push_back(std::move(read));
    entries_ = StreamedEntries();
    return Status::OK();
  }

  Status Finish(const json& top, GlobalSignature* out) {
    const JsonField root(top);
    CKPTSPEC_RETURN_IF_ERROR(ReadTopLevel(root));
    return AssembleRanks(root.Member("ranks"), std::move(read_), rank_count_, error_, out);
  }

 private:
  StreamedEntries entries_;          // of the rank being read
  std::vector<RankSignature> read_;  // ranks[0..) up to the first error
  Status error_;                     // the first rank's error
  size_t rank_count_ = 0;            // elements of "ranks"
};

}  // namespace

Status SignatureFromJson(const json& value, GlobalSignature* out) {
  const JsonField root(value);
  CKPTSPEC_RETURN_IF_ERROR(ReadTopLevel(root));
  const JsonField ranks = root.Member("ranks");
  std::vector<RankSignature> read;
  Status error;
  for (size_t i = 0; i < ranks.size() && error.ok(); ++i) {
    RankSignature rank;
    error = ReadRank(ranks.Element(i), &rank);
    if (error.ok()) read.push_back(std::move(rank));
  }
  return AssembleRanks(ranks, std::move(read), ranks.size(), error, out);
}

Status ParseSignature(std::string_view text, GlobalSignature* out) {
  return ParseSignature(text, JsonLimits(), out);
}

Status ParseSignature(std::string_view text, const JsonLimits& limits, GlobalSignature* out) {
  StreamedSignature reader;
  json top;
  const Status read = ParseJsonStreamed(text, limits, &reader, &top);
  if (!read.ok()) return Status::InvalidArgument("signature JSON: " + read.message());
  return reader.Finish(top, out);
}

bool SameSignature(const GlobalSignature& a, const GlobalSignature& b, std::string* difference) {
  auto differ = [&](const std::string& what) {
    if (difference) *difference = what;
    return false;
  };
  if (a.ranks.size() != b.ranks.size()) {
    return differ("rank count " + std::to_string(a.ranks.size()) + " vs " +
                  std::to_string(b.ranks.size()));
  }
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    const RankSignature& ra = a.ranks[i];
    const RankSignature& rb = b.ranks[i];
    const std::string at = "ranks[" + std::to_string(i) + "]";
    if (ra.rank != rb.rank) {
      return differ(at + ".rank: " + std::to_string(ra.rank) + " vs " + std::to_string(rb.rank));
    }
    if (ra.tensors.size() != rb.tensors.size()) {
      return differ(at + ".tensors: " + std::to_string(ra.tensors.size()) + " vs " +
                    std::to_string(rb.tensors.size()) + " entries");
    }
    for (size_t t = 0; t < ra.tensors.size(); ++t) {
      if (!(ra.tensors[t] == rb.tensors[t])) {
        return differ(at + ".tensors[" + std::to_string(t) +
                      "]: " + Dump(TensorSpecToJson(ra.tensors[t])) + " vs " +
                      Dump(TensorSpecToJson(rb.tensors[t])));
      }
    }
    if (ra.objects.size() != rb.objects.size()) {
      return differ(at + ".objects: " + std::to_string(ra.objects.size()) + " vs " +
                    std::to_string(rb.objects.size()) + " entries");
    }
    for (size_t o = 0; o < ra.objects.size(); ++o) {
      if (!(ra.objects[o] == rb.objects[o])) {
        return differ(at + ".objects[" + std::to_string(o) +
                      "]: " + Dump(ObjectSpecToJson(ra.objects[o])) + " vs " +
                      Dump(ObjectSpecToJson(rb.objects[o])));
      }
    }
    if (ra.common != rb.common) {
      return differ(at + ".common: " + JsonPreview(ra.common) + " vs " + JsonPreview(rb.common));
    }
  }
  return true;
}

}  // namespace ckptspec
