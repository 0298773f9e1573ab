#include "targets/reference/format.h"

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <set>
#include <string_view>
#include <unordered_set>

#include "model/json_util.h"

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

using Action = JsonStreamHandler::Action;
using namespace std::string_view_literals;

// Where an entry sits, rendered only when an error names it: "" (the top level), "files[3].",
// "tensors[2].chunks[0].".
class Where {
 public:
  Where() = default;
  Where(const char* array, uint64_t index) : array_(array), index_(index) {}
  static Where Chunk(uint64_t tensor, uint64_t chunk) {
    Where w("tensors", tensor);
    w.chunk_ = static_cast<int64_t>(chunk);
    return w;
  }

  std::string str() const {
    if (array_ == nullptr) return std::string();
    std::string s = std::string(array_) + "[" + std::to_string(index_) + "].";
    if (chunk_ >= 0) s += "chunks[" + std::to_string(chunk_) + "].";
    return s;
  }
  friend std::string operator+(const Where& where, const char* name) { return where.str() + name; }

 private:
  const char* array_ = nullptr;
  uint64_t index_ = 0;
  int64_t chunk_ = -1;
};

// Names a field in an error message; the name is built only when an error is reported:
// where + name ("tensors[2].chunks[0]." + "offset"), with "[index]" when index >= 0.
struct FieldName {
  const Where& where;
  const char* name;
  int64_t index = -1;

  std::string str() const {
    std::string s = where + name;
    if (index >= 0) s += "[" + std::to_string(index) + "]";
    return s;
  }
};

// A reader that names the file and the field in every error.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  Status Bad(const std::string& field, const std::string& what) const {
    return Status::Corruption(path_ + ": " + field + ": " + what);
  }

  // A refusal of the JSON reader (its message starts with the JSON path or the byte position).
  Status NotJson(const Status& s) const { return Status::Corruption(path_ + ": " + s.message()); }

  Status Field(const json& obj, const Where& where, const char* name, const json** out) const {
    auto it = obj.find(name);
    if (it == obj.end()) return Bad(where + name, "missing");
    *out = &*it;
    return Status::OK();
  }

  Status Int(const json& obj, const Where& where, const char* name, int64_t lo, int64_t hi,
             int64_t* out) const {
    const json* v;
    CKPTSPEC_RETURN_IF_ERROR(Field(obj, where, name, &v));
    return IntValue(*v, FieldName{where, name}, lo, hi, out);
  }

  Status IntValue(const json& v, const FieldName& field, int64_t lo, int64_t hi, int64_t* out) const {
    if (!v.is_number_integer()) return Bad(field.str(), "expected an integer, found " + TypeOf(v));
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Bad(field.str(), "value " + std::to_string(u) + " overflows int64");
      }
    }
    const int64_t x = v.get<int64_t>();
    CKPTSPEC_RETURN_IF_ERROR(Range(x, field, lo, hi));
    *out = x;
    return Status::OK();
  }

  Status Range(int64_t x, const FieldName& field, int64_t lo, int64_t hi) const {
    if (x < lo || x > hi) {
      return Bad(field.str(), "value " + std::to_string(x) + " outside [" + std::to_string(lo) +
                                  ", " + std::to_string(hi) + "]");
    }
    return Status::OK();
  }

  Status String(const json& obj, const Where& where, const char* name,
                std::string* out) const {
    const json* v;
    CKPTSPEC_RETURN_IF_ERROR(Field(obj, where, name, &v));
    if (!v->is_string()) return Bad(where + name, "expected a string, found " + TypeOf(*v));
    *out = v->get<std::string>();
    return Status::OK();
  }

  Status Array(const json& obj, const Where& where, const char* name,
               const json** out) const {
    CKPTSPEC_RETURN_IF_ERROR(Field(obj, where, name, out));
    if (!(*out)->is_array()) return Bad(where + name, "expected an array, found " + TypeOf(**out));
    return Status::OK();
  }

  Status DimsField(const json& obj, const Where& where, const char* name, Dims* out) const {
    const json* v;
    CKPTSPEC_RETURN_IF_ERROR(Array(obj, where, name, &v));
    if (v->size() > kMaxAxes) return Bad(where + name, "more than 32 axes");
    out->clear();
    out->reserve(v->size());
    for (size_t i = 0; i < v->size(); ++i) {
      int64_t x;
      CKPTSPEC_RETURN_IF_ERROR(IntValue((*v)[i], FieldName{where, name, static_cast<int64_t>(i)}, 0,
                                        std::numeric_limits<int64_t>::max(), &x));
      out->push_back(x);
    }
    return Status::OK();
  }

  static std::string TypeOf(const json& v) { return v.type_name(); }

  static constexpr size_t kMaxAxes = 32;

 private:
  std::string path_;
};

// The members of an extent that need nothing but the entry: integers, the checksum's spelling.
// `file` is read as an integer here; its range is checked by CheckExtentInContext.
Status ReadExtent(const Reader& r, const json& j, const Where& where, Extent* e) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  int64_t file, offset, size;
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, where, "file", std::numeric_limits<int64_t>::min(), max, &file));
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, where, "byte_offset", 0, max, &offset));
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, where, "byte_size", 0, max, &size));
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

// True when the extent's file exists and holds its byte range.
bool ExtentFits(const Extent& e, const std::vector<FileEntry>& files) {
  if (e.file < 0 || static_cast<uint64_t>(e.file) >= files.size()) return false;
  const uint64_t file_size = files[e.file].size;
  return e.offset <= file_size && e.size <= file_size - e.offset;
}

// The checks of an extent that need the files: its file exists and holds its byte range.
Status CheckExtentInContext(const Reader& r, const Extent& e, const Where& where,
                            const std::vector<FileEntry>& files) {
  CKPTSPEC_RETURN_IF_ERROR(
      r.Range(e.file, FieldName{where, "file"}, 0, static_cast<int64_t>(files.size()) - 1));
  const uint64_t file_size = files[e.file].size;
  if (e.offset > file_size || e.size > file_size - e.offset) {
    return r.Bad(where + "byte_offset", "range [" + std::to_string(e.offset) + ", +" +
                                            std::to_string(e.size) + ") exceeds file '" +
                                            files[e.file].name + "' of " +
                                            std::to_string(file_size) + " bytes");
  }
  return Status::OK();
}

// Decodes metadata in one streaming read (json_util.h) that never holds a tree of the whole
// document: the top-level members are kept, and each entry of files, tensors (without its
// chunks), tensors[i].chunks and objects is built alone, decoded and dropped. JSON may place an
// entry before what its checks need (world_size, the files, a tensor's dtype and shape come after
// its chunks in EncodeMetadata's order), so an entry is checked in two steps: what needs nothing
// else while it is read, the rest once the document is read. Errors are reported in the order
// JSON reader, top-level members, files, tensors (each tensor, then its chunks), objects; within
// one entry, the checks that need nothing else come first.
class MetadataDecoder : public JsonStreamHandler {
 public:
  MetadataDecoder(const Reader& reader, CheckpointMetadata* m) : r_(reader), m_(m) {}

  Action Classify(const JsonPath& p) override {
    if (p.IsIndex(0)) return Action::kSkip;  // the document is an array: only its type matters
    const std::string_view top = p.Key(0);
    if (top == "tensors"sv) {
      if (p.size() == 1) return Action::kKeep;
      if (p.size() == 2) {
        return p.IsIndex(1) && Before(p.Index(1), kHeader) ? Action::kStream : Action::kSkip;
      }
      if (p.Key(2) == "chunks"sv && !p.IsIndex(2)) {
        if (p.size() == 3) return Action::kKeep;
        if (p.size() == 4) {
          return p.IsIndex(3) && Before(p.Index(1), static_cast<int64_t>(p.Index(3)))
                     ? Action::kStream
                     : Action::kSkip;
        }
        return EntryMember(p, 4);
      }
      return EntryMember(p, 2);
    }
    if (top == "layout"sv || top == "common"sv) return Action::kKeep;
    if (top == "format"sv || top == "format_version"sv || top == "iteration"sv ||
        top == "world_size"sv) {
      return p.size() == 1 ? Action::kKeep : Action::kSkip;
    }
    if (top == "files"sv || top == "objects"sv) {
      if (p.size() == 1) return Action::kKeep;
      if (p.size() == 2) return p.IsIndex(1) ? Action::kStream : Action::kSkip;
      return EntryMember(p, 2);
    }
    return Action::kSkip;  // members the format does not define
  }

  Status Take(const JsonPath& p, json&& value) override {
    if (p.Matches({"tensors", "[]", "chunks", "[]"})) {
      TakeChunk(value, p.Index(1), p.Index(3));
    } else if (p.Matches({"tensors", "[]"})) {
      TakeTensor(value, p.Index(1));
    } else if (p.Matches({"files", "[]"})) {
      if (files_error_.ok()) files_error_ = DecodeFile(value, p.Index(1));
    } else if (p.Matches({"objects", "[]"})) {
      if (objects_error_.ok()) objects_error_ = DecodeObject(value, p.Index(1));
    }
    return Status::OK();
  }

  // The checks that needed the whole document, after DecodeTopLevel: files, tensors and their
  // chunks, objects, in order.
  Status Finish(const json& top) const {
    const json* array;
    CKPTSPEC_RETURN_IF_ERROR(r_.Array(top, Where(), "files", &array));
    CKPTSPEC_RETURN_IF_ERROR(files_error_);
    CKPTSPEC_RETURN_IF_ERROR(r_.Array(top, Where(), "tensors", &array));
    for (size_t t = 0; t < m_->tensors.size(); ++t) {
      const TensorEntry& e = m_->tensors[t];
      int64_t global_volume = 0;
      CheckedVolume(e.global_shape, &global_volume);  // checked when read
      int64_t covered = 0;
      for (size_t c = 0; c < e.chunks.size(); ++c) {
        CKPTSPEC_RETURN_IF_ERROR(CheckChunkInContext(e, e.chunks[c], t, c, global_volume, &covered));
      }
    }
    CKPTSPEC_RETURN_IF_ERROR(tensors_error_);
    CKPTSPEC_RETURN_IF_ERROR(r_.Array(top, Where(), "objects", &array));
    for (size_t i = 0; i < m_->objects.size(); ++i) {
      CKPTSPEC_RETURN_IF_ERROR(CheckObjectInContext(m_->objects[i], i));
    }
    return objects_error_;
  }

 private:
  // The chunk index of a tensor's own members, checked before its chunks.
  static constexpr int64_t kHeader = -1;

  static bool IsDimsMember(std::string_view name) {
    return name == "global_shape"sv || name == "global_offset"sv || name == "offset"sv ||
           name == "shape"sv;
  }
  static bool IsScalarMember(std::string_view name) {
    return name == "name"sv || name == "size"sv || name == "key"sv || name == "dtype"sv ||
           name == "rank"sv || name == "file"sv || name == "byte_offset"sv || name == "byte_size"sv ||
           name == "xxh3"sv;
  }

  // What is kept inside an entry whose members sit at `level`: the members the format defines,
  // lists of integers up to one element past the axis limit, nothing deeper (a value of the wrong
  // type arrives empty, which is all its error message needs).
  static Action EntryMember(const JsonPath& p, size_t level) {
    if (p.IsIndex(level)) return Action::kSkip;
    const std::string_view name = p.Key(level);
    if (p.size() == level + 1) {
      return IsDimsMember(name) || IsScalarMember(name) ? Action::kKeep : Action::kSkip;
    }
    if (p.size() == level + 2 && IsDimsMember(name) && p.IsIndex(level + 1) &&
        p.Index(level + 1) <= Reader::kMaxAxes) {
      return Action::kKeep;
    }
    return Action::kSkip;
  }

  // True when (tensor, chunk) is checked before the first error found in the tensors so far:
  // nothing after it needs reading.
  bool Before(uint64_t tensor, int64_t chunk) const {
    return tensors_error_.ok() || tensor < error_tensor_ ||
           (tensor == error_tensor_ && chunk < error_chunk_);
  }

  void TensorsError(Status s, uint64_t tensor, int64_t chunk) {
    if (!Before(tensor, chunk)) return;
    tensors_error_ = std::move(s);
    error_tensor_ = tensor;
    error_chunk_ = chunk;
  }

  void TakeChunk(const json& cj, uint64_t t, uint64_t c) {
    if (t != pending_tensor_) {
      pending_.clear();
      pending_tensor_ = t;
    }
    ChunkEntry chunk;
    const Status s = DecodeChunk(cj, t, c, &chunk);
    if (!s.ok()) return TensorsError(s, t, static_cast<int64_t>(c));
    pending_.push_back(std::move(chunk));
  }

  void TakeTensor(const json& tj, uint64_t t) {
    TensorEntry e;
    const Status s = DecodeTensor(tj, t, &e);
    if (!s.ok()) {
      TensorsError(s, t, kHeader);
    } else if (Before(t, kHeader)) {
      if (pending_tensor_ == t) e.chunks = std::move(pending_);
      m_->tensors.push_back(std::move(e));
    }
    pending_ = std::vector<ChunkEntry>();
    pending_tensor_ = std::numeric_limits<uint64_t>::max();
  }

  Status DecodeFile(const json& f, uint64_t i) {
    const Where where("files", i);
    if (!f.is_object()) return r_.Bad(where.str(), "expected an object");
    FileEntry e;
    CKPTSPEC_RETURN_IF_ERROR(r_.String(f, where, "name", &e.name));
    if (!IsSafeFileName(e.name) || e.name == kMetadataFileName ||
        e.name == kMetadataChecksumFileName) {
      return r_.Bad(where + "name", "'" + e.name.substr(0, 64) +
                                        "' is not a plain data file name in the checkpoint directory");
    }
    if (!names_.insert(e.name).second) return r_.Bad(where + "name", "duplicate file '" + e.name + "'");
    int64_t size;
    CKPTSPEC_RETURN_IF_ERROR(r_.Int(f, where, "size", 0, std::numeric_limits<int64_t>::max(), &size));
    e.size = static_cast<uint64_t>(size);
    m_->files.push_back(std::move(e));
    return Status::OK();
  }

  // tensors[t] without its chunks.
  Status DecodeTensor(const json& t, uint64_t i, TensorEntry* e) {
    const Where where("tensors", i);
    if (!t.is_object()) return r_.Bad(where.str(), "expected an object");
    CKPTSPEC_RETURN_IF_ERROR(r_.String(t, where, "key", &e->key));
    if (e->key.empty()) return r_.Bad(where + "key", "empty key");
    if (keys_.count(e->key)) return r_.Bad(where + "key", "duplicate key '" + e->key + "'");
    std::string dtype;
    CKPTSPEC_RETURN_IF_ERROR(r_.String(t, where, "dtype", &dtype));
    if (!ParseDType(dtype, &e->dtype)) {
      return r_.Bad(where + "dtype", "unknown dtype '" + dtype.substr(0, 32) + "'");
    }
    CKPTSPEC_RETURN_IF_ERROR(r_.DimsField(t, where, "global_shape", &e->global_shape));
    int64_t global_volume;
    if (!CheckedVolume(e->global_shape, &global_volume)) {
      return r_.Bad(where + "global_shape", DimsToString(e->global_shape) + " overflows int64");
    }
    const json* chunks;
    CKPTSPEC_RETURN_IF_ERROR(r_.Array(t, where, "chunks", &chunks));
    keys_.insert(e->key);
    return Status::OK();
  }

  // What a chunk's own members say; CheckChunkInContext checks the rest.
  Status DecodeChunk(const json& cj, uint64_t t, uint64_t c, ChunkEntry* chunk) const {
    const Where cw = Where::Chunk(t, c);
    if (!cj.is_object()) return r_.Bad(cw.str(), "expected an object");
    CKPTSPEC_RETURN_IF_ERROR(r_.DimsField(cj, cw, "offset", &chunk->box.offset));
    CKPTSPEC_RETURN_IF_ERROR(r_.DimsField(cj, cw, "shape", &chunk->box.shape));
    CKPTSPEC_RETURN_IF_ERROR(r_.Int(cj, cw, "rank", std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max(), &chunk->rank));
    return ReadExtent(r_, cj, cw, &chunk->extent);
  }

  Status CheckChunkInContext(const TensorEntry& e, const ChunkEntry& chunk, uint64_t t, uint64_t c,
                             int64_t global_volume, int64_t* covered) const {
    const Where cw = Where::Chunk(t, c);
    if (chunk.box.offset.size() != e.global_shape.size() ||
        chunk.box.shape.size() != e.global_shape.size()) {
      return r_.Bad(cw + "shape", "chunk " + BoxToString(chunk.box) + " and global shape " +
                                        DimsToString(e.global_shape) + " differ in rank");
    }
    if (!IsWithin(chunk.box, e.global_shape)) {
      return r_.Bad(cw + "offset", "chunk " + BoxToString(chunk.box) +
                                         " lies outside global shape " + DimsToString(e.global_shape));
    }
    if (chunk.rank < 0 || chunk.rank > m_->world_size - 1) {
      CKPTSPEC_RETURN_IF_ERROR(r_.Range(chunk.rank, FieldName{cw, "rank"}, 0, m_->world_size - 1));
    }
    if (!ExtentFits(chunk.extent, m_->files)) {
      CKPTSPEC_RETURN_IF_ERROR(CheckExtentInContext(r_, chunk.extent, cw, m_->files));
    }
    const int64_t volume = Volume(chunk.box.shape);  // within a validated global shape
    if (chunk.extent.size / DTypeSize(e.dtype) != static_cast<uint64_t>(volume) ||
        chunk.extent.size % DTypeSize(e.dtype) != 0) {
      return r_.Bad(cw + "byte_size", std::to_string(chunk.extent.size) + " bytes, but " +
                                            std::to_string(volume) + " elements of " +
                                            DTypeName(e.dtype) + " need " + std::to_string(volume) +
                                            " x " + std::to_string(DTypeSize(e.dtype)));
    }
    if (volume > global_volume - *covered) {
      return r_.Bad(cw + "shape", "chunks hold more elements than the global shape " +
                                        DimsToString(e.global_shape));
    }
    *covered += volume;
    return Status::OK();
  }

  // What an object's own members say; CheckObjectInContext checks the rest.
  Status DecodeObject(const json& o, uint64_t i) {
    const Where where("objects", i);
    if (!o.is_object()) return r_.Bad(where.str(), "expected an object");
    ObjectEntry e;
    CKPTSPEC_RETURN_IF_ERROR(r_.String(o, where, "key", &e.key));
    if (e.key.empty()) return r_.Bad(where + "key", "empty key");
    CKPTSPEC_RETURN_IF_ERROR(r_.DimsField(o, where, "global_shape", &e.global_shape));
    CKPTSPEC_RETURN_IF_ERROR(r_.DimsField(o, where, "global_offset", &e.global_offset));
    ObjectSpec spec;
    spec.key = e.key;
    spec.global_shape = e.global_shape;
    spec.global_offset = e.global_offset;
    const Status valid = ValidateObjectSpec(spec);
    if (!valid.ok()) return r_.Bad(where + "global_offset", valid.message());
    if (!unique_keys_.insert(e.UniqueKey()).second) {
      return r_.Bad(where + "key", "duplicate object '" + e.UniqueKey() + "'");
    }
    CKPTSPEC_RETURN_IF_ERROR(r_.Int(o, where, "rank", std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max(), &e.rank));
    CKPTSPEC_RETURN_IF_ERROR(ReadExtent(r_, o, where, &e.extent));
    m_->objects.push_back(std::move(e));
    return Status::OK();
  }

  Status CheckObjectInContext(const ObjectEntry& e, uint64_t i) const {
    const Where where("objects", i);
    if (keys_.count(e.key)) return r_.Bad(where + "key", "'" + e.key + "' is also a tensor key");
    CKPTSPEC_RETURN_IF_ERROR(r_.Range(e.rank, FieldName{where, "rank"}, 0, m_->world_size - 1));
    return CheckExtentInContext(r_, e.extent, where, m_->files);
  }

  const Reader& r_;
  CheckpointMetadata* m_;
  Status files_error_, tensors_error_, objects_error_;
  uint64_t error_tensor_ = 0;  // where tensors_error_ was found
  int64_t error_chunk_ = 0;
  std::vector<ChunkEntry> pending_;  // the chunks of pending_tensor_, read before its other members
  uint64_t pending_tensor_ = std::numeric_limits<uint64_t>::max();
  std::set<std::string> names_;
  std::unordered_set<std::string> keys_;
  std::unordered_set<std::string> unique_keys_;
};

// The top-level members, in the order they are checked.
Status DecodeTopLevel(json& j, const Reader& r, CheckpointMetadata* m) {
  if (!j.is_object()) return r.Bad("(top level)", "expected an object");
  std::string format;
  CKPTSPEC_RETURN_IF_ERROR(r.String(j, Where(), "format", &format));
  if (format != kReferenceFormatName) {
    return r.Bad("format", "'" + format.substr(0, 64) + "' is not '" + kReferenceFormatName + "'");
  }
  int64_t version;
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, Where(), "format_version", 1, 1 << 20, &version));
  if (version > kReferenceFormatVersion) {
    return Status::NotSupported(r.Bad("format_version", "version " + std::to_string(version) +
                                                            " is newer than this reader (" +
                                                            std::to_string(kReferenceFormatVersion) +
                                                            ")").message());
  }
  m->format_version = static_cast<int>(version);
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, Where(), "iteration", 0, kMaxIteration, &m->iteration));
  CKPTSPEC_RETURN_IF_ERROR(r.Int(j, Where(), "world_size", 1, int64_t{1} << 31, &m->world_size));
  const json* v;
  CKPTSPEC_RETURN_IF_ERROR(r.Field(j, Where(), "layout", &v));
  m->layout = std::move(j["layout"]);
  CKPTSPEC_RETURN_IF_ERROR(r.Field(j, Where(), "common", &v));
  m->common = std::move(j["common"]);
  return Status::OK();
}

}  // namespace

Status DecodeMetadata(const std::string& text, const std::string& path, CheckpointMetadata* out) {
  JsonLimits limits;
  limits.max_bytes = kMaxMetadataBytes;
  return DecodeMetadata(text, path, limits, out);
}

Status DecodeMetadata(const std::string& text, const std::string& path, const JsonLimits& limits,
                      CheckpointMetadata* out) {
  const Reader reader(path);
  try {
    CheckpointMetadata m;
    MetadataDecoder decoder(reader, &m);
    JsonLimits bounded = limits;
    bounded.max_tree_bytes = std::min(
        limits.max_tree_bytes, kMaxMetadataTreeBytesPerByte * text.size() + kMetadataTreeAllowance);
    json top;
    const Status read = ParseJsonStreamed(text, bounded, &decoder, &top);
    if (!read.ok()) return reader.NotJson(read);
    CKPTSPEC_RETURN_IF_ERROR(DecodeTopLevel(top, reader, &m));
    CKPTSPEC_RETURN_IF_ERROR(decoder.Finish(top));
    *out = std::move(m);
    return Status::OK();
  } catch (const std::exception& e) {
    return reader.Bad("(top level)", std::string("malformed: ") + e.what());
  }
}

}  // namespace ckptspec
