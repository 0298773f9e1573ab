// EncodeMetadata writes the text nlohmann::json's dump(1) gives for the index as a sorted tree
// (docs/FORMAT.md): byte for byte for random indexes (keys with escapes and UTF-8, empty and
// long shapes, nested layout and common values), and for the committed golden checkpoints, whose
// index files were written through the tree.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "targets/reference/format.h"

namespace ckptspec {
namespace {

using nlohmann::json;

// The index as a tree, dumped: what EncodeMetadata spelled before it wrote the text directly.
std::string TreeEncode(const CheckpointMetadata& m) {
  auto extent = [](const Extent& e, json j) {
    j["file"] = e.file;
    j["byte_offset"] = e.offset;
    j["byte_size"] = e.size;
    j["xxh3"] = ChecksumHex(e.checksum);
    return j;
  };
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
      chunks.push_back(extent(c.extent, {{"offset", c.box.offset.ToStdVector()},
                                         {"shape", c.box.shape.ToStdVector()},
                                         {"rank", c.rank}}));
    }
    tensors.push_back({{"key", t.key},
                       {"dtype", DTypeName(t.dtype)},
                       {"global_shape", t.global_shape.ToStdVector()},
                       {"chunks", std::move(chunks)}});
  }
  j["tensors"] = std::move(tensors);
  json objects = json::array();
  for (const ObjectEntry& o : m.objects) {
    objects.push_back(extent(o.extent, {{"key", o.key},
                                        {"global_shape", o.global_shape.ToStdVector()},
                                        {"global_offset", o.global_offset.ToStdVector()},
                                        {"rank", o.rank}}));
  }
  j["objects"] = std::move(objects);
  return j.dump(1) + "\n";
}

rc::Gen<std::string> Names() {
  // Plain names most of the time; otherwise ASCII with control characters, quotes and
  // backslashes, UTF-8, and now and then invalid UTF-8 (which both spellings refuse).
  return rc::gen::weightedOneOf<std::string>(
      {{60, rc::gen::element<std::string>("decoder.layers.self_attention.linear_qkv.weight", "",
                                          "a", "rng_state/shard_0.1_2.8")},
       {20, rc::gen::container<std::string>(rc::gen::inRange<char>(0, 127))},
       {19, rc::gen::element<std::string>("tab\there", "quote\"and\\slash", "\x01\x1f\x7f",
                                          "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")},
       {1, rc::gen::element<std::string>("bad \xff utf-8", "cut \xc3")}});
}

rc::Gen<Dims> AnyDims() {
  return rc::gen::map(rc::gen::container<std::vector<int64_t>>(rc::gen::arbitrary<int64_t>()),
                      [](const std::vector<int64_t>& v) { return Dims(v); });
}

rc::Gen<Extent> Extents() {
  return rc::gen::build<Extent>(rc::gen::set(&Extent::file), rc::gen::set(&Extent::offset),
                                rc::gen::set(&Extent::size), rc::gen::set(&Extent::checksum));
}

rc::Gen<json> Values() {
  return rc::gen::element<json>(json::object(), json(nullptr), json::parse(R"({"tp": 2, "pp": 1})"),
                                json::parse(R"({"a": [1, 2.5, "x\ny", {"b": []}], "c": {}})"),
                                json::parse(R"([[], [[]], -3, 1e300, true])"));
}

rc::Gen<CheckpointMetadata> Indexes() {
  return rc::gen::build<CheckpointMetadata>(
      rc::gen::set(&CheckpointMetadata::format_version),
      rc::gen::set(&CheckpointMetadata::iteration), rc::gen::set(&CheckpointMetadata::world_size),
      rc::gen::set(&CheckpointMetadata::layout, Values()),
      rc::gen::set(&CheckpointMetadata::common, Values()),
      rc::gen::set(&CheckpointMetadata::files,
                   rc::gen::container<std::vector<FileEntry>>(rc::gen::build<FileEntry>(
                       rc::gen::set(&FileEntry::name, Names()), rc::gen::set(&FileEntry::size)))),
      rc::gen::set(
          &CheckpointMetadata::tensors,
          rc::gen::container<std::vector<TensorEntry>>(rc::gen::build<TensorEntry>(
              rc::gen::set(&TensorEntry::key, Names()),
              rc::gen::set(&TensorEntry::dtype,
                           rc::gen::element(DType::kFloat32, DType::kBFloat16, DType::kInt64)),
              rc::gen::set(&TensorEntry::global_shape, AnyDims()),
              rc::gen::set(
                  &TensorEntry::chunks,
                  rc::gen::container<std::vector<ChunkEntry>>(rc::gen::build<ChunkEntry>(
                      rc::gen::set(&ChunkEntry::box,
                                   rc::gen::build<Box>(rc::gen::set(&Box::offset, AnyDims()),
                                                       rc::gen::set(&Box::shape, AnyDims()))),
                      rc::gen::set(&ChunkEntry::rank),
                      rc::gen::set(&ChunkEntry::extent, Extents()))))))),
      rc::gen::set(
          &CheckpointMetadata::objects,
          rc::gen::container<std::vector<ObjectEntry>>(rc::gen::build<ObjectEntry>(
              rc::gen::set(&ObjectEntry::key, Names()),
              rc::gen::set(&ObjectEntry::global_shape, AnyDims()),
              rc::gen::set(&ObjectEntry::global_offset, AnyDims()),
              rc::gen::set(&ObjectEntry::rank), rc::gen::set(&ObjectEntry::extent, Extents())))));
}

// The outcome of an encoder: its text, or that it threw (invalid UTF-8 in a name).
std::string Outcome(std::string (*encode)(const CheckpointMetadata&), const CheckpointMetadata& m) {
  try {
    return encode(m);
  } catch (const json::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

RC_GTEST_PROP(MetadataEncoder, SpellsTheIndexAsTheSortedTreeDumps, ()) {
  const CheckpointMetadata m = *Indexes();
  const std::string tree = Outcome(&TreeEncode, m);
  RC_TAG(tree.rfind("threw", 0) == 0 ? "refused (invalid UTF-8)" : "written");
  RC_LOG() << "the tree's text:\n" << tree << "\n";
  RC_ASSERT(Outcome(&EncodeMetadata, m) == tree);
}

// Every index file of the committed reference checkpoints, decoded and encoded again, is the
// committed text.
TEST(MetadataEncoder, GoldenIndexesEncodeToTheirCommittedText) {
  int checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::string(CKPTSPEC_SOURCE_DIR) + "/corpus/golden")) {
    const std::string name = entry.path().filename().string();
    if (name != kMetadataFileName && name != kWriterIndexFileName) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    CheckpointMetadata m;
    ASSERT_TRUE(DecodeMetadata(text.str(), entry.path().string(), &m).ok()) << entry.path();
    EXPECT_EQ(EncodeMetadata(m), text.str()) << entry.path();
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace ckptspec
