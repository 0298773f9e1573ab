// Writers of PyTorch DCP inputs for tests, benchmarks and fuzz seeds: a `.metadata` pickle of any
// geometry (valid or not: nothing is checked here) and a tensor item (the torch.save archive each
// chunk of a __R_I.distcp file is). Objects are laid out as torch's writers lay them out
// (corpus/dcp/ has real ones): DCP's dataclasses by NEWOBJ and BUILD, torch.Size by REDUCE, a
// tensor by torch._utils._rebuild_tensor_v2 of a persistent storage id. Protocol 2, no framing;
// every tensor's fqn is memoized once (LONG_BINPUT) and fetched for its storage entries, as
// torch's pickler does for the one string object, so that an index with a long name on many
// chunks stays small. Header-only: tests include it, the library does not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "formats/zip_test_writer.h"

namespace ckptspec {
namespace dcp_test {

struct Chunk {
  std::vector<int64_t> offsets, sizes;
};

struct Tensor {
  std::string fqn;
  std::string dtype = "float32";  // a torch.<dtype> attribute
  std::vector<int64_t> size;
  std::vector<Chunk> chunks;
};

struct StorageEntry {
  std::string fqn;
  std::optional<std::vector<int64_t>> offset;  // a chunk's offsets; none for a bytes item
  std::string relative_path;
  int64_t offset_in_file = 0;
  int64_t length = 0;
};

struct Index {
  std::vector<Tensor> tensors;
  std::vector<std::string> bytes_items;
  std::vector<StorageEntry> storage;
};

// The opcodes the writers use, appended to a string.
class PickleOut {
 public:
  PickleOut() { out_ = "\x80\x02"; }
  std::string Finish() { return out_ + "."; }

  void Global(const std::string& module, const std::string& name) {
    out_ += "c" + module + "\n" + name + "\n";
  }
  void Str(const std::string& s) {
    out_ += 'X';
    Le(s.size(), 4);
    out_ += s;
  }
  void Int(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';
      Le(static_cast<uint64_t>(v), 4);
    } else {
      out_ += "\x8a\x08";  // LONG1 of 8 bytes, two's complement
      Le(static_cast<uint64_t>(v), 8);
    }
  }
  void IntTuple(const std::vector<int64_t>& v) {
    Mark();
    for (int64_t d : v) Int(d);
    out_ += 't';
  }
  void TorchSize(const std::vector<int64_t>& v) {
    Global("torch", "Size");
    IntTuple(v);
    out_ += "\x85R";  // TUPLE1, REDUCE
  }
  void None() { out_ += 'N'; }
  void False() { out_ += "\x89"; }
  void Mark() { out_ += '('; }
  void Op(const char* ops) { out_ += ops; }
  void Put(uint32_t slot) {
    out_ += 'r';
    Le(slot, 4);
  }
  void Get(uint32_t slot) {
    out_ += 'j';
    Le(slot, 4);
  }
  // An object of class module.name built by NEWOBJ with no arguments; its state follows (the
  // caller writes it, then Op("b") to BUILD).
  void NewObject(const std::string& module, const std::string& name) {
    Global(module, name);
    out_ += ")\x81";
  }

 private:
  void Le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  std::string out_;
};

inline constexpr const char* kMetadataModule = "torch.distributed.checkpoint.metadata";

inline std::string EncodeMetadata(const Index& index) {
  PickleOut p;
  p.NewObject(kMetadataModule, "Metadata");
  p.Op("}(");
  p.Str("state_dict_metadata");
  p.Op("}(");
  uint32_t next_slot = 0;
  std::vector<std::pair<std::string, uint32_t>> memoized;  // fqn -> slot
  auto fqn = [&](const std::string& name) {
    for (const auto& [known, slot] : memoized) {
      if (known == name) return p.Get(slot);
    }
    p.Str(name);
    p.Put(next_slot);
    memoized.emplace_back(name, next_slot++);
  };
  for (const Tensor& t : index.tensors) {
    fqn(t.fqn);
    p.NewObject(kMetadataModule, "TensorStorageMetadata");
    p.Op("}(");
    p.Str("properties");
    p.NewObject(kMetadataModule, "TensorProperties");
    p.Mark();
    p.Global("torch", t.dtype);
    p.Global("torch.serialization", "_get_layout");
    p.Str("torch.strided");
    p.Op("\x85R");
    p.False();
    p.Global("builtins", "getattr");
    p.Global(kMetadataModule, "_MEM_FORMAT_ENCODING");
    p.Str("TORCH_CONTIGUOUS_FORMAT");
    p.Op("\x86R");
    p.False();
    p.Op("tb");
    p.Str("size");
    p.TorchSize(t.size);
    p.Str("chunks");
    p.Op("](");
    for (const Chunk& c : t.chunks) {
      p.NewObject(kMetadataModule, "ChunkStorageMetadata");
      p.Op("}(");
      p.Str("offsets");
      p.TorchSize(c.offsets);
      p.Str("sizes");
      p.TorchSize(c.sizes);
      p.Op("ub");
    }
    p.Op("e");  // APPENDS
    p.Op("ub");
  }
  for (const std::string& name : index.bytes_items) {
    fqn(name);
    p.NewObject(kMetadataModule, "BytesStorageMetadata");
  }
  p.Op("u");
  p.Str("planner_data");
  p.None();
  p.Str("storage_data");
  p.Op("}(");
  for (const StorageEntry& e : index.storage) {
    p.NewObject(kMetadataModule, "MetadataIndex");
    p.Op("}(");
    p.Str("fqn");
    fqn(e.fqn);
    p.Str("offset");
    if (e.offset.has_value()) {
      p.TorchSize(*e.offset);
    } else {
      p.None();
    }
    p.Str("index");
    p.None();
    p.Op("ub");
    p.NewObject("torch.distributed.checkpoint.filesystem", "_StorageInfo");
    p.Op("}(");
    p.Str("relative_path");
    p.Str(e.relative_path);
    p.Str("offset");
    p.Int(e.offset_in_file);
    p.Str("length");
    p.Int(e.length);
    p.Op("ub");
  }
  p.Op("u");
  p.Op("ub");
  return p.Finish();
}

// The torch.save archive of one contiguous float32 tensor of `shape` holding `data` (its row-major
// bytes), as DCP writes each chunk: data.pkl rebuilds it from storage "0" (FloatStorage).
inline std::string EncodeFloatTensorItem(const std::vector<int64_t>& shape,
                                         const std::string& data) {
  PickleOut p;
  p.Global("torch._utils", "_rebuild_tensor_v2");
  p.Mark();
  p.Mark();
  p.Str("storage");
  p.Global("torch", "FloatStorage");
  p.Str("0");
  p.Str("cpu");
  p.Int(static_cast<int64_t>(data.size() / 4));
  p.Op("tQ");  // TUPLE, BINPERSID
  p.Int(0);    // storage offset
  p.IntTuple(shape);
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t a = shape.size(); a-- > 1;) stride[a - 1] = stride[a] * shape[a];
  p.IntTuple(stride);
  p.False();
  p.Global("collections", "OrderedDict");
  p.Op(")R");
  p.Op("tR");
  return zip_test::WriteTestZip(
      {{"archive/data.pkl", p.Finish()}, {"archive/data/0", data}, {"archive/version", "3\n"}});
}

}  // namespace dcp_test
}  // namespace ckptspec
