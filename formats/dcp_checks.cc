#include "formats/dcp_checks.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "model/beside_thread.h"
#include "model/box.h"
#include "model/box_overlap.h"
#include "model/validate.h"

namespace ckptspec {
namespace {

using Kind = PyValue::Kind;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

// The hash of a storage key: its fqn's hash (computed once per fqn by the callers) mixed with
// its offsets.
uint64_t KeyHash(const PickleDocument& doc, uint64_t fqn_hash, PyValue offset) {
  uint64_t h = fqn_hash;
  if (offset.is(Kind::kNone)) return Mix(h, 0x5A5A);
  for (const PyValue& d : doc.Items(offset)) h = Mix(h, static_cast<uint64_t>(doc.Int(d)));
  return Mix(h, doc.Len(offset));
}

bool SameOffset(const PickleDocument& doc, PyValue a, PyValue b) {
  if (a.is(Kind::kNone) || b.is(Kind::kNone)) return a.is(Kind::kNone) && b.is(Kind::kNone);
  const PySpan x = doc.Items(a), y = doc.Items(b);
  if (x.size != y.size) return false;
  for (size_t i = 0; i < x.size; ++i) {
    if (doc.Int(x[i]) != doc.Int(y[i])) return false;
  }
  return true;
}

std::string OffsetText(const DcpMetadata& md, PyValue offset) {
  return offset.is(Kind::kNone) ? std::string("None") : DimsToString(md.Shape(offset));
}

// The findings of one check, at most kMaxFindingsPerCheck of them listed.
class Findings {
 public:
  Findings(std::string check, DcpIndexReport* report) : check_(std::move(check)), report_(report) {}
  ~Findings() {
    if (count_ > kMaxFindingsPerCheck) {
      report_->findings.push_back(check_ + ": " + std::to_string(count_ - kMaxFindingsPerCheck) +
                                  " more finding(s) of this check not listed");
    }
  }
  // `message` is a callable returning the finding's text: built only for the findings listed,
  // so that a million findings cost a count, not a million messages (each may name a long fqn).
  template <typename Message>
  void Add(const Message& message) {
    if (++count_ <= kMaxFindingsPerCheck) report_->findings.push_back(check_ + ": " + message());
  }

 private:
  std::string check_;
  DcpIndexReport* report_;
  size_t count_ = 0;
};

// True when the chunks of `tensor` tile its shape exactly: every chunk has its rank and lies
// inside it, no two overlap, and their volumes add up to its volume. Reads the index in place (no
// allocation per chunk); the general P4 check below runs only when this fails, for its messages.
bool TilesExactly(const DcpMetadata& md, const DcpTensor& tensor, BoxBounds* bounds) {
  const PickleDocument& doc = md.doc();
  const PySpan shape = doc.Items(tensor.size);
  const size_t rank = shape.size;
  const PySpan chunks = doc.Items(tensor.chunks);
  int64_t total = 1;
  for (const PyValue& d : shape) {
    const int64_t n = doc.Int(d);
    if (n < 0 || __builtin_mul_overflow(total, n, &total)) return false;
  }
  bounds->rank = rank;
  bounds->lo.clear();
  bounds->hi.clear();
  int64_t sum = 0;
  for (const PyValue& chunk : chunks) {
    const PySpan offsets = doc.Items(md.ChunkOffsets(chunk));
    const PySpan sizes = doc.Items(md.ChunkSizes(chunk));
    if (offsets.size != rank || sizes.size != rank) return false;
    int64_t volume = 1;
    const size_t first = bounds->lo.size();
    for (size_t a = 0; a < rank; ++a) {
      const int64_t extent = doc.Int(shape[a]), lo = doc.Int(offsets[a]), n = doc.Int(sizes[a]);
      if (lo < 0 || n < 0 || lo > extent || n > extent - lo) return false;
      volume *= n;  // no overflow: each factor is at most the shape's, whose product fits
      bounds->lo.push_back(lo);
      bounds->hi.push_back(lo + n);
    }
    if (volume == 0) {  // an empty chunk holds nothing and meets nothing
      bounds->lo.resize(first);
      bounds->hi.resize(first);
    }
    if (__builtin_add_overflow(sum, volume, &sum)) return false;
  }
  if (sum != total) return false;
  if (rank == 0 || bounds->size() < 2) return true;
  bool overlap = false;
  const SweepAxes axes = ChooseSweepAxes(*bounds);
  ForEachOverlap(SortedAlong(*bounds, axes.sweep), axes, [&](size_t, size_t) {
    overlap = true;
    return false;
  });
  return !overlap;
}

// The tensors whose chunks do not tile them exactly (TilesExactly), by index.
std::vector<size_t> TensorsNotTiled(const DcpMetadata& md) {
  std::vector<size_t> not_tiled;
  BoxBounds bounds;
  for (size_t t = 0; t < md.tensors().size(); ++t) {
    if (!TilesExactly(md, md.tensors()[t], &bounds)) not_tiled.push_back(t);
  }
  return not_tiled;
}

// The findings of the tensors that do not tile: P4's coverage check (model/validate.h), for its
// messages. Every chunk's geometry was validated when the index was read (dcp_metadata.h).
void ReportTiling(const DcpMetadata& md, const DcpStorageIndex& index,
                  const std::vector<size_t>& not_tiled, DcpIndexReport* report) {
  Findings findings("tiling", report);
  const PickleDocument& doc = md.doc();
  std::vector<WrittenChunk> written;
  for (size_t t : not_tiled) {
    const DcpTensor& tensor = md.tensors()[t];
    const PySpan chunks = doc.Items(tensor.chunks);
    const Dims shape = md.Shape(tensor.size);
    if (chunks.size == 0) {
      int64_t volume = 0;
      if (CheckedVolume(shape, &volume) && volume == 0) continue;
      findings.Add([&] {
        return "tensor " + QuotedName(tensor.fqn) + " of shape " + DimsToString(shape) +
               " has no chunks: none of its elements is saved";
      });
      continue;
    }
    written.clear();
    for (size_t c = 0; c < chunks.size; ++c) {
      const int64_t entry = index.chunk_entries[t][c];
      const int64_t rank =
          entry < 0 ? 0 : std::max<int64_t>(0, WriterRankOfFile(md.storage(entry).relative_path));
      written.push_back({md.ChunkBox(chunks[c]), rank});
    }
    for (const Violation& v : CheckChunkTiling(tensor.fqn, shape, written)) {
      findings.Add([&] { return v.ToString(); });
    }
  }
}

void CheckStorageEntries(const DcpMetadata& md, const DcpStorageIndex& index,
                         DcpIndexReport* report) {
  Findings findings("storage", report);
  const PickleDocument& doc = md.doc();
  for (size_t t = 0; t < md.tensors().size(); ++t) {
    const DcpTensor& tensor = md.tensors()[t];
    const PySpan chunks = doc.Items(tensor.chunks);
    for (size_t c = 0; c < chunks.size; ++c) {
      if (index.chunk_entries[t][c] >= 0) continue;
      findings.Add([&] {
        return "tensor " + QuotedName(tensor.fqn) + ": chunk " +
               BoxToString(md.ChunkBox(chunks[c])) +
               " has no storage_data entry: its bytes are nowhere";
      });
    }
  }
  for (size_t b = 0; b < md.bytes_items().size(); ++b) {
    if (index.bytes_entries[b] >= 0) continue;
    findings.Add([&] {
      return "bytes item " + QuotedName(md.bytes_items()[b]) +
             " has no storage_data entry: its bytes are nowhere";
    });
  }
  for (size_t e = 0; e < md.storage_count(); ++e) {
    if (index.entry_used[e]) continue;
    const DcpStorageEntry entry = md.storage(e);
    findings.Add([&] {
      return "storage_data entry for " + QuotedName(entry.fqn) + " at offset " +
             OffsetText(md, entry.offset) + " (" + QuotedName(entry.relative_path) +
             ") belongs to no chunk or bytes item of state_dict_metadata";
    });
  }
  for (size_t e : index.duplicate_entries) {
    const DcpStorageEntry entry = md.storage(e);
    findings.Add([&] {
      return "two storage_data entries for " + QuotedName(entry.fqn) + " at offset " +
             OffsetText(md, entry.offset);
    });
  }
}

void CheckFiles(const DcpMetadata& md, const FileSizeLookup& file_size, DcpIndexReport* report) {
  Findings findings("files", report);
  struct FileInfo {
    bool usable = false;
    uint64_t size = 0;
    int64_t entries = 0;
  };
  std::unordered_map<std::string_view, size_t> file_ids;
  std::vector<std::string_view> names;
  std::vector<FileInfo> files;
  struct Extent {
    uint32_t file;
    uint32_t entry;  // fewer than 2^32 entries (IndexDcpStorage)
    int64_t begin, end;
  };
  std::vector<Extent> extents;
  extents.reserve(md.storage_count());
  for (size_t e = 0; e < md.storage_count(); ++e) {
    const DcpStorageEntry entry = md.storage(e);
    if (entry.transformed) ++report->transformed_entries;
    auto [it, inserted] = file_ids.emplace(entry.relative_path, files.size());
    if (inserted) {
      names.push_back(entry.relative_path);
      FileInfo info;
      if (!IsPlainFileName(entry.relative_path)) {
        findings.Add([&] {
          return "storage_data names " + QuotedName(entry.relative_path) +
                 ", not a file of the checkpoint directory";
        });
      } else if (file_size(entry.relative_path, &info.size)) {
        info.usable = true;
      }
      files.push_back(info);
    }
    FileInfo& file = files[it->second];
    ++file.entries;
    if (!file.usable) continue;
    if (entry.offset_in_file < 0 || entry.length < 0 ||
        static_cast<uint64_t>(entry.offset_in_file) > file.size ||
        static_cast<uint64_t>(entry.length) >
            file.size - static_cast<uint64_t>(entry.offset_in_file)) {
      findings.Add([&] {
        return QuotedName(entry.fqn) + " at offset " + OffsetText(md, entry.offset) + ": bytes [" +
               std::to_string(entry.offset_in_file) + ", " + std::to_string(entry.offset_in_file) +
               " + " + std::to_string(entry.length) + ") lie outside " +
               QuotedName(entry.relative_path) + " (" + std::to_string(file.size) + " bytes)";
      });
      continue;
    }
    if (entry.length > 0) {
      extents.push_back({static_cast<uint32_t>(it->second), static_cast<uint32_t>(e),
                         entry.offset_in_file, entry.offset_in_file + entry.length});
    }
  }
  for (size_t f = 0; f < files.size(); ++f) {
    if (files[f].usable || !IsPlainFileName(names[f])) continue;
    findings.Add([&] {
      return QuotedName(names[f]) +
             " is missing (or not a regular file): " + std::to_string(files[f].entries) +
             " storage_data entr" + (files[f].entries == 1 ? "y names" : "ies name") + " it";
    });
  }
  std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) {
    return a.file != b.file ? a.file < b.file : a.begin < b.begin;
  });
  // Sorted by start: an extent overlaps an earlier one of its file iff it starts before the
  // furthest end reached so far; it is reported with the extent that reaches furthest.
  size_t reach = 0;
  for (size_t i = 1; i < extents.size(); ++i) {
    const Extent& a = extents[reach];
    const Extent& b = extents[i];
    if (a.file != b.file || b.begin >= a.end) {
      if (a.file != b.file || b.end > a.end) reach = i;
      continue;
    }
    const DcpStorageEntry x = md.storage(a.entry), y = md.storage(b.entry);
    findings.Add([&] {
      return QuotedName(names[a.file]) + ": bytes [" + std::to_string(b.begin) + ", " +
             std::to_string(std::min(a.end, b.end)) + ") belong to both " + QuotedName(x.fqn) +
             " at offset " + OffsetText(md, x.offset) + " and " + QuotedName(y.fqn) +
             " at offset " + OffsetText(md, y.offset);
    });
    if (b.end > a.end) reach = i;
  }
}

}  // namespace

bool IsPlainFileName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (char c : name) {
    if (c == '/' || c == '\\' || c == '\0') return false;
  }
  return true;
}

int64_t WriterRankOfFile(std::string_view name) {
  if (name.size() < 3 || name.substr(0, 2) != "__") return -1;
  int64_t rank = 0;
  size_t i = 2;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 12; ++i) {
    rank = rank * 10 + (name[i] - '0');
  }
  if (i == 2 || i >= name.size() || name[i] != '_') return -1;
  return rank;
}

DcpStorageIndex IndexDcpStorage(const DcpMetadata& md) {
  const PickleDocument& doc = md.doc();
  DcpStorageIndex index;
  const size_t n = md.storage_count();
  index.entry_used.assign(n, 0);
  // An open-addressing table of the entries by key hash: a slot holds the hash's high half and
  // entry + 1 (0 when free), so that a probe touches one cache line and decodes an entry only
  // when the tags match.
  struct Slot {
    uint32_t tag;  // the hash's high half
    // storage_data holds fewer than 2^32 entries: each takes more than 16 bytes of a pickle of
    // at most 64 GiB (the largest max_metadata_bytes).
    uint32_t entry_plus_one;
  };
  size_t capacity = 16;
  while (capacity < 2 * n) capacity *= 2;
  const size_t mask = capacity - 1;
  std::vector<Slot> slots(capacity, Slot{0, 0});
  auto same_key = [&](size_t e, std::string_view fqn, PyValue offset) {
    std::string_view entry_fqn;
    PyValue entry_offset;
    md.StorageKey(e, &entry_fqn, &entry_offset);
    return entry_fqn == fqn && SameOffset(doc, entry_offset, offset);
  };
  // Entries of one tensor name one memoized fqn in a row: its hash is computed once per run.
  std::string_view last_fqn;
  uint64_t last_fqn_hash = 0;
  auto fqn_hash = [&](std::string_view fqn) {
    if (fqn.data() != last_fqn.data() || fqn.size() != last_fqn.size()) {
      last_fqn = fqn;
      last_fqn_hash = std::hash<std::string_view>()(fqn);
    }
    return last_fqn_hash;
  };
  for (size_t e = 0; e < n; ++e) {
    std::string_view fqn;
    PyValue offset;
    md.StorageKey(e, &fqn, &offset);
    const uint64_t h = KeyHash(doc, fqn_hash(fqn), offset);
    size_t slot = h & mask;
    bool duplicate = false;
    for (; slots[slot].entry_plus_one != 0; slot = (slot + 1) & mask) {
      const size_t other = slots[slot].entry_plus_one - 1;
      if (slots[slot].tag == static_cast<uint32_t>(h >> 32) && same_key(other, fqn, offset)) {
        duplicate = true;
        break;
      }
    }
    if (duplicate) {
      index.duplicate_entries.push_back(e);
    } else {
      slots[slot] = Slot{static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(e + 1)};
    }
  }
  auto find = [&](std::string_view fqn, uint64_t hash_of_fqn, PyValue offset) -> int64_t {
    const uint64_t h = KeyHash(doc, hash_of_fqn, offset);
    for (size_t slot = h & mask; slots[slot].entry_plus_one != 0; slot = (slot + 1) & mask) {
      const size_t e = slots[slot].entry_plus_one - 1;
      if (slots[slot].tag == static_cast<uint32_t>(h >> 32) && same_key(e, fqn, offset)) {
        index.entry_used[e] = 1;
        return static_cast<int64_t>(e);
      }
    }
    return -1;
  };
  index.chunk_entries.resize(md.tensors().size());
  for (size_t t = 0; t < md.tensors().size(); ++t) {
    const DcpTensor& tensor = md.tensors()[t];
    const PySpan chunks = doc.Items(tensor.chunks);
    const uint64_t hash_of_fqn = std::hash<std::string_view>()(tensor.fqn);
    index.chunk_entries[t].resize(chunks.size);
    for (size_t c = 0; c < chunks.size; ++c) {
      index.chunk_entries[t][c] = find(tensor.fqn, hash_of_fqn, md.ChunkOffsets(chunks[c]));
    }
  }
  for (std::string_view fqn : md.bytes_items()) {
    index.bytes_entries.push_back(find(fqn, std::hash<std::string_view>()(fqn), PyValue()));
  }
  for (size_t e : index.duplicate_entries) index.entry_used[e] = 1;  // reported as duplicates
  return index;
}

void CheckDcpIndex(const DcpMetadata& md, const FileSizeLookup& file_size, DcpIndexReport* report,
                   DcpStorageIndex* index_out) {
  *report = DcpIndexReport();
  report->tensors = static_cast<int64_t>(md.tensors().size());
  report->bytes_items = static_cast<int64_t>(md.bytes_items().size());
  report->storage_entries = static_cast<int64_t>(md.storage_count());
  for (const DcpTensor& t : md.tensors()) {
    report->chunks += static_cast<int64_t>(md.doc().Len(t.chunks));
  }
  // Two independent halves on two threads (the document is only read): tiling's fast check and
  // the file extents on one, the storage index and its check on the other. Findings are merged
  // in a fixed order, so the report does not depend on the threads.
  DcpIndexReport tiling, storage, files;
  std::vector<size_t> not_tiled;
  auto first_half = [&] {
    not_tiled = TensorsNotTiled(md);
    CheckFiles(md, file_size, &files);
  };
  DcpStorageIndex index;
  RunBeside(first_half, [&] {
    index = IndexDcpStorage(md);
    CheckStorageEntries(md, index, &storage);
  });
  ReportTiling(md, index, not_tiled, &tiling);
  report->transformed_entries = files.transformed_entries;
  for (const DcpIndexReport* part : {&tiling, &storage, &files}) {
    report->findings.insert(report->findings.end(), part->findings.begin(), part->findings.end());
  }
  if (index_out != nullptr) *index_out = std::move(index);
}

}  // namespace ckptspec
