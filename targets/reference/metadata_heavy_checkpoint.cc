#include "targets/reference/metadata_heavy_checkpoint.h"

#include <vector>

#include "targets/reference/format.h"

namespace ckptspec {
namespace {

constexpr uint64_t kChunkBytes = 4;  // one row of 2 bfloat16 elements

void AppendLine(std::string* out, int indent, const std::string& text) {
  out->append(static_cast<size_t>(indent), ' ');
  *out += text;
  *out += '\n';
}

// "[\n  a,\n  b\n ]" as dump(1) writes a two-element integer array at `indent`.
std::string Pair(int indent, int64_t a, int64_t b) {
  const std::string inner(static_cast<size_t>(indent + 1), ' ');
  return "[\n" + inner + std::to_string(a) + ",\n" + inner + std::to_string(b) + "\n" +
         std::string(static_cast<size_t>(indent), ' ') + "]";
}

}  // namespace

Status WriteMetadataHeavyCheckpoint(Env* env, const std::string& root,
                                    const MetadataHeavyShape& shape, uint64_t* metadata_bytes) {
  if (shape.tensors < 1 || shape.chunks_per_tensor < 1 || shape.world_size < 1) {
    return Status::InvalidArgument(
        "a metadata-heavy checkpoint needs at least one tensor, chunk and rank");
  }
  const std::string dir = root + "/" + IterationDirName(1);
  CKPTSPEC_RETURN_IF_ERROR(CreateDirs(env, dir));
  std::vector<std::string> shards(static_cast<size_t>(shape.world_size));

  std::string text = "{\n \"common\": {\n  \"iteration\": 1\n },\n \"files\": [\n";
  for (int64_t r = 0; r < shape.world_size; ++r) {
    const uint64_t size =
        static_cast<uint64_t>(shape.tensors) *
        static_cast<uint64_t>((shape.chunks_per_tensor - r + shape.world_size - 1) /
                              shape.world_size) *
        kChunkBytes;
    AppendLine(&text, 2, "{");
    AppendLine(&text, 3, "\"name\": \"" + ShardFileName(r) + "\",");
    AppendLine(&text, 3, "\"size\": " + std::to_string(size));
    AppendLine(&text, 2, r + 1 < shape.world_size ? "}," : "}");
  }
  text += " ],\n \"format\": \"" + std::string(kReferenceFormatName) +
          "\",\n \"format_version\": " + std::to_string(kSingleIndexFormatVersion) +
          ",\n \"iteration\": 1,\n \"layout\": {\n  \"tp\": 1\n },\n \"objects\": [],\n "
          "\"tensors\": [\n";
  uint64_t counter = 0;
  for (int64_t t = 0; t < shape.tensors; ++t) {
    AppendLine(&text, 2, "{");
    AppendLine(&text, 3, "\"chunks\": [");
    for (int64_t c = 0; c < shape.chunks_per_tensor; ++c) {
      const int64_t rank = c % shape.world_size;
      std::string& shard = shards[static_cast<size_t>(rank)];
      const uint64_t offset = shard.size();
      ++counter;
      for (uint64_t b = 0; b < kChunkBytes; ++b)
        shard += static_cast<char>((counter >> (8 * b)) & 0xff);
      AppendLine(&text, 4, "{");
      AppendLine(&text, 5, "\"byte_offset\": " + std::to_string(offset) + ",");
      AppendLine(&text, 5, "\"byte_size\": " + std::to_string(kChunkBytes) + ",");
      AppendLine(&text, 5, "\"file\": " + std::to_string(rank) + ",");
      AppendLine(&text, 5, "\"offset\": " + Pair(5, c, 0) + ",");
      AppendLine(&text, 5, "\"rank\": " + std::to_string(rank) + ",");
      AppendLine(&text, 5, "\"shape\": " + Pair(5, 1, 2) + ",");
      AppendLine(&text, 5,
                 "\"xxh3\": \"" + ChecksumHex(Checksum(shard.data() + offset, kChunkBytes)) + "\"");
      AppendLine(&text, 4, c + 1 < shape.chunks_per_tensor ? "}," : "}");
    }
    AppendLine(&text, 3, "],");
    AppendLine(&text, 3, "\"dtype\": \"bfloat16\",");
    AppendLine(&text, 3, "\"global_shape\": " + Pair(3, shape.chunks_per_tensor, 2) + ",");
    AppendLine(&text, 3, "\"key\": \"layer." + std::to_string(t) + ".weight\"");
    AppendLine(&text, 2, t + 1 < shape.tensors ? "}," : "}");
  }
  text += " ],\n \"world_size\": " + std::to_string(shape.world_size) + "\n}\n";

  for (int64_t r = 0; r < shape.world_size; ++r) {
    CKPTSPEC_RETURN_IF_ERROR(
        WriteFileSynced(env, dir + "/" + ShardFileName(r), shards[static_cast<size_t>(r)]));
  }
  CKPTSPEC_RETURN_IF_ERROR(WriteFileSynced(env, dir + "/" + kMetadataFileName, text));
  CKPTSPEC_RETURN_IF_ERROR(WriteFileSynced(env, dir + "/" + kMetadataChecksumFileName,
                                           ChecksumHex(Checksum(text.data(), text.size())) + "\n"));
  CKPTSPEC_RETURN_IF_ERROR(WriteFileSynced(env, root + "/" + kTrackerFileName, EncodeTracker(1)));
  *metadata_bytes = text.size();
  return Status::OK();
}

}  // namespace ckptspec
