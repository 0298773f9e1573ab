// ReferenceEngine::Load: metadata verification, strict handling, resharding by chunk
// intersection, checksum verification of every byte read.
//
// Strict handling follows StrictRuleOf (targets/strict_mode.h).
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string_view>
#include <unordered_map>

#include "model/box_overlap.h"
#include "model/dtype_conversion.h"
#include "targets/reference/checksum_stream.h"
#include "targets/reference/extent_overlap.h"
#include "targets/reference/reference_engine.h"
#include "targets/reference/tensor_destination.h"

namespace ckptspec {

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string s = "[";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + "]";
}

// Calls run(src_byte, dst_byte, bytes) for each run of `piece` that is contiguous both in a
// row-major buffer over `src_box` and in one over `dst_box` (the trailing axes the piece spans
// entirely in both boxes merge into one run), in increasing order of src_byte.
// Precondition: piece lies inside both boxes.
template <typename Run>
Status ForEachRun(const Box& src_box, const Box& dst_box, const Box& piece, int elem, Run run) {
  const int rank = piece.rank();
  if (rank == 0) return run(0, 0, static_cast<uint64_t>(elem));
  const int64_t total = Volume(piece.shape);
  if (total == 0) return Status::OK();
  int outer = rank - 1;  // axes [outer, rank) make one contiguous run
  int64_t run_elems = piece.shape[rank - 1];
  while (outer > 0 && piece.shape[outer] == src_box.shape[outer] &&
         piece.shape[outer] == dst_box.shape[outer]) {
    --outer;
    run_elems *= piece.shape[outer];
  }
  Dims coord(rank, 0), s(rank), d(rank);
  for (int64_t done = 0; done < total; done += run_elems) {
    for (int a = 0; a < rank; ++a) {
      s[a] = piece.offset[a] + coord[a] - src_box.offset[a];
      d[a] = piece.offset[a] + coord[a] - dst_box.offset[a];
    }
    CKPTSPEC_RETURN_IF_ERROR(run(static_cast<uint64_t>(LinearIndex(s, src_box.shape)) * elem,
                                 static_cast<uint64_t>(LinearIndex(d, dst_box.shape)) * elem,
                                 static_cast<uint64_t>(run_elems) * elem));
    for (int a = outer - 1; a >= 0; --a) {
      if (++coord[a] < piece.shape[a]) break;
      coord[a] = 0;
    }
  }
  return Status::OK();
}

// Copies the elements of `piece` from a row-major buffer over `src_box` into a destination
// holding a row-major buffer over `dst_box`, one Write per run.
Status CopyBox(const uint8_t* src, const Box& src_box, TensorDestination* dst, const Box& dst_box,
               const Box& piece, int elem) {
  return ForEachRun(src_box, dst_box, piece, elem, [&](uint64_t from, uint64_t to, uint64_t bytes) {
    return dst->Write(to, src + from, bytes);
  });
}

// A destination of `to` elements seen as one of `from` elements, for a template whose dtype
// differs from the checkpoint's: every Write (offset and size in bytes of `from` elements, as the
// copy loops compute them from the chunk's dtype) converts its elements (dtype_conversion.h) and
// writes them at the same element index of the real destination. Offsets and sizes must be whole
// elements, as the copy runs and the streamed blocks (kStreamBlockBytes, a multiple of every
// element size) are. host_data() is null, so that every byte arrives through Write.
class ConvertingDestination : public TensorDestination {
 public:
  ConvertingDestination(TensorDestination* dst, DType from, DType to, std::string what)
      : dst_(dst),
        from_(from),
        to_(to),
        in_(DTypeSize(from)),
        out_(DTypeSize(to)),
        what_(std::move(what)) {}
  uint64_t size() const override { return dst_->size() / out_ * in_; }
  Status Write(uint64_t offset, const void* src, uint64_t n) override {
    if (offset % in_ != 0 || n % in_ != 0) {
      return Status::InvalidArgument(what_ + ": a write of " + std::to_string(n) +
                                     " bytes at byte " + std::to_string(offset) + " splits a " +
                                     DTypeName(from_) + " element");
    }
    const uint64_t count = n / in_;
    buffer_.resize(count * out_);
    const Status s = ConvertElements(from_, to_, static_cast<const uint8_t*>(src), count,
                                     offset / in_, buffer_.data());
    if (!s.ok()) return s.WithContext(what_);
    return dst_->Write(offset / in_ * out_, buffer_.data(), count * out_);
  }
  Status Zero() override { return dst_->Zero(); }

 private:
  TensorDestination* dst_;
  DType from_, to_;
  int in_, out_;
  std::string what_;
  std::vector<uint8_t> buffer_;  // one write's converted elements
};

// The first two chunks of `entry` among `pieces` (chunk index, its part of the request) whose
// parts intersect, or false. O(N log N) (model/box_overlap.h).
bool FindOverlappingPieces(const std::vector<std::pair<size_t, Box>>& pieces, size_t* first,
                           size_t* second) {
  if (pieces.size() < 2 || pieces[0].second.rank() == 0) {
    if (pieces.size() >= 2) *first = pieces[0].first, *second = pieces[1].first;
    return pieces.size() >= 2;  // scalars: any two pieces are the same element
  }
  const size_t rank = static_cast<size_t>(pieces[0].second.rank());
  BoxBounds unsorted;
  unsorted.rank = rank;
  for (const auto& piece : pieces) {
    const Box& b = piece.second;
    for (size_t a = 0; a < rank; ++a) {
      unsorted.lo.push_back(b.offset[a]);
      unsorted.hi.push_back(b.offset[a] + b.shape[a]);
    }
  }
  std::vector<size_t> order;
  const BoxBounds bounds = SortedAlong(unsorted, 0, &order);
  bool found = false;
  ForEachOverlap(bounds, 0, [&](size_t k, size_t i) {
    *first = pieces[order[k]].first;
    *second = pieces[order[i]].first;
    found = true;
    return false;
  });
  return found;
}

class CheckpointReader {
 public:
  CheckpointReader(Env* env, std::string dir, const CheckpointMetadata& m)
      : env_(env), dir_(std::move(dir)), m_(m), files_(m.files.size()), paths_(m.files.size()) {}

  // Reads an extent into `out` (extent.size bytes, the caller's memory) and verifies its checksum.
  // `what()` names the extent in the error; it is called only for one.
  template <class What>
  Status ReadVerified(const Extent& e, const What& what, uint8_t* out) {
    const RandomAccessFile* file = nullptr;
    CKPTSPEC_RETURN_IF_ERROR(File(e, &file));
    CKPTSPEC_RETURN_IF_ERROR(ReadExactly(*file, Path(e), e.offset, e.size, out));
    return Verify(e, what, Checksum(out, e.size));
  }

  // A verified chunk of at most kCacheBytes, cached for the other ranks that request it.
  Status Chunk(size_t tensor, size_t chunk, const uint8_t** data) {
    const auto id = std::make_pair(tensor, chunk);
    auto it = cache_.find(id);
    if (it == cache_.end()) {
      const ChunkEntry& c = m_.tensors[tensor].chunks[chunk];
      if (cached_bytes_ + c.extent.size > kCacheBytes) {
        cache_.clear();
        cached_bytes_ = 0;
      }
      std::vector<uint8_t> buffer(c.extent.size);
      CKPTSPEC_RETURN_IF_ERROR(ReadVerified(
          c.extent, [&] { return ChunkName(tensor, chunk); }, buffer.data()));
      cached_bytes_ += buffer.size();
      it = cache_.emplace(id, std::move(buffer)).first;
    }
    *data = it->second.data();
    return Status::OK();
  }

  // Copies `piece` of a chunk larger than kCacheBytes to the destination while the chunk is
  // streamed through one block buffer and checksummed; the whole chunk is read. On a checksum
  // mismatch the destination holds unverified bytes and the load fails.
  Status StreamPiece(size_t tensor, size_t chunk, TensorDestination* dst, const Box& dst_box,
                     const Box& piece, int elem) {
    const ChunkEntry& c = m_.tensors[tensor].chunks[chunk];
    const RandomAccessFile* file = nullptr;
    CKPTSPEC_RETURN_IF_ERROR(File(c.extent, &file));
    RangeStream stream(*file, Path(c.extent), c.extent.offset, c.extent.size, &block_);
    bool more = true;
    // The piece's runs come in increasing order of their place in the chunk: each is copied out
    // of the blocks it spans as the stream passes them.
    auto copy_run = [&](uint64_t from, uint64_t to, uint64_t bytes) {
      while (bytes > 0) {
        while (more && from >= stream.block_begin() + stream.block_size()) {
          CKPTSPEC_RETURN_IF_ERROR(stream.Next(&more));
        }
        if (!more)
          return Status::Corruption(Path(c.extent) + ": " + ChunkName(tensor, chunk) +
                                    " ends before its box");  // precondition broken
        const uint64_t end = stream.block_begin() + stream.block_size();
        const uint64_t take = std::min(bytes, end - from);
        const uint8_t* data = stream.block() + (from - stream.block_begin());
        CKPTSPEC_RETURN_IF_ERROR(dst->Write(to, data, take));
        from += take;
        to += take;
        bytes -= take;
      }
      return Status::OK();
    };
    CKPTSPEC_RETURN_IF_ERROR(ForEachRun(c.box, dst_box, piece, elem, copy_run));
    while (more) CKPTSPEC_RETURN_IF_ERROR(stream.Next(&more));  // the rest, for the checksum
    return Verify(
        c.extent, [&] { return ChunkName(tensor, chunk); }, stream.Digest());
  }

  // Fills `dst`, the destination of a shard with spec `spec`. A template of another dtype than
  // the checkpoint's gets every element converted into its dtype (dtype_conversion.h: between
  // floating dtypes, rounded to nearest even; an integer dtype or a finite value that overflows
  // is an error naming the tensor).
  Status LoadTensor(size_t t, const std::string& who, bool allow_shape_mismatch,
                    const TensorSpec& spec, TensorDestination* dst) {
    const TensorEntry& entry = m_.tensors[t];
    if (entry.dtype == spec.dtype) return Fill(t, who, allow_shape_mismatch, spec, dst);
    const Status convertible = CheckConversion(entry.dtype, spec.dtype);
    if (!convertible.ok()) {
      return Status::InvalidArgument(who + "tensor '" + entry.key + "': checkpoint dtype " +
                                     DTypeName(entry.dtype) + ", requested " +
                                     DTypeName(spec.dtype) + ": " + convertible.message());
    }
    ConvertingDestination converting(dst, entry.dtype, spec.dtype,
                                     who + "tensor '" + entry.key + "'");
    return Fill(t, who, allow_shape_mismatch, spec, &converting);
  }

  // Objects are held whole in memory (the result carries them); their sizes are bounded by the
  // checkpoint's files and the read budget (ReadMetadata), and memory running out is an error.
  Status LoadObject(const ObjectEntry& entry, ShardedObject* dst) {
    const auto what = [&entry] { return "object '" + entry.UniqueKey() + "'"; };
    std::string bytes;
    try {
      bytes.resize(entry.extent.size);
    } catch (const std::bad_alloc&) {
      return Status::OutOfMemory(Path(entry.extent) + ": " + what() + " of " +
                                 std::to_string(entry.extent.size) +
                                 " bytes does not fit in memory");
    }
    CKPTSPEC_RETURN_IF_ERROR(
        ReadVerified(entry.extent, what, reinterpret_cast<uint8_t*>(bytes.data())));
    dst->data = std::move(bytes);
    return Status::OK();
  }

 private:
  static constexpr uint64_t kCacheBytes = uint64_t{256} << 20;

  // LoadTensor into a destination of the checkpoint's dtype (its size in those elements).
  Status Fill(size_t t, const std::string& who, bool allow_shape_mismatch, const TensorSpec& spec,
              TensorDestination* dst) {
    const TensorEntry& entry = m_.tensors[t];
    const Box dst_box = spec.box();
    Box want = dst_box;
    if (entry.global_shape != spec.global_shape) {
      if (!allow_shape_mismatch || entry.global_shape.size() != spec.global_shape.size()) {
        return Status::InvalidArgument(who + "global shape mismatch for tensor '" + entry.key +
                                       "': checkpoint " + DimsToString(entry.global_shape) +
                                       ", requested " + DimsToString(spec.global_shape));
      }
      CKPTSPEC_RETURN_IF_ERROR(dst->Zero());
      const Box whole{Dims(entry.global_shape.size(), 0), entry.global_shape};
      if (!Intersect(dst_box, whole, &want)) return Status::OK();
    }
    const int64_t want_volume = Volume(want.shape);
    if (want_volume == 0) return Status::OK();

    std::vector<std::pair<size_t, Box>> pieces;
    for (size_t c = 0; c < entry.chunks.size(); ++c) {
      Box piece;
      if (Intersect(entry.chunks[c].box, want, &piece)) pieces.emplace_back(c, std::move(piece));
    }
    size_t a, b;
    if (FindOverlappingPieces(pieces, &a, &b)) {
      // Named by the files holding them: in a per-writer index they come from two indexes.
      return Status::Corruption(dir_ + ": tensor '" + entry.key + "': chunks " +
                                BoxToString(entry.chunks[a].box) + " (in " +
                                m_.files[entry.chunks[a].extent.file].name + ") and " +
                                BoxToString(entry.chunks[b].box) + " (in " +
                                m_.files[entry.chunks[b].extent.file].name + ") overlap");
    }
    int64_t covered = 0;  // disjoint parts of `want`: at most its volume
    for (const auto& piece : pieces) covered += Volume(piece.second.shape);
    if (covered != want_volume) {
      return Status::NotFound(who + "tensor '" + entry.key + "' box " + BoxToString(want) +
                              ": the checkpoint holds " + std::to_string(covered) + " of its " +
                              std::to_string(want_volume) + " elements");
    }
    const int elem = DTypeSize(entry.dtype);
    for (const auto& [c, piece] : pieces) {
      const ChunkEntry& chunk = entry.chunks[c];
      if (chunk.box == dst_box && piece == dst_box && !cache_.count({t, c}) &&
          dst->host_data() != nullptr && chunk.extent.size == dst->size()) {
        // Same chunk as requested, host memory: read straight into the destination.
        const size_t chunk_index = c;  // a lambda may not capture a structured binding (C++17)
        CKPTSPEC_RETURN_IF_ERROR(ReadVerified(
            chunk.extent, [&] { return ChunkName(t, chunk_index); }, dst->host_data()));
        continue;
      }
      if (chunk.extent.size > kCacheBytes) {
        // Too large to stage: streamed, and read again for each rank that needs a part of it.
        CKPTSPEC_RETURN_IF_ERROR(StreamPiece(t, c, dst, dst_box, piece, elem));
        continue;
      }
      // Otherwise the chunk is read once into host staging memory (verified there, and cached
      // for the other ranks that need it) and each piece is written to the destination.
      const uint8_t* src = nullptr;
      CKPTSPEC_RETURN_IF_ERROR(Chunk(t, c, &src));
      CKPTSPEC_RETURN_IF_ERROR(CopyBox(src, chunk.box, dst, dst_box, piece, elem));
    }
    return Status::OK();
  }

  // The path of the extent's file, joined once per file.
  const std::string& Path(const Extent& e) {
    std::string& path = paths_[e.file];
    if (path.empty()) path = JoinPath(dir_, m_.files[e.file].name);
    return path;
  }

  std::string ChunkName(size_t tensor, size_t chunk) const {
    return "chunk " + BoxToString(m_.tensors[tensor].chunks[chunk].box) + " of tensor '" +
           m_.tensors[tensor].key + "'";
  }

  Status File(const Extent& e, const RandomAccessFile** file) {
    if (!files_[e.file]) {
      CKPTSPEC_RETURN_IF_ERROR(env_->NewRandomAccessFile(Path(e), &files_[e.file]));
    }
    *file = files_[e.file].get();
    return Status::OK();
  }

  // The message names the expected checksum only: never a value computed from what was read.
  template <class What>
  Status Verify(const Extent& e, const What& what, uint64_t actual) {
    if (actual == e.checksum) return Status::OK();
    return Status::Corruption(Path(e) + ": " + what() + " at byte " + std::to_string(e.offset) +
                              " (" + std::to_string(e.size) + " bytes) fails its XXH3 checksum " +
                              ChecksumHex(e.checksum));
  }

  Env* env_;
  std::string dir_;
  const CheckpointMetadata& m_;
  std::vector<std::unique_ptr<RandomAccessFile>> files_;
  std::vector<std::string> paths_;  // Path's, by file index; empty until first used
  std::map<std::pair<size_t, size_t>, std::vector<uint8_t>> cache_;
  uint64_t cached_bytes_ = 0;
  std::vector<uint8_t> block_;  // StreamPiece's read buffer
};

// `check_buffers`: each tensor's data must have its shard's size (loading into the templates).
Status ValidateTemplate(size_t rank, const ShardedStateDict& dict, bool check_buffers) {
  for (const ShardedTensor& t : dict.tensors) {
    const Status s = ValidateTensorSpec(t.spec);
    if (!s.ok()) return s.WithContext("load template of rank " + std::to_string(rank));
    int64_t volume = 0;
    CheckedVolume(t.spec.local_shape, &volume);
    if (check_buffers && t.data.size() != static_cast<uint64_t>(volume) * DTypeSize(t.spec.dtype)) {
      return Status::InvalidArgument(
          "load template of rank " + std::to_string(rank) + ": tensor '" + t.spec.key +
          "' buffer holds " + std::to_string(t.data.size()) + " bytes, its local shape needs " +
          std::to_string(volume * DTypeSize(t.spec.dtype)));
    }
  }
  for (const ShardedObject& o : dict.objects) {
    const Status s = ValidateObjectSpec(o.spec);
    if (!s.ok()) return s.WithContext("load template of rank " + std::to_string(rank));
  }
  return Status::OK();
}

}  // namespace

Status ReferenceEngine::ReadIndexFile(const std::string& dir, const char* name,
                                      const char* checksum_name, CheckpointMetadata* m,
                                      uint64_t* index_bytes) {
  Env* env = options_.env;
  const std::string path = JoinPath(dir, name);
  const std::string sum_path = JoinPath(dir, checksum_name);
  std::string sum_text, text;
  CKPTSPEC_RETURN_IF_ERROR(ReadFileToString(env, sum_path, kMaxTrackerBytes, &sum_text));
  uint64_t stored;
  if (sum_text.size() < 16 || !ParseChecksumHex(sum_text.substr(0, 16), &stored) ||
      sum_text.find_first_not_of("\n", 16) != std::string::npos) {
    return Status::Corruption(sum_path + ": not 16 lowercase hex digits");
  }
  const ResourceLimits& limits = options_.limits;
  uint64_t size = 0;
  CKPTSPEC_RETURN_IF_ERROR(env->GetFileSize(path, &size));
  if (size > limits.max_metadata_bytes) {
    return LimitExceeded(path, size, "bytes", &ResourceLimits::max_metadata_bytes, limits);
  }
  CKPTSPEC_RETURN_IF_ERROR(ReadFileToString(env, path, limits.max_metadata_bytes, &text));
  *index_bytes += text.size();
  if (Checksum(text.data(), text.size()) != stored) {
    return Status::Corruption(path + ": fails its XXH3 checksum: " + sum_path + " says " +
                              ChecksumHex(stored));
  }
  DecodedIndexCache& cache = DecodedIndexCache::Shared();
  if (cache.Find(path, text, limits.json(), m)) return Status::OK();
  CKPTSPEC_RETURN_IF_ERROR(DecodeMetadata(text, path, limits.json(), m));
  cache.Keep(DecodedIndex{path, std::move(text), limits.json(), *m});
  return Status::OK();
}

Status ReferenceEngine::ProbeIndexLayout(const std::string& dir, IndexLayout* layout) {
  Env* env = options_.env;
  if (env->FileExists(JoinPath(dir, kMetadataFileName)).ok()) {
    *layout = IndexLayout::kSingle;
    return Status::OK();
  }
  std::vector<std::string> names;
  const Status listed = env->GetChildren(dir, &names);
  if (!listed.ok() && listed.code() != Status::Code::kNotFound) return listed;
  for (const std::string& name : names) {
    int64_t rank;
    if (ParseWriterDirName(name, &rank)) {
      *layout = IndexLayout::kPerWriter;
      return Status::OK();
    }
  }
  return Status::NotFound(dir + ": no " + kMetadataFileName +
                          " (single index) and no writer_* "
                          "directory (per-writer index)");
}

Status ReferenceEngine::ReadPerWriterIndex(const std::string& dir, CheckpointMetadata* merged,
                                           uint64_t* index_bytes) {
  std::vector<std::string> names;
  CKPTSPEC_RETURN_IF_ERROR(options_.env->GetChildren(dir, &names));
  std::sort(names.begin(), names.end());
  std::map<std::string, size_t> tensor_index;
  std::set<std::string> object_keys;
  bool first = true;
  for (const std::string& writer : names) {
    int64_t rank;
    if (!ParseWriterDirName(writer, &rank)) continue;
    const std::string writer_dir = JoinPath(dir, writer);
    const std::string path = JoinPath(writer_dir, kWriterIndexFileName);
    CheckpointMetadata part;
    CKPTSPEC_RETURN_IF_ERROR(ReadIndexFile(writer_dir, kWriterIndexFileName,
                                           kWriterIndexChecksumFileName, &part, index_bytes));
    if (part.format_version < kPerWriterIndexFormatVersion) {
      return Status::Corruption(path + ": format_version: " + std::to_string(part.format_version) +
                                " has no per-writer index (version " +
                                std::to_string(kPerWriterIndexFormatVersion) + " introduced it)");
    }
    if (first) {
      merged->format_version = part.format_version;
      merged->iteration = part.iteration;
      merged->world_size = part.world_size;
      merged->layout = part.layout;
      merged->common = part.common;
      first = false;
    } else if (part.iteration != merged->iteration || part.world_size != merged->world_size ||
               part.common != merged->common) {
      return Status::Corruption(path +
                                ": iteration, world_size or common differ from the first "
                                "writer's index");
    }
    const int64_t base = static_cast<int64_t>(merged->files.size());
    for (const FileEntry& f : part.files)
      merged->files.push_back(FileEntry{writer + "/" + f.name, f.size});
    for (TensorEntry& t : part.tensors) {
      for (ChunkEntry& c : t.chunks) c.extent.file += base;
      auto [it, inserted] = tensor_index.emplace(t.key, merged->tensors.size());
      if (inserted) {
        merged->tensors.push_back(std::move(t));
        continue;
      }
      TensorEntry& into = merged->tensors[it->second];
      if (into.dtype != t.dtype || into.global_shape != t.global_shape) {
        return Status::Corruption(
            path + ": tensor '" + t.key + "' has dtype " + DTypeName(t.dtype) +
            " and global shape " + DimsToString(t.global_shape) + ", another writer's index says " +
            DTypeName(into.dtype) + " and " + DimsToString(into.global_shape));
      }
      into.chunks.insert(into.chunks.end(), t.chunks.begin(), t.chunks.end());
    }
    for (ObjectEntry& o : part.objects) {
      if (!object_keys.insert(o.UniqueKey()).second) {
        return Status::Corruption(path + ": object '" + o.UniqueKey() +
                                  "' is also in another writer's index");
      }
      o.extent.file += base;
      merged->objects.push_back(std::move(o));
    }
  }
  for (const TensorEntry& t : merged->tensors) {
    if (object_keys.count(t.key)) {
      return Status::Corruption(dir + ": key '" + t.key + "' is both a tensor and an object");
    }
  }
  return Status::OK();
}

Status ReferenceEngine::ReadMetadata(int64_t iteration, CheckpointMetadata* metadata) {
  // Allocations here are bounded by options_.limits; running out of memory is still an error.
  try {
    Env* env = options_.env;
    const ResourceLimits& limits = options_.limits;
    const std::string dir = JoinPath(options_.root, IterationDirName(iteration));
    IndexLayout layout;
    CKPTSPEC_RETURN_IF_ERROR(ProbeIndexLayout(dir, &layout));
    CheckpointMetadata m;
    uint64_t index_bytes = 0;
    if (layout == IndexLayout::kSingle) {
      CKPTSPEC_RETURN_IF_ERROR(
          ReadIndexFile(dir, kMetadataFileName, kMetadataChecksumFileName, &m, &index_bytes));
    } else {
      CKPTSPEC_RETURN_IF_ERROR(ReadPerWriterIndex(dir, &m, &index_bytes));
    }
    const std::string index =
        layout == IndexLayout::kSingle ? kMetadataFileName : "the writers' index";
    const std::string index_path = JoinPath(dir, index);
    if (m.iteration != iteration) {
      return Status::Corruption(index_path + ": iteration: " + std::to_string(m.iteration) +
                                ", but the directory is " + IterationDirName(iteration));
    }
    uint64_t items = m.objects.size();
    for (const TensorEntry& t : m.tensors) items += t.chunks.size();
    if (items > limits.max_chunks) {
      return LimitExceeded(index_path, items, "chunks and objects", &ResourceLimits::max_chunks,
                           limits);
    }
    // What the checkpoint occupies on disk (the index and its files' allocated blocks): the
    // measure of how much reading it may cost.
    uint64_t stored = index_bytes;
    for (const FileEntry& f : m.files) {
      const std::string file_path = JoinPath(dir, f.name);
      uint64_t size = 0, blocks = 0;
      CKPTSPEC_RETURN_IF_ERROR(env->GetFileSize(file_path, &size));
      if (size != f.size) {
        return Status::Corruption(file_path + ": " + std::to_string(size) + " bytes on disk, " +
                                  index + " says " + std::to_string(f.size));
      }
      CKPTSPEC_RETURN_IF_ERROR(env->GetFileStoredSize(file_path, &blocks));
      stored += std::min(blocks, size);
    }
    CKPTSPEC_RETURN_IF_ERROR(CheckExtentsDisjoint(m, index_path));
    // Disjoint extents inside the files: the sum cannot overflow (it is at most the files' sizes).
    uint64_t to_read = 0;
    for (const TensorEntry& t : m.tensors) {
      for (const ChunkEntry& c : t.chunks) to_read += c.extent.size;
    }
    for (const ObjectEntry& o : m.objects) to_read += o.extent.size;
    const unsigned __int128 budget = static_cast<unsigned __int128>(stored) *
                                     static_cast<unsigned __int128>(limits.max_read_ratio);
    if (to_read > budget) {
      return LimitExceeded(
          index_path + ": its items hold " + std::to_string(to_read) +
              " bytes, the checkpoint occupies " + std::to_string(stored) + " bytes on disk",
          (to_read + stored - 1) / std::max<uint64_t>(stored, 1), "bytes to read per byte stored",
          &ResourceLimits::max_read_ratio, limits);
    }
    *metadata = std::move(m);
    return Status::OK();
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory("reading the index of " + IterationDirName(iteration) +
                               ": out of memory");
  }
}

// LoadImpl, with running out of memory an error rather than an exception: every allocation the
// checkpoint drives is bounded (ReadMetadata's limits, staging of at most kCacheBytes, streaming
// beyond), so this is the last line of defence.
Status ReferenceEngine::LoadGuarded(LoadRequest& request, DestinationProvider* provider,
                                    LoadResult* result) {
  try {
    return LoadImpl(request, provider, result);
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory("loading from " + options_.root + ": out of memory");
  }
}

Status ReferenceEngine::OpenHostDestination(size_t /*rank*/, ShardedTensor* tensor,
                                            std::unique_ptr<TensorDestination>* out) {
  *out = std::make_unique<HostTensorDestination>(&tensor->data);
  return Status::OK();
}

Status ReferenceEngine::Load(LoadRequest request, LoadResult* result) {
  CKPTSPEC_RETURN_IF_ERROR(Finalize());
  if (options_.env == nullptr || options_.root.empty()) {
    return Status::InvalidArgument("reference engine needs an Env and a root directory");
  }
  return LoadGuarded(request, nullptr, result);
}

Status ReferenceEngine::LoadToDestinations(LoadRequest request, DestinationProvider* provider,
                                           LoadResult* result) {
  if (provider == nullptr) return Status::InvalidArgument("destination provider is null");
  CKPTSPEC_RETURN_IF_ERROR(Finalize());
  if (options_.env == nullptr || options_.root.empty()) {
    return Status::InvalidArgument("reference engine needs an Env and a root directory");
  }
  return LoadGuarded(request, provider, result);
}

namespace {

// The checkpoint's entries by key (views of the keys of its metadata, which outlives them).
struct SavedKeys {
  std::unordered_map<std::string_view, size_t> tensor_by_key;
  std::unordered_map<std::string, size_t> object_by_unique_key;
  std::set<std::string_view> object_keys;
  // Whether some tensor or object of the checkpoint has `key`.
  bool Has(std::string_view key) const {
    return tensor_by_key.count(key) > 0 || object_keys.count(key) > 0;
  }
};

// The keys of checkpoint `m`: tensors by key, objects by unique key, the objects' keys.
SavedKeys SavedKeysOf(const CheckpointMetadata& m) {
  SavedKeys keys;
  for (size_t t = 0; t < m.tensors.size(); ++t) keys.tensor_by_key.emplace(m.tensors[t].key, t);
  for (size_t o = 0; o < m.objects.size(); ++o) {
    keys.object_by_unique_key.emplace(m.objects[o].UniqueKey(), o);
    keys.object_keys.insert(m.objects[o].key);
  }
  return keys;
}

// What strict handling finds: each rank's requested keys the checkpoint lacks ("unexpected"), and
// the checkpoint's keys no rank requests ("missing", computed only where the rule looks at them).
struct StrictFindings {
  std::vector<std::vector<std::string>> unexpected;  // per rank
  std::vector<std::string> missing;
  // Whether some rank requests a key the checkpoint lacks.
  bool any_unexpected() const {
    return std::any_of(unexpected.begin(), unexpected.end(),
                       [](const auto& v) { return !v.empty(); });
  }
};

// The unexpected keys of every template and, where `rule` computes them, the missing keys.
StrictFindings FindStrictKeys(const std::vector<ShardedStateDict>& templates,
                              const CheckpointMetadata& m, const SavedKeys& keys,
                              const StrictRule& rule) {
  StrictFindings found;
  found.unexpected.resize(templates.size());
  std::set<std::string_view> requested;  // views of the templates' keys
  for (size_t r = 0; r < templates.size(); ++r) {
    std::set<std::string_view> rank_keys;
    for (const ShardedTensor& t : templates[r].tensors) rank_keys.insert(t.spec.key);
    for (const ShardedObject& o : templates[r].objects) rank_keys.insert(o.spec.key);
    for (std::string_view k : rank_keys) {
      requested.insert(k);
      if (!keys.Has(k)) found.unexpected[r].emplace_back(k);
    }
  }
  if (rule.missing != MissingKeys::kNotComputed) {
    std::set<std::string_view> all;
    for (const TensorEntry& t : m.tensors) all.insert(t.key);
    all.insert(keys.object_keys.begin(), keys.object_keys.end());
    for (std::string_view k : all) {
      if (!requested.count(k)) found.missing.emplace_back(k);
    }
  }
  return found;
}

// InvalidArgument naming the keys where `rule` raises on the unexpected or missing ones found.
Status RaiseStrictKeys(StrictMode mode, const StrictRule& rule, const std::string& dir,
                       const StrictFindings& found) {
  if (rule.unexpected != UnexpectedKeys::kRaise && rule.missing != MissingKeys::kRaise) {
    return Status::OK();
  }
  std::string msg;
  for (size_t r = 0; r < found.unexpected.size(); ++r) {
    if (!found.unexpected[r].empty() && rule.unexpected == UnexpectedKeys::kRaise) {
      msg += "; rank " + std::to_string(r) +
             " requests keys not in the checkpoint: " + JoinNames(found.unexpected[r]);
    }
  }
  if (!found.missing.empty() && rule.missing == MissingKeys::kRaise) {
    msg += "; checkpoint keys no rank requests: " + JoinNames(found.missing);
  }
  if (msg.empty()) return Status::OK();
  return Status::InvalidArgument("strict=" + std::string(StrictModeName(mode)) + " loading " + dir +
                                 msg);
}

// Puts into *out the warnings and the unexpected and missing lists `rule` reports of `found`.
void ReportStrictKeys(const StrictRule& rule, const std::string& dir, const StrictFindings& found,
                      LoadResult* out) {
  if (rule.unexpected == UnexpectedKeys::kWarnAndDrop) {
    for (size_t r = 0; r < found.unexpected.size(); ++r) {
      if (!found.unexpected[r].empty()) {
        out->warnings.push_back("rank " + std::to_string(r) +
                                ": unexpected keys (requested, not in " + dir +
                                "): " + JoinNames(found.unexpected[r]));
      }
    }
  }
  if (rule.missing == MissingKeys::kWarn && !found.missing.empty()) {
    out->warnings.push_back("missing keys (in " + dir +
                            ", requested by no rank): " + JoinNames(found.missing));
  }
  if (rule.unexpected == UnexpectedKeys::kReturnAndDrop) out->unexpected = found.unexpected;
  if (rule.missing == MissingKeys::kReturn) out->missing = found.missing;
}

// Opens the host destination of a tensor of a rank (the engine's OpenHostDestination step).
using OpenHostFn =
    std::function<Status(size_t rank, ShardedTensor* tensor, std::unique_ptr<TensorDestination>*)>;

// Reads the entries ranks request from one checkpoint, each tensor into its destination: a host
// one (open_host) without a destination provider, else the provider's.
class RankDictLoader {
 public:
  RankDictLoader(Env* env, const std::string& dir, const CheckpointMetadata& m,
                 const SavedKeys& keys, bool allow_shape_mismatch, DestinationProvider* provider,
                 OpenHostFn open_host)
      : dir_(dir),
        m_(m),
        keys_(keys),
        allow_shape_mismatch_(allow_shape_mismatch),
        provider_(provider),
        open_host_(std::move(open_host)),
        reader_(env, dir, m) {}

  // Rank r's dict: the entries of `templ` (moved from) not in `drop`, with the checkpoint's data.
  Status Load(size_t r, ShardedStateDict* templ, const std::set<std::string>& drop,
              ShardedStateDict* out) {
    const std::string who = "rank " + std::to_string(r) + ": ";
    ShardedStateDict dict;
    dict.tensors.reserve(templ->tensors.size());
    dict.objects.reserve(templ->objects.size());
    for (ShardedTensor& t : templ->tensors) {
      if (drop.count(t.spec.key)) continue;
      auto it = keys_.tensor_by_key.find(t.spec.key);
      if (it == keys_.tensor_by_key.end()) {
        return Status::NotFound(who + "tensor '" + t.spec.key + "' is not in the checkpoint " +
                                dir_);
      }
      dict.tensors.push_back(std::move(t));  // filled in place: coverage is checked to be complete
      CKPTSPEC_RETURN_IF_ERROR(LoadTensor(r, who, it->second, &dict.tensors.back()));
    }
    for (ShardedObject& o : templ->objects) {
      if (drop.count(o.spec.key)) continue;
      // A rank-local object is the value this rank's global rank saved.
      auto it = keys_.object_by_unique_key.find(StoredObjectKey(o.spec, static_cast<int64_t>(r)));
      if (it == keys_.object_by_unique_key.end()) {
        return Status::NotFound(who + "object '" + o.spec.UniqueKey() + "'" +
                                (IsRankLocal(o.spec)
                                     ? " (rank-local) saved by rank " + std::to_string(r) + " is"
                                     : " is") +
                                " not in the checkpoint " + dir_);
      }
      dict.objects.push_back(ShardedObject{o.spec, std::string()});
      CKPTSPEC_RETURN_IF_ERROR(reader_.LoadObject(m_.objects[it->second], &dict.objects.back()));
    }
    dict.common = m_.common;
    *out = std::move(dict);
    return Status::OK();
  }

 private:
  // Reads checkpoint tensor `t` into the destination of rank r's `loaded`; errs on a missing one.
  Status LoadTensor(size_t r, const std::string& who, size_t t, ShardedTensor* loaded) {
    if (provider_ == nullptr) {
      std::unique_ptr<TensorDestination> dst;
      CKPTSPEC_RETURN_IF_ERROR(open_host_(r, loaded, &dst));
      if (dst == nullptr || dst->size() != loaded->data.size()) {
        return Status::InvalidArgument(who + "tensor '" + loaded->spec.key +
                                       "': OpenHostDestination returned no destination of " +
                                       std::to_string(loaded->data.size()) + " bytes");
      }
      return reader_.LoadTensor(t, who, allow_shape_mismatch_, loaded->spec, dst.get());
    }
    std::vector<uint8_t>().swap(loaded->data);  // the provider's destination holds the data
    TensorDestination* dst = nullptr;
    const uint64_t bytes = static_cast<uint64_t>(Volume(loaded->spec.local_shape)) *
                           static_cast<uint64_t>(DTypeSize(loaded->spec.dtype));
    CKPTSPEC_RETURN_IF_ERROR(provider_->Open(r, loaded->spec, bytes, &dst));
    if (dst == nullptr || dst->size() != bytes) {
      return Status::InvalidArgument(who + "tensor '" + loaded->spec.key +
                                     "': the destination provider returned no destination "
                                     "of " +
                                     std::to_string(bytes) + " bytes");
    }
    return reader_.LoadTensor(t, who, allow_shape_mismatch_, loaded->spec, dst);
  }

  const std::string& dir_;
  const CheckpointMetadata& m_;
  const SavedKeys& keys_;
  const bool allow_shape_mismatch_;
  DestinationProvider* const provider_;
  const OpenHostFn open_host_;
  CheckpointReader reader_;
};

}  // namespace

Status ReferenceEngine::LoadImpl(LoadRequest& request, DestinationProvider* provider,
                                 LoadResult* result) {
  int64_t iteration;
  bool from_tracker = false;
  if (request.iteration) {
    iteration = *request.iteration;
    if (iteration < 0 || iteration > kMaxIteration) {
      return Status::InvalidArgument("iteration " + std::to_string(iteration) + " out of range");
    }
  } else {
    CKPTSPEC_RETURN_IF_ERROR(LatestIteration(&iteration));
    from_tracker = true;
  }
  CheckpointMetadata m;
  Status read = ReadMetadata(iteration, &m);
  if (read.code() == Status::Code::kNotFound && from_tracker) {
    // The tracker names a checkpoint that is not there: say which file is wrong (P16).
    read = read.WithContext("the tracker " + JoinPath(options_.root, kTrackerFileName) +
                            " names iteration " + std::to_string(iteration) +
                            ", which has no complete checkpoint");
  }
  CKPTSPEC_RETURN_IF_ERROR(read);
  const std::string dir = JoinPath(options_.root, IterationDirName(iteration));
  for (size_t r = 0; r < request.templates.size(); ++r) {
    CKPTSPEC_RETURN_IF_ERROR(ValidateTemplate(r, request.templates[r], provider == nullptr));
  }

  // Strict handling.
  const SavedKeys keys = SavedKeysOf(m);  // views of `m`'s keys
  const StrictRule rule = StrictRuleOf(request.strict);
  const StrictFindings found = FindStrictKeys(request.templates, m, keys, rule);
  CKPTSPEC_RETURN_IF_ERROR(RaiseStrictKeys(request.strict, rule, dir, found));
  LoadResult out;
  out.iteration = iteration;
  ReportStrictKeys(rule, dir, found, &out);
  // kLoadFails keeps them: the load below fails at the first, naming it.
  const bool drop_unexpected =
      rule.unexpected != UnexpectedKeys::kLoadFails && found.any_unexpected();

  RankDictLoader loader(options_.env, dir, m, keys, request.allow_shape_mismatch, provider,
                        [this](size_t r, ShardedTensor* t, std::unique_ptr<TensorDestination>* d) {
                          return OpenHostDestination(r, t, d);
                        });
  const size_t world = request.templates.size();
  out.state.reserve(world);
  for (size_t r = 0; r < world; ++r) {
    const std::set<std::string> drop =
        drop_unexpected
            ? std::set<std::string>(found.unexpected[r].begin(), found.unexpected[r].end())
            : std::set<std::string>();
    ShardedStateDict dict;
    CKPTSPEC_RETURN_IF_ERROR(loader.Load(r, &request.templates[r], drop, &dict));
    out.state.push_back(std::move(dict));
  }
  *result = std::move(out);
  return Status::OK();
}

}  // namespace ckptspec
