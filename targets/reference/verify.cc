#include "targets/reference/verify.h"

#include <algorithm>
#include <map>
#include <memory>

#include "model/validate.h"
#include "targets/reference/format.h"
#include "targets/reference/reference_engine.h"

namespace ckptspec {
namespace {

// Reads one extent of a shard file and compares its checksum. Returns a finding or "".
std::string CheckExtent(Env* env, const std::string& dir, const CheckpointMetadata& md,
                        const Extent& extent, const std::string& what, uint64_t* bytes) {
  if (extent.file < 0 || extent.file >= static_cast<int64_t>(md.files.size())) {
    return what + ": file index " + std::to_string(extent.file) + " is out of range";
  }
  const std::string path = dir + "/" + md.files[extent.file].name;
  std::unique_ptr<RandomAccessFile> file;
  Status s = env->NewRandomAccessFile(path, &file);
  if (!s.ok()) return what + ": " + s.ToString();
  std::string data(extent.size, '\0');
  size_t read = 0;
  s = file->Read(extent.offset, extent.size, data.data(), &read);
  if (!s.ok()) return what + ": " + s.ToString();
  if (read != extent.size) {
    return what + ": " + path + " holds " + std::to_string(read) + " of " +
           std::to_string(extent.size) + " bytes at offset " + std::to_string(extent.offset);
  }
  *bytes += extent.size;
  if (Checksum(data.data(), data.size()) != extent.checksum) {
    return what + ": checksum mismatch in " + path + " at offset " + std::to_string(extent.offset) +
           " (expected " + ChecksumHex(extent.checksum) + ", got " +
           ChecksumHex(Checksum(data.data(), data.size())) + ")";
  }
  return "";
}

// The chunk index as a signature: every chunk a main replica on the rank that wrote it, so the
// P4 validator finds gaps and overlaps in the index.
GlobalSignature CoverageSignature(const CheckpointMetadata& md) {
  std::map<int64_t, RankSignature> ranks;
  for (const TensorEntry& t : md.tensors) {
    for (const ChunkEntry& c : t.chunks) {
      TensorSpec spec;
      spec.key = t.key;
      spec.dtype = t.dtype;
      spec.global_shape = t.global_shape;
      spec.global_offset = c.box.offset;
      spec.local_shape = c.box.shape;
      ranks[c.rank].tensors.push_back(std::move(spec));
    }
  }
  for (const ObjectEntry& o : md.objects) {
    ObjectSpec spec;
    spec.key = o.key;
    spec.global_shape = o.global_shape;
    spec.global_offset = o.global_offset;
    ranks[o.rank].objects.push_back(std::move(spec));
  }
  // Only the ranks that wrote something, in rank order: the validator identifies a rank by
  // RankSignature::rank, and an empty signature per rank of world_size (up to 2^31, from the
  // metadata) would be an allocation the file's author controls.
  GlobalSignature sig;
  for (auto& [r, rs] : ranks) {
    rs.rank = r;
    sig.ranks.push_back(std::move(rs));
  }
  return sig;
}

}  // namespace

Status VerifyCheckpoint(Env* env, const std::string& root, bool all_iterations, VerifyReport* report) {
  *report = VerifyReport();
  bool is_dir = false;
  Status s = env->IsDirectory(root, &is_dir);
  if (!s.ok() || !is_dir) return Status::NotFound("'" + root + "' is not a checkpoint directory");
  ReferenceOptions options;
  options.env = env;
  options.root = root;
  ReferenceEngine engine(std::move(options));  // read-only use: nothing is saved

  int64_t latest = -1;
  s = engine.LatestIteration(&latest);
  if (!s.ok()) report->findings.push_back("tracker: " + s.ToString());
  std::vector<int64_t> complete;
  s = engine.ListIterations(&complete);
  if (!s.ok()) return s;
  if (latest >= 0 && std::find(complete.begin(), complete.end(), latest) == complete.end()) {
    report->findings.push_back("tracker names iteration " + std::to_string(latest) +
                               " but " + root + "/" + IterationDirName(latest) + " is not a complete checkpoint");
  }
  if (all_iterations) {
    report->iterations = complete;
  } else if (latest >= 0) {
    report->iterations = {latest};
  }
  for (int64_t iteration : report->iterations) {
    const std::string dir = root + "/" + IterationDirName(iteration);
    CheckpointMetadata md;
    s = engine.ReadMetadata(iteration, &md);
    if (!s.ok()) {
      report->findings.push_back(dir + ": " + s.ToString());
      continue;
    }
    for (const TensorEntry& t : md.tensors) {
      for (const ChunkEntry& c : t.chunks) {
        const std::string f = CheckExtent(env, dir, md, c.extent,
                                          "tensor '" + t.key + "' chunk " + BoxToString(c.box),
                                          &report->bytes_checked);
        if (!f.empty()) report->findings.push_back(f);
        ++report->chunks_checked;
      }
    }
    for (const ObjectEntry& o : md.objects) {
      const std::string f = CheckExtent(env, dir, md, o.extent, "object '" + o.UniqueKey() + "'",
                                        &report->bytes_checked);
      if (!f.empty()) report->findings.push_back(f);
      ++report->objects_checked;
    }
    for (const Violation& v : CheckShardingIntegrity(CoverageSignature(md))) {
      report->findings.push_back(dir + ": coverage: " + v.ToString());
    }
    // A tensor without chunks is absent from the coverage signature: its gap is reported here.
    for (const TensorEntry& t : md.tensors) {
      if (t.chunks.empty() && Volume(t.global_shape) > 0) {
        report->findings.push_back(dir + ": coverage: tensor '" + t.key + "' of shape " +
                                   DimsToString(t.global_shape) + " has no chunk: none of its " +
                                   std::to_string(Volume(t.global_shape)) + " elements is stored");
      }
    }
  }
  return Status::OK();
}

}  // namespace ckptspec
