#include "targets/reference/verify.h"

#include <algorithm>
#include <map>
#include <memory>
#include <new>
#include <unordered_map>

#include "model/validate.h"
#include "targets/reference/checksum_stream.h"
#include "targets/reference/format.h"
#include "targets/reference/reference_engine.h"

namespace ckptspec {
namespace {

// Streams extents of one iteration's files through one block buffer, keeping one file open.
class ExtentChecker {
 public:
  ExtentChecker(Env* env, std::string dir, const CheckpointMetadata& md)
      : env_(env), dir_(std::move(dir)), md_(md) {}

  // Reads one extent and compares its checksum. Returns a finding or "".
  std::string Check(const Extent& extent, const std::string& what, uint64_t* bytes) {
    if (extent.file < 0 || extent.file >= static_cast<int64_t>(md_.files.size())) {
      return what + ": file index " + std::to_string(extent.file) + " is out of range";
    }
    const std::string path = JoinPath(dir_, md_.files[extent.file].name);
    if (extent.file != open_index_) {
      file_.reset();
      open_index_ = -1;
      const Status s = env_->NewRandomAccessFile(path, &file_);
      if (!s.ok()) return what + ": " + s.ToString();
      open_index_ = extent.file;
    }
    uint64_t digest = 0;
    const Status s = ChecksumRange(*file_, path, extent.offset, extent.size, &buffer_, &digest);
    if (!s.ok()) return what + ": " + s.ToString();
    *bytes += extent.size;
    if (digest != extent.checksum) {
      return what + ": checksum mismatch in " + path + " at offset " +
             std::to_string(extent.offset) + " (" + std::to_string(extent.size) +
             " bytes): expected " + ChecksumHex(extent.checksum);
    }
    return "";
  }

 private:
  Env* env_;
  std::string dir_;
  const CheckpointMetadata& md_;
  int64_t open_index_ = -1;
  std::unique_ptr<RandomAccessFile> file_;
  std::vector<uint8_t> buffer_;  // one block
};

// Coverage of one tensor's chunk index: every chunk a main replica on the rank that wrote it, so
// the P4 validator finds gaps and overlaps in the index. One tensor at a time, so that the
// signature costs no more than the largest tensor's chunks. Only the ranks that wrote something
// take part: an empty signature per rank of world_size (up to 2^31, from the metadata) would be
// an allocation the file's author controls.
std::vector<Violation> TensorCoverage(const TensorEntry& t) {
  std::map<int64_t, RankSignature> ranks;
  for (const ChunkEntry& c : t.chunks) {
    TensorSpec spec;
    spec.key = t.key;
    spec.dtype = t.dtype;
    spec.global_shape = t.global_shape;
    spec.global_offset = c.box.offset;
    spec.local_shape = c.box.shape;
    ranks[c.rank].tensors.push_back(std::move(spec));
  }
  GlobalSignature sig;
  for (auto& [r, rs] : ranks) {
    rs.rank = r;
    sig.ranks.push_back(std::move(rs));
  }
  return CheckShardingIntegrity(sig);
}

// Coverage of the objects, one key at a time (keys in order of first appearance).
std::vector<Violation> ObjectCoverage(const std::vector<ObjectEntry>& objects) {
  std::vector<std::string> keys;
  std::unordered_map<std::string, std::vector<const ObjectEntry*>> by_key;
  for (const ObjectEntry& o : objects) {
    auto [it, inserted] = by_key.try_emplace(o.key);
    if (inserted) keys.push_back(o.key);
    it->second.push_back(&o);
  }
  std::vector<Violation> out;
  for (const std::string& key : keys) {
    std::map<int64_t, RankSignature> ranks;
    for (const ObjectEntry* o : by_key[key]) {
      ranks[o->rank].objects.push_back(o->Spec());
    }
    GlobalSignature sig;
    for (auto& [r, rs] : ranks) {
      rs.rank = r;
      sig.ranks.push_back(std::move(rs));
    }
    const std::vector<Violation> v = CheckShardingIntegrity(sig);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// Running out of memory is the error returned (a limit of this process, not a finding about the
// checkpoint); everything else is a finding.
Status VerifyIteration(ReferenceEngine& engine, int64_t iteration, VerifyReport* report) {
  const std::string dir = JoinPath(engine.root(), IterationDirName(iteration));
  CheckpointMetadata md;
  const Status s = engine.ReadMetadata(iteration, &md);
  if (s.code() == Status::Code::kOutOfMemory) return s;
  if (!s.ok()) {
    report->findings.push_back(dir + ": " + s.ToString());
    return Status::OK();
  }
  ExtentChecker checker(engine.env(), dir, md);
  for (const TensorEntry& t : md.tensors) {
    for (const ChunkEntry& c : t.chunks) {
      const std::string f = checker.Check(
          c.extent, "tensor '" + t.key + "' chunk " + BoxToString(c.box), &report->bytes_checked);
      if (!f.empty()) report->findings.push_back(f);
      ++report->chunks_checked;
    }
  }
  for (const ObjectEntry& o : md.objects) {
    const std::string f =
        checker.Check(o.extent, "object '" + o.UniqueKey() + "'", &report->bytes_checked);
    if (!f.empty()) report->findings.push_back(f);
    ++report->objects_checked;
  }
  for (const TensorEntry& t : md.tensors) {
    for (const Violation& v : TensorCoverage(t)) {
      report->findings.push_back(dir + ": coverage: " + v.ToString());
    }
  }
  for (const Violation& v : ObjectCoverage(md.objects)) {
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
  return Status::OK();
}

Status VerifyAll(Env* env, const std::string& root, bool all_iterations,
                 const ResourceLimits& limits, VerifyReport* report) {
  bool is_dir = false;
  Status s = env->IsDirectory(root, &is_dir);
  if (!s.ok() || !is_dir) return Status::NotFound("'" + root + "' is not a checkpoint directory");
  ReferenceOptions options;
  options.env = env;  // the engine reads through env->NewConfinedView(root)
  options.root = root;
  options.limits = limits;
  ReferenceEngine engine(std::move(options));  // read-only use: nothing is saved

  int64_t latest = -1;
  s = engine.LatestIteration(&latest);
  if (!s.ok()) report->findings.push_back("tracker: " + s.ToString());
  std::vector<int64_t> complete;
  s = engine.ListIterations(&complete);
  if (!s.ok()) return s;
  if (latest >= 0 && std::find(complete.begin(), complete.end(), latest) == complete.end()) {
    report->findings.push_back("tracker names iteration " + std::to_string(latest) + " but " +
                               JoinPath(root, IterationDirName(latest)) +
                               " is not a complete checkpoint");
  }
  if (all_iterations) {
    report->iterations = complete;
  } else if (latest >= 0) {
    report->iterations = {latest};
  }
  for (int64_t iteration : report->iterations) {
    CKPTSPEC_RETURN_IF_ERROR(VerifyIteration(engine, iteration, report));
  }
  return Status::OK();
}

}  // namespace

Status VerifyCheckpoint(Env* env, const std::string& root, bool all_iterations,
                        const ResourceLimits& limits, VerifyReport* report) {
  *report = VerifyReport();
  try {
    return VerifyAll(env, root, all_iterations, limits, report);
  } catch (const std::bad_alloc&) {
    // Every allocation is bounded by the limits; this is the last line of defence.
    return Status::OutOfMemory("verifying " + root + ": out of memory");
  }
}

Status VerifyCheckpoint(Env* env, const std::string& root, bool all_iterations,
                        VerifyReport* report) {
  return VerifyCheckpoint(env, root, all_iterations, ResourceLimits(), report);
}

}  // namespace ckptspec
