#include "targets/reference/format.h"

#include <xxhash.h>

#include <cinttypes>
#include <cstdio>
#include <limits>
#include <set>
#include <unordered_set>

namespace ckptspec {

using nlohmann::json;

std::string IterationDirName(int64_t iteration) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "iter_%07" PRId64, iteration);
  return buf;
}

namespace {

// Accepts exactly the names `format` produces: `prefix`, then at least `min_digits` and at most
// 18 decimal digits (no overflow), spelled as `format` spells the value.
bool ParseNumberedName(const std::string& name, const std::string& prefix, size_t min_digits,
                       std::string (*format)(int64_t), int64_t* out) {
  if (name.size() < prefix.size() + min_digits || name.size() > prefix.size() + 18 ||
      name.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  int64_t value = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    value = value * 10 + (name[i] - '0');
  }
  if (format(value) != name) return false;
  *out = value;
  return true;
}

}  // namespace

bool ParseIterationDirName(const std::string& name, int64_t* iteration) {
  return ParseNumberedName(name, "iter_", 7, IterationDirName, iteration);
}

std::string StagingDirName(int64_t iteration) { return IterationDirName(iteration) + ".tmp"; }
std::string DeletingDirName(int64_t iteration) { return IterationDirName(iteration) + ".deleting"; }

std::string ShardFileName(int64_t rank) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "shard_%05" PRId64 ".bin", rank);
  return buf;
}

const char* IndexLayoutName(IndexLayout layout) {
  return layout == IndexLayout::kSingle ? "single" : "per-writer";
}

std::string WriterDirName(int64_t rank) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "writer_%05" PRId64, rank);
  return buf;
}

bool ParseWriterDirName(const std::string& name, int64_t* rank) {
  return ParseNumberedName(name, "writer_", 5, WriterDirName, rank);
}

bool IsSafeFileName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

uint64_t Checksum(const void* data, size_t size) { return XXH3_64bits(data, size); }

std::string ChecksumHex(uint64_t checksum) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, checksum);
  return buf;
}

bool ParseChecksumHex(const std::string& text, uint64_t* checksum) {
  if (text.size() != 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *checksum = v;
  return true;
}

std::string EncodeTracker(int64_t iteration) { return std::to_string(iteration); }

Status DecodeTracker(const std::string& text, const std::string& path, int64_t* iteration) {
  size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' ' || text[end - 1] == '\r' ||
                     text[end - 1] == '\t')) {
    --end;
  }
  if (end == 0) return Status::Corruption(path + ": empty tracker file");
  if (text.compare(0, end, "release") == 0) {
    return Status::NotSupported(path + ": 'release' checkpoints are not supported");
  }
  if (end > 16) return Status::Corruption(path + ": iteration has more than 16 digits");
  int64_t value = 0;
  for (size_t i = 0; i < end; ++i) {
    if (text[i] < '0' || text[i] > '9') {
      return Status::Corruption(path + ": tracker holds '" + text.substr(0, end) +
                                "', not a decimal iteration");
    }
    value = value * 10 + (text[i] - '0');
  }
  if (value > kMaxIteration) return Status::Corruption(path + ": iteration out of range");
  *iteration = value;
  return Status::OK();
}

std::string ObjectEntry::UniqueKey() const {
  ObjectSpec spec;
  spec.key = key;
  spec.global_shape = global_shape;
  spec.global_offset = global_offset;
  return spec.UniqueKey();
}

namespace {

json ExtentToJson(const Extent& e, json j) {
  j["file"] = e.file;
  j["byte_offset"] = e.offset;
  j["byte_size"] = e.size;
  j["xxh3"] = ChecksumHex(e.checksum);
  return j;
}

}  // namespace

std::string EncodeMetadata(const CheckpointMetadata& m) {
  json j = json::object();
  j["format"] = kReferenceFormatName;
  j["format_version"] = m.format_version;
  j["iteration"] = m.iteration;
  j["world_size"] = m.world_size;
  j["layout"] = m.layout;
  j["common"] = m.common;
  json files = json::array();
  for (const FileEntry& f : m.files) files.push_back({{"name", f.name}, {"size", f.size}});
  j["files"] = std::move(files);
  json tensors = json::array();
  for (const TensorEntry& t : m.tensors) {
    json chunks = json::array();
    for (const ChunkEntry& c : t.chunks) {
      chunks.push_back(ExtentToJson(
          c.extent, {{"offset", c.box.offset}, {"shape", c.box.shape}, {"rank", c.rank}}));
    }
    tensors.push_back({{"key", t.key},
                       {"dtype", DTypeName(t.dtype)},
                       {"global_shape", t.global_shape},
                       {"chunks", std::move(chunks)}});
  }
  j["tensors"] = std::move(tensors);
  json objects = json::array();
  for (const ObjectEntry& o : m.objects) {
    objects.push_back(ExtentToJson(o.extent, {{"key", o.key},
                                              {"global_shape", o.global_shape},
                                              {"global_offset", o.global_offset},
                                              {"rank", o.rank}}));
  }
  j["objects"] = std::move(objects);
  return j.dump(1) + "\n";
}

namespace {

// A reader that names the file and the field in every error.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  Status Bad(const std::string& field, const std::string& what) const {
    return Status::Corruption(path_ + ": " + field + ": " + what);
  }

  Status Field(const json& obj, const std::string& where, const char* name, const json** out) const {
    auto it = obj.find(name);
    if (it == obj.end()) return Bad(where + name, "missing");
    *out = &*it;
    return Status::OK();
  }

  Status Int(const json& obj, const std::string& where, const char* name, int64_t lo, int64_t hi,
             int64_t* out) const {
    const json* v;
    CKPTSPEC_RETURN_IF_ERROR(Field(obj, where, name, &v));
    return IntValue(*v, where + name, lo, hi, out);
  }

  Status IntValue(const json& v, const std::string& field, int64_t lo, int64_t hi,
                  int64_t* out) const {
    if (!v.is_number_integer()) return Bad(field, "expected an integer, found " + TypeOf(v));
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Bad(field, "value " + std::to_string(u) + " overflows int64");
      }
    }
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) {
      return Bad(field, "value " + std::to_string(x) + " outside [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "]");
    }
    *out = x;
    return Status::OK();
  }

  Status String(const json& obj, const std::string& where, const char* name,
                std::string* out) const {
    const json* v;
    CKPTSPEC_RETURN_IF_ERROR(Field(obj, where, name, &v));
    if (!v->is_string()) return Bad(where + name, "expected a string, found " + TypeOf(*v));
    *out = v->get<std::string>();
    return Status::OK();
  }

  Status Array(const json& obj, const std::string& where, const char* name,
               const json** out) const {
    CKPTSPEC_RETURN_IF_ERROR(Field(obj, where, name, out));
    if (!(*out)->is_array()) return Bad(where + name, "expected an array, found " + TypeOf(**out));
    return Status::OK();
  }

  Status DimsField(const json& obj, const std::string& where, const char* name, Dims* out) const {
    const json* v;
    CKPTSPEC_RETURN_IF_ERROR(Array(obj, where, name, &v));
    if (v->size() > 32) return Bad(where + name, "more than 32 axes");
    out->clear();
    for (size_t i = 0; i < v->size(); ++i) {
      int64_t x;
      CKPTSPEC_RETURN_IF_ERROR(IntValue((*v)[i], where + name + "[" + std::to_string(i) + "]", 0,
                                        std::numeric_limits<int64_t>::max(), &x));
      out->push_back(x);
    }
    return Status::OK();
  }

  static std::string TypeOf(const json& v) { return v.type_name(); }

 private:
  std::string path_;
};

Status ReadExtent(const Reader& r, const json& j, const std::string& where,
                  const std::vector<FileEntry>& files, Extent* e) {
  int64_t file, offset, size;
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, where, "file", 0, static_cast<int64_t>(files.size()) - 1, &file));
  const int64_t max = std::numeric_limits<int64_t>::max();
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, where, "byte_offset", 0, max, &offset));
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, where, "byte_size", 0, max, &size));
  const uint64_t file_size = files[file].size;
  if (static_cast<uint64_t>(offset) > file_size ||
      static_cast<uint64_t>(size) > file_size - static_cast<uint64_t>(offset)) {
    return r.Bad(where + "byte_offset", "range [" + std::to_string(offset) + ", +" +
                                            std::to_string(size) + ") exceeds file '" +
                                            files[file].name + "' of " +
                                            std::to_string(file_size) + " bytes");
  }
  std::string hex;
  CKPTSPEC_RETURN_IF_ERROR(r.String(j, where, "xxh3", &hex));
  if (!ParseChecksumHex(hex, &e->checksum)) {
    return r.Bad(where + "xxh3", "'" + hex.substr(0, 40) + "' is not 16 lowercase hex digits");
  }
  e->file = file;
  e->offset = static_cast<uint64_t>(offset);
  e->size = static_cast<uint64_t>(size);
  return Status::OK();
}

Status DecodeChecked(const json& j, const Reader& r, CheckpointMetadata* m) {
  if (!j.is_object()) return r.Bad("(top level)", "expected an object");
  std::string format;
  CKPTSPEC_RETURN_IF_ERROR(r.String(j, "", "format", &format));
  if (format != kReferenceFormatName) {
    return r.Bad("format", "'" + format.substr(0, 64) + "' is not '" + kReferenceFormatName + "'");
  }
  int64_t version;
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, "", "format_version", 1, 1 << 20, &version));
  if (version > kReferenceFormatVersion) {
    return Status::NotSupported(r.Bad("format_version", "version " + std::to_string(version) +
                                                            " is newer than this reader (" +
                                                            std::to_string(kReferenceFormatVersion) +
                                                            ")").message());
  }
  m->format_version = static_cast<int>(version);
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, "", "iteration", 0, kMaxIteration, &m->iteration));
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, "", "world_size", 1, int64_t{1} << 31, &m->world_size));
  const json* v;
  CKPTSPEC_RETURN_IF_ERROR(r.Field(j, "", "layout", &v));
  m->layout = *v;
  CKPTSPEC_RETURN_IF_ERROR(r.Field(j, "", "common", &v));
  m->common = *v;

  const json* files;
  CKPTSPEC_RETURN_IF_ERROR(r.Array(j, "", "files", &files));
  std::set<std::string> names;
  m->files.clear();
  for (size_t i = 0; i < files->size(); ++i) {
    const std::string where = "files[" + std::to_string(i) + "].";
    const json& f = (*files)[i];
    if (!f.is_object()) return r.Bad(where, "expected an object");
    FileEntry e;
    CKPTSPEC_RETURN_IF_ERROR(r.String(f, where, "name", &e.name));
    if (!IsSafeFileName(e.name) || e.name == kMetadataFileName ||
        e.name == kMetadataChecksumFileName) {
      return r.Bad(where + "name", "'" + e.name.substr(0, 64) +
                                       "' is not a plain data file name in the checkpoint directory");
    }
    if (!names.insert(e.name).second) return r.Bad(where + "name", "duplicate file '" + e.name + "'");
    int64_t size;
    CKPTSPEC_RETURN_IF_ERROR(r.Int(f, where, "size", 0, std::numeric_limits<int64_t>::max(), &size));
    e.size = static_cast<uint64_t>(size);
    m->files.push_back(std::move(e));
  }

  const json* tensors;
  CKPTSPEC_RETURN_IF_ERROR(r.Array(j, "", "tensors", &tensors));
  std::unordered_set<std::string> keys;
  m->tensors.clear();
  for (size_t i = 0; i < tensors->size(); ++i) {
    const std::string where = "tensors[" + std::to_string(i) + "].";
    const json& t = (*tensors)[i];
    if (!t.is_object()) return r.Bad(where, "expected an object");
    TensorEntry e;
    CKPTSPEC_RETURN_IF_ERROR(r.String(t, where, "key", &e.key));
    if (e.key.empty()) return r.Bad(where + "key", "empty key");
    if (!keys.insert(e.key).second) return r.Bad(where + "key", "duplicate key '" + e.key + "'");
    std::string dtype;
    CKPTSPEC_RETURN_IF_ERROR(r.String(t, where, "dtype", &dtype));
    if (!ParseDType(dtype, &e.dtype)) return r.Bad(where + "dtype", "unknown dtype '" + dtype.substr(0, 32) + "'");
    CKPTSPEC_RETURN_IF_ERROR(r.DimsField(t, where, "global_shape", &e.global_shape));
    int64_t global_volume;
    if (!CheckedVolume(e.global_shape, &global_volume)) {
      return r.Bad(where + "global_shape", DimsToString(e.global_shape) + " overflows int64");
    }
    const json* chunks;
    CKPTSPEC_RETURN_IF_ERROR(r.Array(t, where, "chunks", &chunks));
    int64_t covered = 0;
    for (size_t c = 0; c < chunks->size(); ++c) {
      const std::string cw = where + "chunks[" + std::to_string(c) + "].";
      const json& cj = (*chunks)[c];
      if (!cj.is_object()) return r.Bad(cw, "expected an object");
      ChunkEntry chunk;
      CKPTSPEC_RETURN_IF_ERROR(r.DimsField(cj, cw, "offset", &chunk.box.offset));
      CKPTSPEC_RETURN_IF_ERROR(r.DimsField(cj, cw, "shape", &chunk.box.shape));
      if (chunk.box.offset.size() != e.global_shape.size() ||
          chunk.box.shape.size() != e.global_shape.size()) {
        return r.Bad(cw + "shape", "chunk " + BoxToString(chunk.box) + " and global shape " +
                                       DimsToString(e.global_shape) + " differ in rank");
      }
      if (!IsWithin(chunk.box, e.global_shape)) {
        return r.Bad(cw + "offset", "chunk " + BoxToString(chunk.box) + " lies outside global shape " +
                                        DimsToString(e.global_shape));
      }
      CKPTSPEC_RETURN_IF_ERROR(r.Int(cj, cw, "rank", 0, m->world_size - 1, &chunk.rank));
      CKPTSPEC_RETURN_IF_ERROR(ReadExtent(r, cj, cw, m->files, &chunk.extent));
      const int64_t volume = Volume(chunk.box.shape);  // within a validated global shape
      if (chunk.extent.size / DTypeSize(e.dtype) != static_cast<uint64_t>(volume) ||
          chunk.extent.size % DTypeSize(e.dtype) != 0) {
        return r.Bad(cw + "byte_size", std::to_string(chunk.extent.size) + " bytes, but " +
                                           std::to_string(volume) + " elements of " +
                                           DTypeName(e.dtype) + " need " +
                                           std::to_string(volume) + " x " +
                                           std::to_string(DTypeSize(e.dtype)));
      }
      if (volume > global_volume - covered) {
        return r.Bad(cw + "shape", "chunks hold more elements than the global shape " +
                                       DimsToString(e.global_shape));
      }
      covered += volume;
      e.chunks.push_back(std::move(chunk));
    }
    m->tensors.push_back(std::move(e));
  }

  const json* objects;
  CKPTSPEC_RETURN_IF_ERROR(r.Array(j, "", "objects", &objects));
  std::unordered_set<std::string> unique_keys;
  m->objects.clear();
  for (size_t i = 0; i < objects->size(); ++i) {
    const std::string where = "objects[" + std::to_string(i) + "].";
    const json& o = (*objects)[i];
    if (!o.is_object()) return r.Bad(where, "expected an object");
    ObjectEntry e;
    CKPTSPEC_RETURN_IF_ERROR(r.String(o, where, "key", &e.key));
    if (e.key.empty()) return r.Bad(where + "key", "empty key");
    if (keys.count(e.key)) return r.Bad(where + "key", "'" + e.key + "' is also a tensor key");
    CKPTSPEC_RETURN_IF_ERROR(r.DimsField(o, where, "global_shape", &e.global_shape));
    CKPTSPEC_RETURN_IF_ERROR(r.DimsField(o, where, "global_offset", &e.global_offset));
    ObjectSpec spec;
    spec.key = e.key;
    spec.global_shape = e.global_shape;
    spec.global_offset = e.global_offset;
    const Status valid = ValidateObjectSpec(spec);
    if (!valid.ok()) return r.Bad(where + "global_offset", valid.message());
    if (!unique_keys.insert(e.UniqueKey()).second) {
      return r.Bad(where + "key", "duplicate object '" + e.UniqueKey() + "'");
    }
    CKPTSPEC_RETURN_IF_ERROR(r.Int(o, where, "rank", 0, m->world_size - 1, &e.rank));
    CKPTSPEC_RETURN_IF_ERROR(ReadExtent(r, o, where, m->files, &e.extent));
    m->objects.push_back(std::move(e));
  }
  return Status::OK();
}

}  // namespace

Status DecodeMetadata(const std::string& text, const std::string& path, CheckpointMetadata* out) {
  const Reader reader(path);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return reader.Bad("(top level)", "not valid JSON");
  try {
    CheckpointMetadata m;
    CKPTSPEC_RETURN_IF_ERROR(DecodeChecked(j, reader, &m));
    *out = std::move(m);
    return Status::OK();
  } catch (const std::exception& e) {
    return reader.Bad("(top level)", std::string("malformed: ") + e.what());
  }
}

}  // namespace ckptspec
