#include "ondisk/dcp_verify.h"

#include <algorithm>
#include <map>
#include <memory>
#include <new>
#include <utility>

#include <nlohmann/json.hpp>

#include "formats/crc32.h"
#include "formats/pickle_reader.h"
#include "formats/torch_save_archive.h"
#include "formats/torch_tensor_item.h"
#include "model/beside_thread.h"
#include "model/json_util.h"
#include "model/sharded.h"
#include "ondisk/dcp_index_limits.h"
#include "ondisk/file_byte_source.h"
#include "ondisk/global_checksum.h"

namespace ckptspec {
namespace {

using Kind = PyValue::Kind;

// Data is streamed in blocks of this many bytes: memory is one block, whatever the items' sizes.
constexpr size_t kDataBlockBytes = size_t{4} << 20;

// The top-level keys of the common state that `source` holds (a torch.save of a dict, or of a
// one-item list holding it, as megatron-core saves objects), read without running anything.
Status ReadCommonKeys(const ByteSource& source, const ResourceLimits& limits,
                      std::vector<std::string>* keys) {
  TorchSaveArchive archive;
  CKPTSPEC_RETURN_IF_ERROR(OpenTorchSaveArchive(source, ZipLimits(), &archive));
  std::string pickle;
  CKPTSPEC_RETURN_IF_ERROR(
      ReadSmallEntry(source, *archive.Find("data.pkl"), limits.max_metadata_bytes, &pickle));
  PickleOptions permissive;
  permissive.permissive = true;
  PickleDocument doc;
  CKPTSPEC_RETURN_IF_ERROR(ReadPickle(std::move(pickle), permissive, &doc));
  PyValue root = doc.root();
  if (root.is(Kind::kList) && doc.Len(root) == 1) root = doc.Items(root)[0];
  if (!root.is(Kind::kDict)) {
    return Status::Corruption(std::string("holds a ") + PyKindName(root.kind()) + ", not a dict");
  }
  const PySpan items = doc.Items(root);
  for (size_t i = 0; i + 1 < items.size; i += 2) {
    keys->push_back(items[i].is(Kind::kStr) ? std::string(doc.Str(items[i]))
                                            : std::string("<") + PyKindName(items[i].kind()) + ">");
  }
  return Status::OK();
}

// metadata.json's backends, and where the common state is: common.pt (megatron-core up to 0.16)
// or a bytes item "common_state/..." of the DCP index (later versions).
void ReadTorchDistFiles(Env* env, const std::string& dir, const DcpMetadata& md,
                        const DcpStorageIndex& index, const ResourceLimits& limits,
                        DcpVerifyReport* report) {
  std::string text;
  nlohmann::json json;
  Status s = ReadIndexFile(env, JoinPath(dir, "metadata.json"), limits, &text);
  if (s.ok()) s = ParseJson(text, limits.json(), &json);
  if (s.ok() && !json.is_object()) s = Status::Corruption("not a JSON object");
  if (!s.ok()) {
    report->index.findings.push_back("torch_dist: metadata.json: " + s.message());
  } else {
    auto text_field = [&](const char* name, std::string* out) {
      if (json.contains(name) && json[name].is_string()) *out = json[name].get<std::string>();
    };
    auto int_field = [&](const char* name, int64_t* out) {
      if (json.contains(name) && json[name].is_number_integer()) *out = json[name].get<int64_t>();
    };
    text_field("sharded_backend", &report->sharded_backend);
    text_field("common_backend", &report->common_backend);
    int_field("sharded_backend_version", &report->sharded_backend_version);
    int_field("common_backend_version", &report->common_backend_version);
  }
  std::unique_ptr<FileByteSource> file;
  if (env->FileExists(JoinPath(dir, "common.pt")).ok()) {
    report->common_source = "common.pt";
    s = FileByteSource::Open(env, JoinPath(dir, "common.pt"), &file);
    if (s.ok()) s = ReadCommonKeys(*file, limits, &report->common_keys);
  } else {
    int64_t entry = -1;
    for (size_t b = 0; b < md.bytes_items().size() && entry < 0; ++b) {
      if (md.bytes_items()[b].rfind("common_state/", 0) != 0) continue;
      report->common_source = "bytes item " + QuotedName(md.bytes_items()[b]);
      entry = index.bytes_entries[b];
    }
    if (report->common_source.empty()) {
      s = Status::NotFound(
          "no common.pt and no bytes item common_state/...: the common state "
          "is nowhere");
    } else if (entry >= 0) {  // else the index check reported the missing entry
      const DcpStorageEntry e = md.storage(static_cast<size_t>(entry));
      WindowByteSource window;
      s = FileByteSource::Open(env, JoinPath(dir, std::string(e.relative_path)), &file);
      if (s.ok()) {
        s = WindowByteSource::Make(*file, static_cast<uint64_t>(e.offset_in_file),
                                   static_cast<uint64_t>(e.length), &window);
      }
      if (s.ok()) s = ReadCommonKeys(window, limits, &report->common_keys);
    }
  }
  if (!s.ok()) report->index.findings.push_back("torch_dist: common state: " + s.message());
}

// One item to read: a storage entry and what it should hold.
struct DataItem {
  std::string_view file;
  int64_t offset = 0;
  size_t entry = 0;
  int64_t tensor = -1;  // -1: a bytes item
  size_t chunk = 0;
};

class DataReader {
 public:
  DataReader(Env* env, const std::string& dir, const DcpMetadata& md, const DcpVerifyOptions& o,
             DcpVerifyReport* report)
      : env_(env), dir_(dir), md_(md), options_(o), report_(report) {}

  void Run(const DcpStorageIndex& index) {
    std::vector<DataItem> items;
    for (size_t t = 0; t < md_.tensors().size(); ++t) {
      for (size_t c = 0; c < index.chunk_entries[t].size(); ++c) {
        const int64_t e = index.chunk_entries[t][c];
        if (e >= 0) items.push_back(Item(static_cast<size_t>(e), static_cast<int64_t>(t), c));
      }
    }
    for (size_t b = 0; b < index.bytes_entries.size(); ++b) {
      if (index.bytes_entries[b] >= 0) items.push_back(Item(index.bytes_entries[b], -1, b));
    }
    // What the items declare is read at most max_read_ratio times what their files occupy on
    // disk: overlapping entries (or a sparse file) cannot make the reads unbounded.
    const Status budget =
        CheckDcpReadRatio(dir_, MeasureDcpReads(env_, dir_, md_, index), options_.limits);
    if (!budget.ok()) {
      AddFinding(budget.message());
      return;
    }
    // In file order, so that each file is read front to back.
    std::sort(items.begin(), items.end(), [](const DataItem& a, const DataItem& b) {
      return a.file != b.file ? a.file < b.file : a.offset < b.offset;
    });
    // Two workers, each a contiguous half of the items by bytes (so each still reads its files
    // front to back), on two threads; their findings are merged in item order.
    uint64_t half = 0, seen_bytes = 0;
    for (const DataItem& item : items)
      half += static_cast<uint64_t>(std::max<int64_t>(0, md_.storage(item.entry).length));
    half /= 2;
    size_t split = 0;
    for (; split < items.size() && seen_bytes < half; ++split) {
      seen_bytes +=
          static_cast<uint64_t>(std::max<int64_t>(0, md_.storage(items[split].entry).length));
    }
    Worker workers[2];
    auto run = [&](Worker* w, size_t begin, size_t end) {
      w->block.resize(kDataBlockBytes);
      w->sums.assign(md_.tensors().size(), 0);
      for (size_t i = begin; i < end; ++i) Check(items[i], w);
    };
    RunBeside([&] { run(&workers[1], split, items.size()); }, [&] { run(&workers[0], 0, split); });
    std::vector<uint64_t> sums(md_.tensors().size(), 0);
    for (const Worker& w : workers) {
      report_->items_read += w.items_read;
      report_->bytes_read += w.bytes_read;
      for (const std::string& f : w.findings) AddFinding(f);
      for (size_t t = 0; t < sums.size() && t < w.sums.size(); ++t) sums[t] += w.sums[t];
    }
    if (!options_.checksums || !report_->index.ok()) return;
    for (size_t t = 0; t < md_.tensors().size(); ++t) {
      const DcpTensor& tensor = md_.tensors()[t];
      report_->checksums.push_back(
          {std::string(tensor.fqn), tensor.dtype->name, md_.Shape(tensor.size), sums[t]});
    }
  }

 private:
  // One thread's share: its read buffer, the file it has open, what it found.
  struct Worker {
    std::vector<char> block;
    std::string open_name;
    std::unique_ptr<FileByteSource> open;
    std::vector<std::string> findings;  // at most kMaxFindingsPerCheck + 1: the merge caps them
    std::vector<uint64_t> sums;         // per tensor

    // Keeps the finding `message()` builds, unless enough are kept to fill the report already.
    template <typename Message>
    void Find(const Message& message) {
      if (findings.size() <= kMaxFindingsPerCheck) findings.push_back(message());
    }
    int64_t items_read = 0;
    uint64_t bytes_read = 0;
  };

  DataItem Item(size_t entry, int64_t tensor, size_t chunk) const {
    const DcpStorageEntry e = md_.storage(entry);
    return {e.relative_path, e.offset_in_file, entry, tensor, chunk};
  }

  void AddFinding(const std::string& message) {
    if (report_->data_findings.size() < kMaxFindingsPerCheck) {
      report_->data_findings.push_back("data: " + message);
    } else if (report_->data_findings.size() == kMaxFindingsPerCheck) {
      report_->data_findings.push_back("data: further findings not listed");
    }
  }

  // The worker's open file of `name`, or null when it cannot be opened (the index check
  // already reported a missing file).
  const FileByteSource* Open(std::string_view name, Worker* w) {
    if (w->open_name == name && w->open) return w->open.get();
    w->open.reset();
    w->open_name = std::string(name);
    if (!FileByteSource::Open(env_, JoinPath(dir_, w->open_name), &w->open).ok()) w->open.reset();
    return w->open.get();
  }

  void Check(const DataItem& item, Worker* w) {
    const DcpStorageEntry entry = md_.storage(item.entry);
    if (entry.transformed) return;            // an encoding this reader does not undo (counted)
    if (!IsPlainFileName(item.file)) return;  // a finding of the index check; never opened
    const FileByteSource* file = Open(item.file, w);
    if (file == nullptr) return;
    WindowByteSource window;
    if (!WindowByteSource::Make(*file, static_cast<uint64_t>(entry.offset_in_file),
                                static_cast<uint64_t>(entry.length), &window)
             .ok()) {
      return;  // outside the file: the index check reported it
    }
    ++w->items_read;
    if (item.tensor < 0) {
      CheckBytesItem(window, md_.bytes_items()[item.chunk], w);
    } else {
      CheckTensorItem(window, static_cast<size_t>(item.tensor), item.chunk, w);
    }
  }

  void CheckBytesItem(const WindowByteSource& window, std::string_view fqn, Worker* w) {
    TorchSaveArchive archive;
    Status s = OpenTorchSaveArchive(window, ZipLimits(), &archive);
    for (size_t i = 0; s.ok() && i < archive.entries.size(); ++i) {
      s = CheckZipEntryCrc(window, archive.entries[i]);
      w->bytes_read += archive.entries[i].size;
    }
    if (!s.ok()) w->Find([&] { return "bytes item " + QuotedName(fqn) + ": " + s.message(); });
  }

  void CheckTensorItem(const WindowByteSource& window, size_t t, size_t c, Worker* w) {
    const DcpTensor& tensor = md_.tensors()[t];
    const PyValue chunk = md_.doc().Items(tensor.chunks)[c];
    const Box box = md_.ChunkBox(chunk);
    // The item named in a finding (built only for one: the fqn may be long, the items many).
    const auto what = [&] {
      return "tensor " + QuotedName(tensor.fqn) + " chunk " + BoxToString(box);
    };
    TorchTensorItem item;
    const Status s = ReadTorchTensorItem(window, ZipLimits(), &item);
    if (!s.ok()) {
      w->Find([&] { return what() + ": " + s.message(); });
      return;
    }
    if (item.dtype != tensor.dtype) {
      w->Find([&] {
        return what() + ": the item holds " + item.dtype->name + ", the index declares " +
               tensor.dtype->name;
      });
      return;
    }
    if (item.shape != box.shape) {
      w->Find([&] {
        return what() + ": the item's shape is " + DimsToString(item.shape) + ", the chunk's " +
               DimsToString(box.shape);
      });
      return;
    }
    // One pass over the storage entry: its CRC over every byte, the checksum over the elements.
    ChunkChecksum checksum(md_.Shape(tensor.size), box, tensor.dtype->element_bytes);
    uint32_t crc = 0;
    const uint64_t begin = item.storage.data_offset, end = begin + item.storage.size;
    for (uint64_t at = begin; at < end;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(w->block.size(), end - at));
      const Status r = window.Read(at, n, w->block.data());
      if (!r.ok()) {
        w->Find([&] { return what() + ": " + r.message(); });
        return;
      }
      crc = Crc32(crc, w->block.data(), n);
      const uint64_t lo = std::max(at, item.data_offset);
      const uint64_t hi = std::min(at + n, item.data_offset + item.data_bytes);
      if (options_.checksums && lo < hi) {
        checksum.Update(w->block.data() + (lo - at), static_cast<size_t>(hi - lo));
      }
      at += n;
    }
    w->bytes_read += item.storage.size;
    if (crc != item.storage.crc32) {
      w->Find([&] {
        return what() + ": " + QuotedName(item.storage.name) + " has CRC-32 " + Hex(crc) +
               ", its archive records " + Hex(item.storage.crc32);
      });
      return;
    }
    w->sums[t] += checksum.value();
  }

  static std::string Hex(uint32_t v) {
    char text[16];
    std::snprintf(text, sizeof(text), "0x%08x", v);
    return text;
  }

  Env* env_;
  std::string dir_;
  const DcpMetadata& md_;
  const DcpVerifyOptions& options_;
  DcpVerifyReport* report_;
};

// VerifyDcpCheckpoint, out of memory an exception.
Status VerifyDcpUnguarded(Env* env, const DetectedCheckpoint& detected,
                          const DcpVerifyOptions& options, DcpVerifyReport* report) {
  *report = DcpVerifyReport();
  report->kind = detected.kind;
  report->dir = detected.index_dir;
  const std::string& dir = detected.index_dir;
  DcpMetadata md;
  CKPTSPEC_RETURN_IF_ERROR(ReadDcpIndex(env, dir, options.limits, &md));
  report->dcp_version = std::string(md.version());
  report->metadata_extras = md.extra_attributes();
  DcpStorageIndex index;
  CheckDcpIndex(
      md,
      [&](std::string_view name, uint64_t* size) {
        return env->GetFileSize(JoinPath(dir, std::string(name)), size).ok();
      },
      &report->index, &index);
  if (detected.kind == CheckpointKind::kTorchDist) {
    ReadTorchDistFiles(env, dir, md, index, options.limits, report);
  }
  if (options.data || options.checksums) DataReader(env, dir, md, options, report).Run(index);
  return Status::OK();
}

}  // namespace

Status VerifyDcpCheckpoint(Env* env, const DetectedCheckpoint& detected,
                           const DcpVerifyOptions& options, DcpVerifyReport* report) {
  try {
    return VerifyDcpUnguarded(env, detected, options, report);
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory("verifying " + detected.index_dir + ": out of memory");
  }
}

std::string DcpVerifyReportJson(const DcpVerifyReport& r) {
  nlohmann::json j;
  j["format"] = CheckpointKindName(r.kind);
  j["dir"] = r.dir;
  j["dcp_version"] = r.dcp_version;
  j["metadata_extras"] = r.metadata_extras;
  j["tensors"] = r.index.tensors;
  j["chunks"] = r.index.chunks;
  j["bytes_items"] = r.index.bytes_items;
  j["storage_entries"] = r.index.storage_entries;
  j["transformed_entries"] = r.index.transformed_entries;
  if (r.kind == CheckpointKind::kTorchDist) {
    j["torch_dist"] = {{"sharded_backend", r.sharded_backend},
                       {"sharded_backend_version", r.sharded_backend_version},
                       {"common_backend", r.common_backend},
                       {"common_backend_version", r.common_backend_version},
                       {"common_source", r.common_source},
                       {"common_keys", r.common_keys}};
  }
  j["items_read"] = r.items_read;
  j["bytes_read"] = r.bytes_read;
  nlohmann::json findings = nlohmann::json::array();
  for (const std::string& f : r.index.findings) findings.push_back(f);
  for (const std::string& f : r.data_findings) findings.push_back(f);
  j["findings"] = findings;
  nlohmann::json sums = nlohmann::json::array();
  for (const TensorChecksum& c : r.checksums) {
    sums.push_back({{"key", c.fqn},
                    {"dtype", c.dtype},
                    {"shape", c.shape},
                    {"checksum", DigestHex(c.checksum)}});
  }
  j["checksums"] = sums;
  j["ok"] = r.ok();
  // Keys and names come from the file: replace invalid UTF-8 rather than fail.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace ckptspec
