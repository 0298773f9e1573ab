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

#include "model/json_text_writer.h"
#include "targets/reference/format.h"

namespace ckptspec {
namespace {

// An extent's byte_offset and byte_size members, which sort first in every entry that has them;
// its file and xxh3 members sort among the entry's others and are written in their places.
void ByteRange(JsonTextWriter* w, const Extent& e) {
  w->Member("byte_offset");
  w->Uint(e.offset);
  w->Member("byte_size");
  w->Uint(e.size);
}

}  // namespace

std::string EncodeMetadata(const CheckpointMetadata& m) {
  std::string out;
  JsonTextWriter w(&out, 1, nlohmann::json::error_handler_t::strict);
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
