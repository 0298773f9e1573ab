#include "model/signature_json.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "model/json_util.h"

namespace ckptspec {
namespace {

using nlohmann::json;

// A JSON path built on the stack while reading; rendered only when an error needs it.
class Path {
 public:
  Path() = default;
  Path(const Path* parent, const char* member) : parent_(parent), member_(member) {}
  Path(const Path* parent, size_t index) : parent_(parent), index_(static_cast<int64_t>(index)) {}

  std::string ToString() const {
    const std::string s = Render();
    return s.empty() ? std::string("(root)") : s;
  }

  Status Error(const std::string& what) const {
    return Status::InvalidArgument(ToString() + ": " + what);
  }

 private:
  std::string Render() const {
    std::string s = parent_ ? parent_->Render() : std::string();
    if (member_) {
      if (!s.empty()) s += '.';
      s += member_;
    } else if (index_ >= 0) {
      s += "[" + std::to_string(index_) + "]";
    }
    return s;
  }

  const Path* parent_ = nullptr;
  const char* member_ = nullptr;
  int64_t index_ = -1;
};

std::string Got(const json& value) { return "got " + JsonPreview(value); }

Status ReadInt64(const json& value, const Path& path, bool non_negative, int64_t* out) {
  const char* expected = non_negative ? "expected a non-negative integer" : "expected an integer";
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return path.Error("integer " + std::to_string(u) + " overflows int64");
    }
    *out = static_cast<int64_t>(u);
    return Status::OK();
  }
  if (value.is_number_integer()) {
    const int64_t i = value.get<int64_t>();
    if (non_negative && i < 0) return path.Error(std::string(expected) + ", " + Got(value));
    *out = i;
    return Status::OK();
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    // Integers too large for int64 or uint64 arrive from the parser as floats.
    if (std::isfinite(d) && std::nearbyint(d) == d && std::fabs(d) >= 9.2233720368547758e18) {
      return path.Error("integer " + JsonPreview(value) + " overflows int64");
    }
  }
  return path.Error(std::string(expected) + ", " + Got(value));
}

Status ReadDims(const json& value, const Path& path, Dims* out) {
  if (!value.is_array()) return path.Error("expected an array of non-negative integers, " + Got(value));
  Dims dims;
  dims.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const Path element(&path, i);
    int64_t v;
    CKPTSPEC_RETURN_IF_ERROR(ReadInt64(value[i], element, /*non_negative=*/true, &v));
    dims.push_back(v);
  }
  *out = std::move(dims);
  return Status::OK();
}

Status ReadReplicaId(const json& value, const Path& path, ReplicaId* out) {
  if (value.is_number()) {
    int64_t v;
    CKPTSPEC_RETURN_IF_ERROR(ReadInt64(value, path, /*non_negative=*/true, &v));
    *out = ReplicaId{v};
    return Status::OK();
  }
  if (!value.is_array()) {
    return path.Error("expected a non-negative integer or an array of them, " + Got(value));
  }
  if (value.empty()) return path.Error("replica id is an empty array");
  return ReadDims(value, path, out);
}

Status ReadString(const json& value, const Path& path, std::string* out) {
  if (!value.is_string()) return path.Error("expected a string, " + Got(value));
  *out = value.get<std::string>();
  return Status::OK();
}

Status ReadDigest(const json& value, const Path& path, std::optional<uint64_t>* out) {
  if (!value.is_string()) return path.Error("expected a 16-hex-digit string, " + Got(value));
  const std::string& s = value.get_ref<const std::string&>();
  if (s.size() != 16) {
    return path.Error("expected a 16-hex-digit string, " + Got(value));
  }
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
      return path.Error("expected a 16-hex-digit string, " + Got(value));
    }
    digest = (digest << 4) | static_cast<uint64_t>(nibble);
  }
  *out = digest;
  return Status::OK();
}

// Rejects members outside `allowed` and checks that the value is an object.
Status CheckObject(const json& value, const Path& path, std::initializer_list<const char*> allowed) {
  if (!value.is_object()) return path.Error("expected an object, " + Got(value));
  for (auto it = value.begin(); it != value.end(); ++it) {
    bool known = false;
    for (const char* name : allowed) known = known || it.key() == name;
    if (!known) {
      return path.Error("unknown member " + json(it.key()).dump(-1, ' ', false,
                                                                  json::error_handler_t::replace));
    }
  }
  return Status::OK();
}

// The member, or nullptr when absent.
const json* Member(const json& object, const char* name) {
  auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

Status Required(const json& object, const Path& path, const char* name, const json** out) {
  *out = Member(object, name);
  if (*out == nullptr) return path.Error(std::string("missing required member \"") + name + "\"");
  return Status::OK();
}

Status ReadTensor(const json& value, const Path& path, TensorSpec* out) {
  CKPTSPEC_RETURN_IF_ERROR(CheckObject(
      value, path,
      {"key", "dtype", "global_shape", "global_offset", "local_shape", "axis_fragmentations",
       "prepend_axis_num", "replica_id", "origin", "digest"}));
  TensorSpec spec;
  const json* m;
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "key", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadString(*m, Path(&path, "key"), &spec.key));
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "dtype", &m));
  {
    const Path p(&path, "dtype");
    std::string name;
    CKPTSPEC_RETURN_IF_ERROR(ReadString(*m, p, &name));
    if (!ParseDType(name, &spec.dtype)) return p.Error("unknown dtype " + JsonPreview(*m));
  }
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "global_shape", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadDims(*m, Path(&path, "global_shape"), &spec.global_shape));
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "global_offset", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadDims(*m, Path(&path, "global_offset"), &spec.global_offset));
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "local_shape", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadDims(*m, Path(&path, "local_shape"), &spec.local_shape));
  if ((m = Member(value, "axis_fragmentations")) != nullptr && !m->is_null()) {
    const Path p(&path, "axis_fragmentations");
    if (!m->is_array()) return p.Error("expected an array of positive integers or null, " + Got(*m));
    CKPTSPEC_RETURN_IF_ERROR(ReadDims(*m, p, &spec.axis_fragmentations));
  }
  if ((m = Member(value, "prepend_axis_num")) != nullptr) {
    const Path p(&path, "prepend_axis_num");
    int64_t v;
    CKPTSPEC_RETURN_IF_ERROR(ReadInt64(*m, p, /*non_negative=*/true, &v));
    if (v > std::numeric_limits<int>::max()) return p.Error("value " + std::to_string(v) + " is too large");
    spec.prepend_axis_num = static_cast<int>(v);
  }
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "replica_id", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadReplicaId(*m, Path(&path, "replica_id"), &spec.replica_id));
  if ((m = Member(value, "origin")) != nullptr) {
    CKPTSPEC_RETURN_IF_ERROR(ReadString(*m, Path(&path, "origin"), &spec.origin));
  }
  if ((m = Member(value, "digest")) != nullptr) {
    CKPTSPEC_RETURN_IF_ERROR(ReadDigest(*m, Path(&path, "digest"), &spec.digest));
  }
  const Status valid = ValidateTensorSpec(spec);
  if (!valid.ok()) return path.Error(valid.message());
  *out = std::move(spec);
  return Status::OK();
}

Status ReadObject(const json& value, const Path& path, ObjectSpec* out) {
  CKPTSPEC_RETURN_IF_ERROR(CheckObject(
      value, path, {"key", "global_shape", "global_offset", "replica_id", "origin", "digest"}));
  ObjectSpec spec;
  const json* m;
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "key", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadString(*m, Path(&path, "key"), &spec.key));
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "global_shape", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadDims(*m, Path(&path, "global_shape"), &spec.global_shape));
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "global_offset", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadDims(*m, Path(&path, "global_offset"), &spec.global_offset));
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "replica_id", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadReplicaId(*m, Path(&path, "replica_id"), &spec.replica_id));
  if ((m = Member(value, "origin")) != nullptr) {
    CKPTSPEC_RETURN_IF_ERROR(ReadString(*m, Path(&path, "origin"), &spec.origin));
  }
  if ((m = Member(value, "digest")) != nullptr) {
    CKPTSPEC_RETURN_IF_ERROR(ReadDigest(*m, Path(&path, "digest"), &spec.digest));
  }
  const Status valid = ValidateObjectSpec(spec);
  if (!valid.ok()) return path.Error(valid.message());
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

// Reads ranks[i]. With `streamed`, its "tensors" and "objects" arrays arrive empty and their
// entries (already read) come from there, their errors reported where reading them would be.
Status ReadRank(const json& value, const Path& path, RankSignature* out,
                StreamedEntries* streamed = nullptr) {
  CKPTSPEC_RETURN_IF_ERROR(CheckObject(value, path, {"rank", "tensors", "objects", "common"}));
  RankSignature rank;
  const json* m;
  CKPTSPEC_RETURN_IF_ERROR(Required(value, path, "rank", &m));
  CKPTSPEC_RETURN_IF_ERROR(ReadInt64(*m, Path(&path, "rank"), /*non_negative=*/true, &rank.rank));
  if ((m = Member(value, "tensors")) != nullptr) {
    const Path p(&path, "tensors");
    if (!m->is_array()) return p.Error("expected an array, " + Got(*m));
    if (streamed != nullptr) {
      CKPTSPEC_RETURN_IF_ERROR(streamed->tensors_error);
      rank.tensors = std::move(streamed->tensors);
    } else {
      rank.tensors.resize(m->size());
      for (size_t i = 0; i < m->size(); ++i) {
        CKPTSPEC_RETURN_IF_ERROR(ReadTensor((*m)[i], Path(&p, i), &rank.tensors[i]));
      }
    }
  }
  if ((m = Member(value, "objects")) != nullptr) {
    const Path p(&path, "objects");
    if (!m->is_array()) return p.Error("expected an array, " + Got(*m));
    if (streamed != nullptr) {
      CKPTSPEC_RETURN_IF_ERROR(streamed->objects_error);
      rank.objects = std::move(streamed->objects);
    } else {
      rank.objects.resize(m->size());
      for (size_t i = 0; i < m->size(); ++i) {
        CKPTSPEC_RETURN_IF_ERROR(ReadObject((*m)[i], Path(&p, i), &rank.objects[i]));
      }
    }
  }
  if ((m = Member(value, "common")) != nullptr) {
    if (JsonDeeperThan(*m, kMaxCommonDepth)) {
      return Path(&path, "common")
          .Error("nests deeper than " + std::to_string(kMaxCommonDepth) + " levels");
    }
    rank.common = *m;
  }
  *out = std::move(rank);
  return Status::OK();
}

std::string DigestToHex(uint64_t digest) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(digest));
  return buf;
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
  if (t.digest) j["digest"] = DigestToHex(*t.digest);
  return j;
}

json ObjectSpecToJson(const ObjectSpec& o) {
  json j = json::object();
  j["key"] = o.key;
  j["global_shape"] = o.global_shape;
  j["global_offset"] = o.global_offset;
  j["replica_id"] = o.replica_id;
  if (!o.origin.empty()) j["origin"] = o.origin;
  if (o.digest) j["digest"] = DigestToHex(*o.digest);
  return j;
}

Status TensorSpecFromJson(const json& value, TensorSpec* out) { return ReadTensor(value, Path(), out); }

Status ObjectSpecFromJson(const json& value, ObjectSpec* out) { return ReadObject(value, Path(), out); }

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
    if (!r.common.is_null()) rank["common"] = r.common;
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
Status ReadTopLevel(const json& value) {
  const Path root;
  CKPTSPEC_RETURN_IF_ERROR(CheckObject(value, root, {"format", "version", "ranks"}));
  const json* m;
  CKPTSPEC_RETURN_IF_ERROR(Required(value, root, "format", &m));
  if (!m->is_string() || m->get_ref<const std::string&>() != kSignatureFormat) {
    return Path(&root, "format")
        .Error(std::string("expected \"") + kSignatureFormat + "\", " + Got(*m));
  }
  CKPTSPEC_RETURN_IF_ERROR(Required(value, root, "version", &m));
  {
    const Path p(&root, "version");
    int64_t version;
    CKPTSPEC_RETURN_IF_ERROR(ReadInt64(*m, p, /*non_negative=*/true, &version));
    if (version != kSignatureVersion) {
      return p.Error("unsupported version " + std::to_string(version) + " (this reader knows " +
                     std::to_string(kSignatureVersion) + ")");
    }
  }
  CKPTSPEC_RETURN_IF_ERROR(Required(value, root, "ranks", &m));
  if (!m->is_array()) return Path(&root, "ranks").Error("expected an array, " + Got(*m));
  return Status::OK();
}

// Orders the ranks read from ranks[0..read.size()) of an array of `n` by their numbers, which
// must be 0..n-1 once each; `read_error` is the error of ranks[read.size()], if any, reported
// after the ranks before it are checked.
Status AssembleRanks(std::vector<RankSignature> read, size_t n, const Status& read_error,
                     GlobalSignature* out) {
  const Path root;
  const Path ranks_path(&root, "ranks");
  // where[r] = 1 + the array index that holds rank r, or 0.
  std::vector<size_t> where(n, 0);
  for (size_t i = 0; i < read.size(); ++i) {
    const Path p(&ranks_path, i);
    const int64_t r = read[i].rank;
    const Path rank_path(&p, "rank");
    if (static_cast<uint64_t>(r) >= n) {
      return rank_path.Error("rank " + std::to_string(r) + " is out of range: " +
                             std::to_string(n) + " ranks must be numbered 0.." +
                             std::to_string(static_cast<int64_t>(n) - 1));
    }
    if (where[r] != 0) {
      return rank_path.Error("duplicate rank " + std::to_string(r) + " (also at ranks[" +
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
    const Path root;
    const Path ranks(&root, "ranks");
    const Path rank(&ranks, p.Index(1));
    if (p.size() == 4) {
      const bool tensor = p.Key(2) == "tensors";
      const Path list(&rank, tensor ? "tensors" : "objects");
      const Path entry(&list, p.Index(3));
      Status& error = tensor ? entries_.tensors_error : entries_.objects_error;
      if (tensor) {
        entries_.tensors.emplace_back();
        error = ReadTensor(value, entry, &entries_.tensors.back());
      } else {
        entries_.objects.emplace_back();
        error = ReadObject(value, entry, &entries_.objects.back());
      }
      return Status::OK();
    }
    RankSignature read;
    error_ = ReadRank(value, rank, &read, &entries_);
    if (error_.ok()) read_.push_back(std::move(read));
    entries_ = StreamedEntries();
    return Status::OK();
  }

  Status Finish(const json& top, GlobalSignature* out) {
    CKPTSPEC_RETURN_IF_ERROR(ReadTopLevel(top));
    return AssembleRanks(std::move(read_), rank_count_, error_, out);
  }

 private:
  StreamedEntries entries_;        // of the rank being read
  std::vector<RankSignature> read_;  // ranks[0..) up to the first error
  Status error_;                   // the first rank's error
  size_t rank_count_ = 0;          // elements of "ranks"
};

}  // namespace

Status SignatureFromJson(const json& value, GlobalSignature* out) {
  CKPTSPEC_RETURN_IF_ERROR(ReadTopLevel(value));
  const json& ranks = *value.find("ranks");
  const Path root;
  const Path ranks_path(&root, "ranks");
  std::vector<RankSignature> read;
  Status error;
  for (size_t i = 0; i < ranks.size() && error.ok(); ++i) {
    RankSignature rank;
    error = ReadRank(ranks[i], Path(&ranks_path, i), &rank);
    if (error.ok()) read.push_back(std::move(rank));
  }
  return AssembleRanks(std::move(read), ranks.size(), error, out);
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
        return differ(at + ".tensors[" + std::to_string(t) + "]: " +
                      Dump(TensorSpecToJson(ra.tensors[t])) + " vs " +
                      Dump(TensorSpecToJson(rb.tensors[t])));
      }
    }
    if (ra.objects.size() != rb.objects.size()) {
      return differ(at + ".objects: " + std::to_string(ra.objects.size()) + " vs " +
                    std::to_string(rb.objects.size()) + " entries");
    }
    for (size_t o = 0; o < ra.objects.size(); ++o) {
      if (!(ra.objects[o] == rb.objects[o])) {
        return differ(at + ".objects[" + std::to_string(o) + "]: " +
                      Dump(ObjectSpecToJson(ra.objects[o])) + " vs " +
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
