#include "cli/reference_contents.h"

#include <new>
#include <utility>

#include "formats/torch_dtype.h"
#include "targets/reference/reference_engine.h"

namespace ckptspec {
namespace {

const TorchDType* TorchDTypeOf(DType dtype) {
  int count = 0;
  const TorchDType* all = TorchDTypes(&count);
  for (int i = 0; i < count; ++i) {
    if (all[i].ckptspec_dtype == dtype) return &all[i];
  }
  return nullptr;
}

Status ReadReferenceIndex(Env* env, const std::string& root, const ResourceLimits& limits,
                          ContentsIndex* index) {
  ReferenceOptions options;
  options.env = env;
  options.root = root;
  options.limits = limits;
  ReferenceEngine engine(std::move(options));
  int64_t iteration = 0;
  CKPTSPEC_RETURN_IF_ERROR(engine.LatestIteration(&iteration));
  CheckpointMetadata md;
  CKPTSPEC_RETURN_IF_ERROR(engine.ReadMetadata(iteration, &md));
  index->kind = CheckpointKind::kReference;
  index->dir = JoinPath(root, IterationDirName(iteration));
  for (const FileEntry& f : md.files) index->files.push_back(f.name);
  auto bytes_of = [](const Extent& e) {
    return StoredBytes{static_cast<size_t>(e.file), e.offset, e.size, false};
  };
  for (const TensorEntry& t : md.tensors) {
    StoredTensor tensor;
    tensor.key = t.key;
    tensor.dtype = TorchDTypeOf(t.dtype);
    tensor.shape = t.global_shape;
    for (const ChunkEntry& c : t.chunks) tensor.chunks.push_back({c.box, bytes_of(c.extent)});
    index->tensors.push_back(std::move(tensor));
  }
  for (const ObjectEntry& o : md.objects) {
    index->blobs.push_back({o.UniqueKey(), bytes_of(o.extent)});
  }
  return Status::OK();
}

}  // namespace

Status OpenReferenceContents(Env* env, const std::string& root, const ResourceLimits& limits,
                             std::unique_ptr<CheckpointContents>* out) {
  ContentsIndex index;
  try {
    CKPTSPEC_RETURN_IF_ERROR(ReadReferenceIndex(env, root, limits, &index));
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory("reading the index of " + root + ": out of memory");
  }
  *out = CheckpointContents::FromIndex(env, std::move(index));
  return Status::OK();
}

}  // namespace ckptspec
