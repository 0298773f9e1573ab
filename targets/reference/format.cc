#include "targets/reference/format.h"

#include <xxhash.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <set>
#include <string_view>
#include <unordered_set>

#include "model/json_fields.h"
#include "model/json_util.h"
#include "model/sharded.h"

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

std::string ChecksumHex(uint64_t checksum) { return DigestHex(checksum); }

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

ObjectSpec ObjectEntry::Spec() const {
  ObjectSpec spec;
  spec.key = key;
  spec.global_shape = global_shape;
  spec.global_offset = global_offset;
  if (global_shape.empty()) spec.replica_id.clear();  // rank-local
  return spec;
}

std::string ObjectEntry::UniqueKey() const { return StoredObjectKey(Spec(), rank); }

namespace {

using Action = JsonStreamHandler::Action;
using namespace std::string_view_literals;

// The most axes a shape may have.
constexpr size_t kMaxAxes = 32;

// A shape or offset: at most kMaxAxes non-negative integers.
Status GetDims(const JsonField& field, Dims* out) {
  CKPTSPEC_RETURN_IF_ERROR(field.ExpectArray());
  if (field.size() > kMaxAxes) return field.Error("more than 32 axes");
  return field.GetNonNegativeInt64Array(out);
}

// The members of an extent that need nothing but the entry: integers, the checksum's spelling.
// `file` is read as an integer here; its range is checked by CheckExtentInContext.
Status ReadExtent(const JsonField& entry, Extent* e) {
  int64_t file, offset, size;
  CKPTSPEC_RETURN_IF_ERROR(entry.Member("file").GetInt64(&file));
  CKPTSPEC_RETURN_IF_ERROR(entry.Member("byte_offset").GetNonNegativeInt64(&offset));
  CKPTSPEC_RETURN_IF_ERROR(entry.Member("byte_size").GetNonNegativeInt64(&size));
  const JsonField xxh3 = entry.Member("xxh3");
  std::string hex;
  CKPTSPEC_RETURN_IF_ERROR(xxh3.GetString(&hex));
  if (!ParseChecksumHex(hex, &e->checksum)) return xxh3.Expected("16 lowercase hex digits");
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

// The checks of an extent that need the files: its file exists and holds its byte range. `entry`
// names the chunk or object (read earlier, so absent now).
Status CheckExtentInContext(const Extent& e, const JsonField& entry,
                            const std::vector<FileEntry>& files) {
  const int64_t last_file = static_cast<int64_t>(files.size()) - 1;
  if (e.file < 0 || e.file > last_file) {
    return entry.Member("file").OutOfRange(e.file, 0, last_file);
  }
  const uint64_t file_size = files[e.file].size;
  if (e.offset > file_size || e.size > file_size - e.offset) {
    return entry.Member("byte_offset")
        .Error("range [" + std::to_string(e.offset) + ", +" + std::to_string(e.size) +
               ") exceeds file '" + files[e.file].name + "' of " + std::to_string(file_size) +
               " bytes");
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
  explicit MetadataDecoder(CheckpointMetadata* m) : m_(m) {}

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
    const JsonField entry(value, p);
    if (p.Matches({"tensors", "[]", "chunks", "[]"})) {
      TakeChunk(entry, p.Index(1), p.Index(3));
    } else if (p.Matches({"tensors", "[]"})) {
      TakeTensor(entry, p.Index(1));
    } else if (p.Matches({"files", "[]"})) {
      if (files_error_.ok()) files_error_ = DecodeFile(entry);
    } else if (p.Matches({"objects", "[]"})) {
      if (objects_error_.ok()) objects_error_ = DecodeObject(entry);
    }
    return Status::OK();
  }

  // The checks that needed the whole document, after DecodeTopLevel: files, tensors and their
  // chunks, objects, in order. The entries were streamed: `top` holds their arrays empty.
  Status Finish(const json& top) const {
    const JsonField root(top);
    CKPTSPEC_RETURN_IF_ERROR(root.Member("files").ExpectArray());
    CKPTSPEC_RETURN_IF_ERROR(files_error_);
    const JsonField tensors = root.Member("tensors");
    CKPTSPEC_RETURN_IF_ERROR(tensors.ExpectArray());
    for (size_t t = 0; t < m_->tensors.size(); ++t) {
      const TensorEntry& e = m_->tensors[t];
      const JsonField tensor = tensors.Element(t);
      const JsonField chunks = tensor.Member("chunks");
      int64_t global_volume = 0;
      CheckedVolume(e.global_shape, &global_volume);  // checked when read
      int64_t covered = 0;
      for (size_t c = 0; c < e.chunks.size(); ++c) {
        CKPTSPEC_RETURN_IF_ERROR(
            CheckChunkInContext(e, e.chunks[c], chunks.Element(c), global_volume, &covered));
      }
    }
    CKPTSPEC_RETURN_IF_ERROR(tensors_error_);
    const JsonField objects = root.Member("objects");
    CKPTSPEC_RETURN_IF_ERROR(objects.ExpectArray());
    for (size_t i = 0; i < m_->objects.size(); ++i) {
      CKPTSPEC_RETURN_IF_ERROR(CheckObjectInContext(m_->objects[i], objects.Element(i)));
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
           name == "rank"sv || name == "file"sv || name == "byte_offset"sv ||
           name == "byte_size"sv || name == "xxh3"sv;
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
        p.Index(level + 1) <= kMaxAxes) {
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

  void TakeChunk(const JsonField& field, uint64_t t, uint64_t c) {
    if (t != pending_tensor_) {
      pending_.clear();
      pending_tensor_ = t;
    }
    ChunkEntry chunk;
    const Status s = DecodeChunk(field, &chunk);
    if (!s.ok()) return TensorsError(s, t, static_cast<int64_t>(c));
    pending_.push_back(std::move(chunk));
  }

  void TakeTensor(const JsonField& field, uint64_t t) {
    TensorEntry e;
    const Status s = DecodeTensor(field, &e);
    if (!s.ok()) {
      TensorsError(s, t, kHeader);
    } else if (Before(t, kHeader)) {
      if (pending_tensor_ == t) e.chunks = std::move(pending_);
      m_->tensors.push_back(std::move(e));
    }
    pending_ = std::vector<ChunkEntry>();
    pending_tensor_ = std::numeric_limits<uint64_t>::max();
  }

  Status DecodeFile(const JsonField& f) {
    CKPTSPEC_RETURN_IF_ERROR(f.ExpectObject());
    FileEntry e;
    const JsonField name = f.Member("name");
    CKPTSPEC_RETURN_IF_ERROR(name.GetString(&e.name));
    if (!IsSafeFileName(e.name) || e.name == kMetadataFileName ||
        e.name == kMetadataChecksumFileName) {
      return name.Error("'" + e.name.substr(0, 64) +
                        "' is not a plain data file name in the checkpoint directory");
    }
    if (!names_.insert(e.name).second) return name.Error("duplicate file '" + e.name + "'");
    int64_t size;
    CKPTSPEC_RETURN_IF_ERROR(f.Member("size").GetNonNegativeInt64(&size));
    e.size = static_cast<uint64_t>(size);
    m_->files.push_back(std::move(e));
    return Status::OK();
  }

  // tensors[t] without its chunks.
  Status DecodeTensor(const JsonField& t, TensorEntry* e) {
    CKPTSPEC_RETURN_IF_ERROR(t.ExpectObject());
    const JsonField key = t.Member("key");
    CKPTSPEC_RETURN_IF_ERROR(key.GetString(&e->key));
    if (e->key.empty()) return key.Error("empty key");
    if (keys_.count(e->key)) return key.Error("duplicate key '" + e->key + "'");
    const JsonField dtype = t.Member("dtype");
    std::string dtype_name;
    CKPTSPEC_RETURN_IF_ERROR(dtype.GetString(&dtype_name));
    if (!ParseDType(dtype_name, &e->dtype)) {
      return dtype.Error("unknown dtype '" + dtype_name.substr(0, 32) + "'");
    }
    const JsonField global_shape = t.Member("global_shape");
    CKPTSPEC_RETURN_IF_ERROR(GetDims(global_shape, &e->global_shape));
    int64_t global_volume;
    if (!CheckedVolume(e->global_shape, &global_volume)) {
      return global_shape.Error(DimsToString(e->global_shape) + " overflows int64");
    }
    CKPTSPEC_RETURN_IF_ERROR(t.Member("chunks").ExpectArray());
    keys_.insert(e->key);
    return Status::OK();
  }

  // What a chunk's own members say; CheckChunkInContext checks the rest.
  Status DecodeChunk(const JsonField& chunk, ChunkEntry* out) const {
    CKPTSPEC_RETURN_IF_ERROR(chunk.ExpectObject());
    CKPTSPEC_RETURN_IF_ERROR(GetDims(chunk.Member("offset"), &out->box.offset));
    CKPTSPEC_RETURN_IF_ERROR(GetDims(chunk.Member("shape"), &out->box.shape));
    CKPTSPEC_RETURN_IF_ERROR(chunk.Member("rank").GetInt64(&out->rank));
    return ReadExtent(chunk, &out->extent);
  }

  // `field` names tensors[t].chunks[c].
  Status CheckChunkInContext(const TensorEntry& e, const ChunkEntry& chunk, const JsonField& field,
                             int64_t global_volume, int64_t* covered) const {
    if (chunk.box.offset.size() != e.global_shape.size() ||
        chunk.box.shape.size() != e.global_shape.size()) {
      return field.Member("shape").Error("chunk " + BoxToString(chunk.box) + " and global shape " +
                                         DimsToString(e.global_shape) + " differ in rank");
    }
    if (!IsWithin(chunk.box, e.global_shape)) {
      return field.Member("offset").Error("chunk " + BoxToString(chunk.box) +
                                          " lies outside global shape " +
                                          DimsToString(e.global_shape));
    }
    if (chunk.rank < 0 || chunk.rank > m_->world_size - 1) {
      return field.Member("rank").OutOfRange(chunk.rank, 0, m_->world_size - 1);
    }
    if (!ExtentFits(chunk.extent, m_->files)) {
      CKPTSPEC_RETURN_IF_ERROR(CheckExtentInContext(chunk.extent, field, m_->files));
    }
    const int64_t volume = Volume(chunk.box.shape);  // within a validated global shape
    if (chunk.extent.size / DTypeSize(e.dtype) != static_cast<uint64_t>(volume) ||
        chunk.extent.size % DTypeSize(e.dtype) != 0) {
      return field.Member("byte_size")
          .Error(std::to_string(chunk.extent.size) + " bytes, but " + std::to_string(volume) +
                 " elements of " + DTypeName(e.dtype) + " need " + std::to_string(volume) + " x " +
                 std::to_string(DTypeSize(e.dtype)));
    }
    if (volume > global_volume - *covered) {
      return field.Member("shape").Error("chunks hold more elements than the global shape " +
                                         DimsToString(e.global_shape));
    }
    *covered += volume;
    return Status::OK();
  }

  // What an object's own members say; CheckObjectInContext checks the rest.
  Status DecodeObject(const JsonField& o) {
    CKPTSPEC_RETURN_IF_ERROR(o.ExpectObject());
    ObjectEntry e;
    const JsonField key = o.Member("key");
    CKPTSPEC_RETURN_IF_ERROR(key.GetString(&e.key));
    if (e.key.empty()) return key.Error("empty key");
    CKPTSPEC_RETURN_IF_ERROR(GetDims(o.Member("global_shape"), &e.global_shape));
    const JsonField global_offset = o.Member("global_offset");
    CKPTSPEC_RETURN_IF_ERROR(GetDims(global_offset, &e.global_offset));
    const Status valid = ValidateObjectSpec(e.Spec());
    if (!valid.ok()) return global_offset.Error(valid.message());
    CKPTSPEC_RETURN_IF_ERROR(o.Member("rank").GetInt64(&e.rank));
    if (!unique_keys_.insert(e.UniqueKey()).second) {
      return key.Error("duplicate object '" + e.UniqueKey() + "'");
    }
    CKPTSPEC_RETURN_IF_ERROR(ReadExtent(o, &e.extent));
    m_->objects.push_back(std::move(e));
    return Status::OK();
  }

  // `field` names objects[i].
  Status CheckObjectInContext(const ObjectEntry& e, const JsonField& field) const {
    if (keys_.count(e.key)) {
      return field.Member("key").Error("'" + e.key + "' is also a tensor key");
    }
    if (e.rank < 0 || e.rank > m_->world_size - 1) {
      return field.Member("rank").OutOfRange(e.rank, 0, m_->world_size - 1);
    }
    return CheckExtentInContext(e.extent, field, m_->files);
  }

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
Status DecodeTopLevel(json& j, CheckpointMetadata* m) {
  const JsonField root(j);
  CKPTSPEC_RETURN_IF_ERROR(root.ExpectObject());
  const JsonField format = root.Member("format");
  std::string format_name;
  CKPTSPEC_RETURN_IF_ERROR(format.GetString(&format_name));
  if (format_name != kReferenceFormatName) {
    return format.Expected(std::string("\"") + kReferenceFormatName + "\"");
  }
  const JsonField format_version = root.Member("format_version");
  int64_t version;
  CKPTSPEC_RETURN_IF_ERROR(format_version.GetInt64(1, 1 << 20, &version));
  if (version > kReferenceFormatVersion) {
    return Status::NotSupported(format_version
                                    .Error("version " + std::to_string(version) +
                                           " is newer than this reader (" +
                                           std::to_string(kReferenceFormatVersion) + ")")
                                    .message());
  }
  m->format_version = static_cast<int>(version);
  CKPTSPEC_RETURN_IF_ERROR(root.Member("iteration").GetInt64(0, kMaxIteration, &m->iteration));
  CKPTSPEC_RETURN_IF_ERROR(root.Member("world_size").GetInt64(1, int64_t{1} << 31, &m->world_size));
  CKPTSPEC_RETURN_IF_ERROR(root.Member("layout").ExpectPresent());
  CKPTSPEC_RETURN_IF_ERROR(root.Member("common").ExpectPresent());
  m->layout = std::move(j["layout"]);
  m->common = std::move(j["common"]);
  return Status::OK();
}

// An error of the decoders as DecodeMetadata reports it: the file's name in front, and a
// malformed value (InvalidArgument, as the JSON reader and JsonField give it) re-coded as
// Corruption.
Status InFile(const std::string& file, const Status& s) {
  if (s.code() != Status::Code::kInvalidArgument) return s.WithContext(file);
  return Status::Corruption(file + ": " + s.message());
}

}  // namespace

uint64_t MetadataTreeBound(const JsonLimits& limits, size_t text_size) {
  return std::min(limits.max_tree_bytes,
                  kMaxMetadataTreeBytesPerByte * text_size + kMetadataTreeAllowance);
}

Status DecodeMetadata(const std::string& text, const std::string& path, CheckpointMetadata* out) {
  JsonLimits limits;
  limits.max_bytes = kMaxMetadataBytes;
  return DecodeMetadata(text, path, limits, out);
}

Status DecodeMetadata(const std::string& text, const std::string& path, const JsonLimits& limits,
                      CheckpointMetadata* out) {
  try {
    CheckpointMetadata m;
    MetadataDecoder decoder(&m);
    JsonLimits bounded = limits;
    bounded.max_tree_bytes = MetadataTreeBound(limits, text.size());
    json top;
    Status s = ParseJsonStreamed(text, bounded, &decoder, &top);
    if (s.ok()) s = DecodeTopLevel(top, &m);
    if (s.ok()) s = decoder.Finish(top);
    if (!s.ok()) return InFile(path, s);
    *out = std::move(m);
    return Status::OK();
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": (root): malformed: " + e.what());
  }
}

}  // namespace ckptspec
