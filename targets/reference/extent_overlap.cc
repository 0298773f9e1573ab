#include "targets/reference/extent_overlap.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

namespace ckptspec {
namespace {

struct Placed {
  int64_t file;
  uint64_t begin, end;
  size_t item;   // tensor index, or object index when chunk == kObject
  size_t chunk;  // chunk index in the tensor
};

constexpr size_t kObject = static_cast<size_t>(-1);

std::string ItemName(const CheckpointMetadata& m, const Placed& p) {
  if (p.chunk == kObject) return "object '" + m.objects[p.item].UniqueKey() + "'";
  const TensorEntry& t = m.tensors[p.item];
  return "tensor '" + t.key + "' chunk " + BoxToString(t.chunks[p.chunk].box);
}

}  // namespace

Status CheckExtentsDisjoint(const CheckpointMetadata& m, const std::string& where) {
  std::vector<Placed> placed;
  auto add = [&](const Extent& e, size_t item, size_t chunk) {
    if (e.size > 0) placed.push_back(Placed{e.file, e.offset, e.offset + e.size, item, chunk});
  };
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    for (size_t c = 0; c < m.tensors[t].chunks.size(); ++c)
      add(m.tensors[t].chunks[c].extent, t, c);
  }
  for (size_t o = 0; o < m.objects.size(); ++o) add(m.objects[o].extent, o, kObject);
  std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
    return std::tie(a.file, a.begin, a.end) < std::tie(b.file, b.begin, b.end);
  });
  // Within one file, in offset order: an item overlaps an earlier one exactly when it begins
  // before the furthest end so far.
  size_t furthest = 0;
  for (size_t i = 1; i < placed.size(); ++i) {
    const Placed& p = placed[i];
    if (p.file != placed[i - 1].file) {
      furthest = i;
      continue;
    }
    const Placed& q = placed[furthest];
    if (p.begin < q.end) {
      const std::string file = p.file >= 0 && static_cast<size_t>(p.file) < m.files.size()
                                   ? m.files[p.file].name
                                   : "file " + std::to_string(p.file);
      return Status::Corruption(where + ": " + ItemName(m, q) + " and " + ItemName(m, p) +
                                " share bytes [" + std::to_string(p.begin) + ", " +
                                std::to_string(std::min(p.end, q.end)) + ") of " + file);
    }
    if (p.end > q.end) furthest = i;
  }
  return Status::OK();
}

}  // namespace ckptspec
