// EncodeMetadata (format.h): the index text written directly, member by member, in the spelling
// of nlohmann::json's dump(1) of the sorted tree (docs/FORMAT.md: sorted members, one-space
// indentation), without building that tree first: a save writes one index, and the tree of every
// chunk's members cost more than the text. The layout and the common state are JSON values and
// are spelled by nlohmann::json itself. metadata_encoder_test.cc compares the text with the
// tree's dump for random indexes, and with the committed golden checkpoints' index files.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "targets/reference/format.h"

namespace ckptspec {
namespace {

// Writes JSON at a depth of nesting: each value starts where its member's name ended, and a
// container's own lines are indented by one space per level, as dump(1) does.
class IndexWriter {
 public:
  explicit IndexWriter(std::string* out) : out_(out) {}

  void Open(char bracket) {
    *out_ += bracket;
    first_.push_back(true);
  }
  // Closes the innermost container: "{}" / "[]" when it is empty.
  void Close(char bracket) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) {
      *out_ += '\n';
      Indent(first_.size());
    }
    *out_ += bracket;
  }
  // Starts the next element of an array.
  void Element() { Separate(); }
  // Starts the next member of an object: its name and ": ".
  void Member(const char* name) {
    Separate();
    *out_ += '"';
    *out_ += name;
    *out_ += "\": ";
  }

  void Int(int64_t v) { *out_ += std::to_string(v); }
  void Uint(uint64_t v) { *out_ += std::to_string(v); }
  void String(const std::string& s) {
    for (const char c : s) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (u < 0x20 || u >= 0x7f || c == '"' || c == '\\') {
        // Escapes, and UTF-8 (which dump checks and rejects when invalid): as nlohmann spells it.
        *out_ += nlohmann::json(s).dump();
        return;
      }
    }
    *out_ += '"';
    *out_ += s;
    *out_ += '"';
  }
  void Dims(const ckptspec::Dims& dims) {
    Open('[');
    for (const int64_t d : dims) {
      Element();
      Int(d);
    }
    Close(']');
  }
  // A JSON value at the current depth: dump(1) indents from depth 0, so its lines are moved in.
  void Value(const nlohmann::json& value) {
    const std::string text = value.dump(1);
    const size_t depth = first_.size();
    // Raw newlines are structure (strings escape theirs): each is followed by the indentation.
    size_t from = 0;
    for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
      out_->append(text, from, nl + 1 - from);
      Indent(depth);
      from = nl + 1;
    }
    out_->append(text, from, std::string::npos);
  }

 private:
  void Separate() {
    if (!first_.back()) *out_ += ',';
    first_.back() = false;
    *out_ += '\n';
    Indent(first_.size());
  }
  void Indent(size_t depth) { out_->append(depth, ' '); }

  std::string* out_;
  std::vector<bool> first_;  // per open container: no element written yet
};

// An extent's byte_offset and byte_size members, which sort first in every entry that has them;
// its file and xxh3 members sort among the entry's others and are written in their places.
void ByteRange(IndexWriter* w, const Extent& e) {
  w->Member("byte_offset");
  w->Uint(e.offset);
  w->Member("byte_size");
  w->Uint(e.size);
}

}  // namespace

std::string EncodeMetadata(const CheckpointMetadata& m) {
  std::string out;
  IndexWriter w(&out);
  w.Open('{');
  w.Member("common");
  w.Value(m.common);
  w.Member("files");
  w.Open('[');
  for (const FileEntry& f : m.files) {
    w.Element();
    w.Open('{');
    w.Member("name");
    w.String(f.name);
    w.Member("size");
    w.Uint(f.size);
    w.Close('}');
  }
  w.Close(']');
  w.Member("format");
  w.String(kReferenceFormatName);
  w.Member("format_version");
  w.Int(m.format_version);
  w.Member("iteration");
  w.Int(m.iteration);
  w.Member("layout");
  w.Value(m.layout);
  w.Member("objects");
  w.Open('[');
  for (const ObjectEntry& o : m.objects) {
    w.Element();
    w.Open('{');
    ByteRange(&w, o.extent);
    w.Member("file");
    w.Int(o.extent.file);
    w.Member("global_offset");
    w.Dims(o.global_offset);
    w.Member("global_shape");
    w.Dims(o.global_shape);
    w.Member("key");
    w.String(o.key);
    w.Member("rank");
    w.Int(o.rank);
    w.Member("xxh3");
    w.String(ChecksumHex(o.extent.checksum));
    w.Close('}');
  }
  w.Close(']');
  w.Member("tensors");
  w.Open('[');
  for (const TensorEntry& t : m.tensors) {
    w.Element();
    w.Open('{');
    w.Member("chunks");
    w.Open('[');
    for (const ChunkEntry& c : t.chunks) {
      w.Element();
      w.Open('{');
      ByteRange(&w, c.extent);
      w.Member("file");
      w.Int(c.extent.file);
      w.Member("offset");
      w.Dims(c.box.offset);
      w.Member("rank");
      w.Int(c.rank);
      w.Member("shape");
      w.Dims(c.box.shape);
      w.Member("xxh3");
      w.String(ChecksumHex(c.extent.checksum));
      w.Close('}');
    }
    w.Close(']');
    w.Member("dtype");
    w.String(DTypeName(t.dtype));
    w.Member("global_shape");
    w.Dims(t.global_shape);
    w.Member("key");
    w.String(t.key);
    w.Close('}');
  }
  w.Close(']');
  w.Member("world_size");
  w.Int(m.world_size);
  w.Close('}');
  out += '\n';
  return out;
}

}  // namespace ckptspec
