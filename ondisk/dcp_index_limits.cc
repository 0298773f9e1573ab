#include "ondisk/dcp_index_limits.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "ondisk/file_byte_source.h"

namespace ckptspec {
namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

}  // namespace

Status ReadDcpIndex(Env* env, const std::string& dir, const ResourceLimits& limits,
                    DcpMetadata* md) {
  const std::string path = JoinPath(dir, ".metadata");
  std::string bytes;
  CKPTSPEC_RETURN_IF_ERROR(ReadIndexFile(env, path, limits, &bytes));
  const Status read = md->Read(std::move(bytes));
  if (!read.ok()) return read.WithContext(path);
  uint64_t entries = md->storage_count();
  for (const DcpTensor& t : md->tensors()) entries += md->doc().Len(t.chunks);
  if (entries > limits.max_chunks) {
    return LimitExceeded(path, entries, "chunks and storage entries", &ResourceLimits::max_chunks,
                         limits);
  }
  return Status::OK();
}

DcpReadBudget MeasureDcpReads(Env* env, const std::string& dir, const DcpMetadata& md,
                              const DcpStorageIndex& index) {
  DcpReadBudget budget;
  std::unordered_set<std::string_view> files;
  auto add = [&](int64_t e) {
    if (e < 0) return;
    const DcpStorageEntry entry = md.storage(static_cast<size_t>(e));
    budget.to_read =
        SaturatingAdd(budget.to_read, static_cast<uint64_t>(std::max<int64_t>(0, entry.length)));
    if (!IsPlainFileName(entry.relative_path) || !files.insert(entry.relative_path).second) return;
    uint64_t size = 0;
    if (env->GetFileStoredSize(JoinPath(dir, std::string(entry.relative_path)), &size).ok()) {
      budget.stored = SaturatingAdd(budget.stored, size);
    }
  };
  for (const std::vector<int64_t>& chunks : index.chunk_entries) {
    for (int64_t e : chunks) add(e);
  }
  for (int64_t e : index.bytes_entries) add(e);
  return budget;
}

Status CheckDcpReadRatio(const std::string& dir, const DcpReadBudget& budget,
                         const ResourceLimits& limits) {
  const unsigned __int128 allowed =
      static_cast<unsigned __int128>(limits.max_read_ratio) * std::max<uint64_t>(budget.stored, 1);
  if (budget.to_read <= allowed) return Status::OK();
  const Status exceeded =
      LimitExceeded(dir, budget.to_read, "bytes to read", &ResourceLimits::max_read_ratio, limits);
  return Status::NotSupported(exceeded.message() + " (the data files occupy " +
                              std::to_string(budget.stored) + " bytes)");
}

}  // namespace ckptspec
