// P4, sharding integrity: CheckShardingIntegrity (contract in validate.h).
#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "model/box_overlap.h"
#include "model/validate.h"
#include "model/validate_util.h"

namespace ckptspec {
namespace {

using validate_internal::ChunkExtent;
using validate_internal::CompareChunks;
using validate_internal::GroupObjectsByKey;
using validate_internal::GroupTensorsByKey;
using validate_internal::MakeViolation;
using validate_internal::ObjectRef;
using validate_internal::ObjectShardBox;
using validate_internal::Quoted;
using validate_internal::RanksToString;
using validate_internal::SameChunk;
using validate_internal::SortUnique;
using validate_internal::TensorRef;

constexpr const char* kP4 = "P4";

Box ChunkBox(const TensorSpec& spec) { return spec.box(); }

std::string HeldBy(const std::vector<int64_t>& holders) {
  return holders.empty() ? "no rank holds it"
                         : "it is held only by non-main replicas on " + RanksToString(holders);
}

// Reports, as one violation, that the entries disagree on a property when any entry's value
// differs from the first entry's. Returns true when they disagree.
template <typename Ref, typename Same, typename Describe>
bool ReportDisagreement(std::string_view key, const char* noun, const std::vector<Ref>& entries,
                        const char* what, ViolationKind kind, Same same, Describe describe,
                        std::vector<Violation>* out) {
  const auto& first = *entries[0].spec;
  bool any = false;
  for (const Ref& e : entries) {
    if (!same(first, *e.spec)) {
      any = true;
      break;
    }
  }
  if (!any) return false;
  std::vector<std::pair<std::string, std::vector<int64_t>>> values;
  std::unordered_map<std::string, size_t> index;
  std::vector<int64_t> differing;
  for (const Ref& e : entries) {
    auto [it, inserted] = index.emplace(describe(*e.spec), values.size());
    if (inserted) values.emplace_back(it->first, std::vector<int64_t>());
    values[it->second].second.push_back(e.rank);
    if (it->second != 0) differing.push_back(e.rank);
  }
  std::string message =
      std::string(noun) + " " + Quoted(key) + ": ranks disagree on " + what + ": ";
  constexpr size_t kMaxValues = 4;
  for (size_t i = 0; i < values.size() && i < kMaxValues; ++i) {
    SortUnique(&values[i].second);
    if (i) message += "; ";
    message += values[i].first + " on " + RanksToString(values[i].second);
  }
  if (values.size() > kMaxValues) {
    message += "; ... (" + std::to_string(values.size()) + " distinct values)";
  }
  out->push_back(MakeViolation(kP4, kind, key, std::nullopt, std::move(differing), message));
  return true;
}

// --- Regular grid -------------------------------------------------------------------------------

struct CellEntry {
  int64_t cell;
  int64_t rank;
  bool main;
};

void CheckRegularCoverage(std::string_view key, const std::vector<TensorRef>& entries,
                          std::vector<Violation>* out) {
  const TensorSpec& first = *entries[0].spec;
  if (Volume(first.global_shape) == 0) return;  // no element to cover
  RegularGrid grid;
  if (!RegularGrid::Make(first.global_shape, first.axis_fragmentations, &grid)) return;
  const Dims& cell_shape = grid.cell_shape();
  const Dims& frags = grid.fragmentations();
  std::vector<CellEntry> cells;
  cells.reserve(entries.size());
  for (const TensorRef& e : entries) {
    int64_t index = 0;
    for (size_t a = 0; a < cell_shape.size(); ++a) {
      const int64_t c = cell_shape[a] == 0 ? 0 : e.spec->global_offset[a] / cell_shape[a];
      index = index * frags[a] + c;
    }
    cells.push_back(CellEntry{index, e.rank, IsMainReplica(e.spec->replica_id)});
  }
  std::sort(cells.begin(), cells.end(), [](const CellEntry& a, const CellEntry& b) {
    if (a.cell != b.cell) return a.cell < b.cell;
    if (a.main != b.main) return a.main;
    return a.rank < b.rank;
  });
  const std::string grid_name = "grid " + DimsToString(frags);
  std::vector<int64_t> covered;  // cells with at least one main replica, ascending
  int64_t overlaps = 0;
  for (size_t i = 0; i < cells.size();) {
    size_t j = i;
    int64_t mains = 0;
    while (j < cells.size() && cells[j].cell == cells[i].cell) mains += cells[j++].main ? 1 : 0;
    if (mains > 0) covered.push_back(cells[i].cell);
    if (mains > 1 && overlaps++ < kMaxReportsPerKey) {
      std::vector<int64_t> ranks;
      for (size_t k = i; k < i + mains; ++k) ranks.push_back(cells[k].rank);
      SortUnique(&ranks);
      const Box box = grid.CellBox(cells[i].cell);
      out->push_back(MakeViolation(kP4, ViolationKind::kOverlap, key, box, ranks,
                                   "tensor " + Quoted(key) + ": " + std::to_string(mains) +
                                       " main replicas cover cell " + BoxToString(box) + " of " +
                                       grid_name + " (" + RanksToString(ranks) +
                                       "); exactly one must"));
    }
    i = j;
  }
  if (overlaps > kMaxReportsPerKey) {
    out->push_back(MakeViolation(
        kP4, ViolationKind::kOverlap, key, std::nullopt, {},
        "tensor " + Quoted(key) + ": " + std::to_string(overlaps - kMaxReportsPerKey) +
            " more cells of " + grid_name + " have several main replicas (" +
            std::to_string(overlaps) + " in all)"));
  }
  const int64_t gaps = grid.num_cells() - static_cast<int64_t>(covered.size());
  if (gaps <= 0) return;
  // Walk cell indices in order, skipping covered ones: at most covered.size() + the cap steps.
  int64_t reported = 0;
  size_t p = 0, q = 0;
  for (int64_t c = 0; c < grid.num_cells() && reported < kMaxReportsPerKey; ++c) {
    if (p < covered.size() && covered[p] == c) {
      ++p;
      continue;
    }
    while (q < cells.size() && cells[q].cell < c) ++q;
    std::vector<int64_t> holders;
    while (q < cells.size() && cells[q].cell == c) holders.push_back(cells[q++].rank);
    SortUnique(&holders);
    const Box box = grid.CellBox(c);
    out->push_back(MakeViolation(kP4, ViolationKind::kGap, key, box, holders,
                                 "tensor " + Quoted(key) + ": no main replica covers cell " +
                                     BoxToString(box) + " of " + grid_name + "; " +
                                     HeldBy(holders)));
    ++reported;
  }
  if (gaps > reported) {
    out->push_back(MakeViolation(kP4, ViolationKind::kGap, key, std::nullopt, {},
                                 "tensor " + Quoted(key) + ": " + std::to_string(gaps - reported) +
                                     " more cells of " + grid_name + " have no main replica (" +
                                     std::to_string(gaps) + " of " +
                                     std::to_string(grid.num_cells()) + " in all)"));
  }
}

// --- Irregular grid -----------------------------------------------------------------------------

// Intersection of two valid chunks of equal rank, without allocating unless they intersect.
bool IntersectChunks(const TensorSpec& a, const TensorSpec& b, Box* out) {
  const size_t rank = a.global_offset.size();
  for (size_t i = 0; i < rank; ++i) {
    const int64_t begin = std::max(a.global_offset[i], b.global_offset[i]);
    const int64_t end =
        std::min(a.global_offset[i] + ChunkExtent(a, i), b.global_offset[i] + ChunkExtent(b, i));
    if (end <= begin) return false;
  }
  return Intersect(ChunkBox(a), ChunkBox(b), out);
}

// Non-main holders of any element of `box`.
std::vector<int64_t> HoldersOf(const Box& box, const std::vector<TensorRef>& non_mains) {
  std::vector<int64_t> holders;
  for (const TensorRef& e : non_mains) {
    if (Intersect(box, ChunkBox(*e.spec), nullptr)) holders.push_back(e.rank);
  }
  SortUnique(&holders);
  return holders;
}

void ReportIrregularGap(std::string_view key, const Box& box,
                        const std::vector<TensorRef>& non_mains, std::vector<Violation>* out) {
  std::vector<int64_t> holders = HoldersOf(box, non_mains);
  out->push_back(MakeViolation(kP4, ViolationKind::kGap, key, box, holders,
                               "tensor " + Quoted(key) + ": no main replica covers " +
                                   BoxToString(box) + " (irregular grid); " + HeldBy(holders)));
}

void ReportMissingVolume(std::string_view key, int64_t missing, int64_t total, int64_t listed,
                         const char* why, std::vector<Violation>* out) {
  out->push_back(MakeViolation(
      kP4, ViolationKind::kGap, key, std::nullopt, {},
      "tensor " + Quoted(key) + ": " + std::to_string(missing) + " of " + std::to_string(total) +
          " elements have no main replica" +
          (listed > 0 ? " (" + std::to_string(listed) + " regions listed above)" : std::string()) +
          why));
}

// Gaps of an n-D irregular grid with no overlapping main chunks, located on the compressed grid.
void LocateGapsCompressed(std::string_view key, const Dims& global_shape,
                          const std::vector<const TensorSpec*>& chunks, int64_t missing,
                          const std::vector<TensorRef>& non_mains, std::vector<Violation>* out) {
  const size_t rank = global_shape.size();
  std::vector<Dims> coords(rank);
  for (size_t a = 0; a < rank; ++a) {
    coords[a] = {0, global_shape[a]};
    for (const TensorSpec* c : chunks) {
      coords[a].push_back(c->global_offset[a]);
      coords[a].push_back(c->global_offset[a] + ChunkExtent(*c, a));
    }
    std::sort(coords[a].begin(), coords[a].end());
    coords[a].erase(std::unique(coords[a].begin(), coords[a].end()), coords[a].end());
  }
  Dims counts(rank);
  for (size_t a = 0; a < rank; ++a) counts[a] = static_cast<int64_t>(coords[a].size()) - 1;
  int64_t num_cells = 0;
  if (!CheckedVolume(counts, &num_cells) || num_cells > kMaxCompressedCells) {
    ReportMissingVolume(key, missing, Volume(global_shape), 0,
                        "; not located: the grid of chunk boundaries has too many cells", out);
    return;
  }
  std::vector<uint8_t> covered(static_cast<size_t>(num_cells), 0);
  Dims lo(rank), hi(rank), at(rank);
  for (const TensorSpec* c : chunks) {
    bool empty = false;
    for (size_t a = 0; a < rank; ++a) {
      lo[a] = std::lower_bound(coords[a].begin(), coords[a].end(), c->global_offset[a]) -
              coords[a].begin();
      hi[a] = std::lower_bound(coords[a].begin(), coords[a].end(),
                               c->global_offset[a] + ChunkExtent(*c, a)) -
              coords[a].begin();
      empty = empty || hi[a] <= lo[a];
    }
    if (empty) continue;
    // Mark every compressed cell in [lo, hi), odometer style.
    at = lo;
    bool done = false;
    while (!done) {
      covered[static_cast<size_t>(LinearIndex(at, counts))] = 1;
      done = true;
      for (size_t a = rank; a-- > 0;) {
        if (++at[a] < hi[a]) {
          done = false;
          break;
        }
        at[a] = lo[a];
      }
    }
  }
  int64_t listed = 0;
  bool more = false;  // uncovered cells beyond the cap
  for (int64_t cell = 0; cell < num_cells; ++cell) {
    if (covered[static_cast<size_t>(cell)]) continue;
    if (listed == kMaxReportsPerKey) {
      more = true;
      break;
    }
    Box box;
    box.offset.resize(rank);
    box.shape.resize(rank);
    int64_t rest = cell;
    bool empty = false;
    for (size_t a = rank; a-- > 0;) {
      const int64_t i = rest % counts[a];
      rest /= counts[a];
      box.offset[a] = coords[a][i];
      box.shape[a] = coords[a][i + 1] - coords[a][i];
      empty = empty || box.shape[a] == 0;
    }
    if (empty) continue;
    ReportIrregularGap(key, box, non_mains, out);
    ++listed;
  }
  if (more) ReportMissingVolume(key, missing, Volume(global_shape), listed, "", out);
}

void CheckIrregularCoverage(std::string_view key, const std::vector<TensorRef>& entries,
                            std::vector<Violation>* out) {
  const Dims& global_shape = entries[0].spec->global_shape;
  const size_t rank = global_shape.size();
  const int64_t total = Volume(global_shape);
  std::vector<TensorRef> mains, non_mains;
  for (const TensorRef& e : entries) {
    if (!IsMainReplica(e.spec->replica_id)) {
      non_mains.push_back(e);
      continue;
    }
    int64_t volume = 0;
    CheckedVolume(e.spec->local_shape, &volume);
    if (volume > 0) mains.push_back(e);  // an empty chunk covers nothing
  }
  if (total == 0) return;
  // The main chunks' bounds, flat (rank 0 has none: every chunk is the one scalar).
  BoxBounds all;
  all.rank = rank;
  all.lo.reserve(mains.size() * rank);
  all.hi.reserve(mains.size() * rank);
  for (const TensorRef& e : mains) {
    for (size_t a = 0; a < rank; ++a) {
      all.lo.push_back(e.spec->global_offset[a]);
      all.hi.push_back(e.spec->global_offset[a] + ChunkExtent(*e.spec, a));
    }
  }
  auto compare_bounds = [&](size_t x, size_t y) {  // CompareChunks on the flat bounds
    for (const std::vector<int64_t>* v : {&all.lo, &all.hi}) {
      for (size_t a = 0; a < rank; ++a) {
        const int64_t p = (*v)[x * rank + a], q = (*v)[y * rank + a];
        if (p != q) return p < q ? -1 : 1;
      }
    }
    return 0;
  };
  // Identical main chunks: one overlap per chunk, naming every rank holding it. Chunks in
  // CompareChunks order, then by rank.
  std::vector<size_t> order(mains.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const int c = compare_bounds(x, y);
    return c != 0 ? c < 0 : mains[x].rank < mains[y].rank;
  });
  struct Distinct {
    size_t chunk;         // its bounds: all's box `chunk`
    size_t first, count;  // its holders: mains[order[first, first + count)]
  };
  std::vector<Distinct> distinct;
  int64_t overlaps = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && compare_bounds(order[i], order[j]) == 0) ++j;
    distinct.push_back(Distinct{order[i], i, j - i});
    if (j - i > 1 && overlaps++ < kMaxReportsPerKey) {
      std::vector<int64_t> ranks;
      for (size_t k = i; k < j; ++k) ranks.push_back(mains[order[k]].rank);
      SortUnique(&ranks);
      const Box box = ChunkBox(*mains[order[i]].spec);
      out->push_back(MakeViolation(kP4, ViolationKind::kOverlap, key, box, ranks,
                                   "tensor " + Quoted(key) + ": " + std::to_string(j - i) +
                                       " main replicas hold chunk " + BoxToString(box) + " (" +
                                       RanksToString(ranks) + "); exactly one must"));
    }
    i = j;
  }
  if (rank == 0) {
    if (distinct.empty()) ReportIrregularGap(key, Box{}, non_mains, out);
    return;
  }
  // Sweep along the axis with the most distinct offsets (box_overlap.h), so that few chunks are
  // active at once; the overlaps are reported in the sweep's order: by offset on that axis, ties
  // in CompareChunks order. (Identical chunks share their offsets, so counting over all main
  // chunks counts the distinct ones.)
  const SweepAxes axes = ChooseSweepAxes(all);
  const size_t axis = axes.sweep;
  std::vector<std::pair<int64_t, size_t>> sweep_order(distinct.size());
  for (size_t d = 0; d < distinct.size(); ++d)
    sweep_order[d] = {all.Lo(distinct[d].chunk, axis), d};
  std::sort(sweep_order.begin(), sweep_order.end());  // by offset, then the position: stable
  std::vector<Distinct> swept;
  swept.reserve(distinct.size());
  BoxBounds bounds;
  bounds.rank = rank;
  bounds.lo.reserve(distinct.size() * rank);
  bounds.hi.reserve(distinct.size() * rank);
  for (const auto& entry : sweep_order) {
    const Distinct& d = distinct[entry.second];
    swept.push_back(d);
    bounds.Add(&all.lo[d.chunk * rank], &all.hi[d.chunk * rank]);
  }
  distinct = std::move(swept);
  auto spec_of = [&](const Distinct& d) -> const TensorSpec& { return *mains[d.chunk].spec; };
  ForEachOverlap(bounds, axes, [&](size_t k, size_t i) {
    if (overlaps++ >= kMaxReportsPerKey) return false;
    Box both;
    IntersectChunks(spec_of(distinct[k]), spec_of(distinct[i]), &both);
    std::vector<int64_t> ranks;
    for (const Distinct* d : {&distinct[k], &distinct[i]}) {
      for (size_t m = d->first; m < d->first + d->count; ++m) ranks.push_back(mains[order[m]].rank);
    }
    SortUnique(&ranks);
    out->push_back(MakeViolation(kP4, ViolationKind::kOverlap, key, both, ranks,
                                 "tensor " + Quoted(key) + ": main chunks " +
                                     BoxToString(ChunkBox(spec_of(distinct[k]))) + " and " +
                                     BoxToString(ChunkBox(spec_of(distinct[i]))) + " overlap in " +
                                     BoxToString(both) + " (" + RanksToString(ranks) +
                                     "); exactly one main replica may cover an element"));
    return true;
  });
  if (overlaps > kMaxReportsPerKey) {
    out->push_back(MakeViolation(kP4, ViolationKind::kOverlap, key, std::nullopt, {},
                                 "tensor " + Quoted(key) + ": more overlapping main chunks, not " +
                                     "listed (the report stops after " +
                                     std::to_string(kMaxReportsPerKey) + ")"));
  }
  if (rank == 1) {
    // Exact in 1-D, with or without overlaps: walk the chunks in offset order.
    int64_t covered_end = 0, missing = 0, listed = 0;
    auto gap = [&](int64_t begin, int64_t end) {
      missing += end - begin;
      if (listed < kMaxReportsPerKey) {
        ReportIrregularGap(key, Box{{begin}, {end - begin}}, non_mains, out);
        ++listed;
      }
    };
    for (const Distinct& d : distinct) {
      const int64_t begin = all.Lo(d.chunk, 0);
      if (begin > covered_end) gap(covered_end, begin);
      covered_end = std::max(covered_end, all.Hi(d.chunk, 0));
    }
    if (covered_end < global_shape[0]) gap(covered_end, global_shape[0]);
    if (missing > 0 && listed >= kMaxReportsPerKey) {
      ReportMissingVolume(key, missing, total, listed, "", out);
    }
    return;
  }
  if (overlaps > 0) return;  // n-D: the sum of volumes means nothing with overlaps
  int64_t sum = 0;
  std::vector<const TensorSpec*> chunks;
  for (const Distinct& d : distinct) {
    sum += Volume(spec_of(d).local_shape);  // no overlap: the sum is at most the global volume
    chunks.push_back(&spec_of(d));
  }
  if (sum < total) LocateGapsCompressed(key, global_shape, chunks, total - sum, non_mains, out);
}

void CheckTensorKey(std::string_view key, const std::vector<TensorRef>& all,
                    std::vector<Violation>* out) {
  std::vector<TensorRef> entries;
  entries.reserve(all.size());
  for (const TensorRef& e : all) {
    const Status st = ValidateTensorSpec(*e.spec);
    if (st.ok()) {
      entries.push_back(e);
    } else {
      out->push_back(MakeViolation(kP4, ViolationKind::kInvalidEntry, key, std::nullopt, {e.rank},
                                   "rank " + std::to_string(e.rank) + ": " + st.message()));
    }
  }
  if (entries.empty()) return;
  bool disagree = false;
  disagree |= ReportDisagreement(
      key, "tensor", entries, "dtype", ViolationKind::kDtypeMismatch,
      [](const TensorSpec& a, const TensorSpec& b) { return a.dtype == b.dtype; },
      [](const TensorSpec& s) { return std::string(DTypeName(s.dtype)); }, out);
  disagree |= ReportDisagreement(
      key, "tensor", entries, "global shape", ViolationKind::kGlobalShapeMismatch,
      [](const TensorSpec& a, const TensorSpec& b) { return a.global_shape == b.global_shape; },
      [](const TensorSpec& s) { return DimsToString(s.global_shape); }, out);
  const bool grid_disagrees = ReportDisagreement(
      key, "tensor", entries, "the grid", ViolationKind::kGridMismatch,
      [](const TensorSpec& a, const TensorSpec& b) {
        return a.axis_fragmentations == b.axis_fragmentations;
      },
      [](const TensorSpec& s) {
        return s.has_regular_grid() ? "regular grid " + DimsToString(s.axis_fragmentations)
                                    : std::string("irregular grid");
      },
      out);
  disagree |= grid_disagrees;
  if (!disagree && entries[0].spec->has_regular_grid()) {
    disagree |= ReportDisagreement(
        key, "tensor", entries, "local shape", ViolationKind::kLocalShapeMismatch,
        [](const TensorSpec& a, const TensorSpec& b) { return a.local_shape == b.local_shape; },
        [](const TensorSpec& s) { return DimsToString(s.local_shape); }, out);
  }
  if (disagree) return;  // coverage on inconsistent entries would only repeat the disagreement
  if (entries[0].spec->has_regular_grid()) {
    CheckRegularCoverage(key, entries, out);
  } else {
    CheckIrregularCoverage(key, entries, out);
  }
}

// --- Objects ------------------------------------------------------------------------------------

// Well-formed except that the offset lies outside the global shape.
bool OffsetOutsideOnly(const ObjectSpec& spec) {
  int64_t volume;
  if (spec.key.empty() || spec.replica_id.empty() ||
      spec.global_offset.size() != spec.global_shape.size() ||
      !CheckedVolume(spec.global_shape, &volume)) {
    return false;
  }
  return !IsWithin(ObjectShardBox(spec), spec.global_shape);
}

Dims Unravel(int64_t index, const Dims& shape) {
  Dims at(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    at[a] = index % shape[a];
    index /= shape[a];
  }
  return at;
}

// Rank-local objects (IsRankLocal) of a key of valid entries: true when the key has any, after
// reporting a key that is rank-local on some ranks and sharded on others (kGlobalShapeMismatch)
// and a rank holding the key more than once (kDuplicateMain). Ranks may hold different values.
bool CheckRankLocalObjects(std::string_view key, const std::vector<ObjectRef>& entries,
                           std::vector<Violation>* out) {
  std::vector<int64_t> local, sharded, duplicated;
  for (const ObjectRef& e : entries) {
    if (!IsRankLocal(*e.spec)) {
      sharded.push_back(e.rank);
    } else if (!local.empty() && local.back() == e.rank) {
      duplicated.push_back(e.rank);  // entries come in rank order
    } else {
      local.push_back(e.rank);
    }
  }
  if (local.empty()) return false;
  if (!sharded.empty()) {
    SortUnique(&sharded);
    std::vector<int64_t> ranks = local;
    ranks.insert(ranks.end(), sharded.begin(), sharded.end());
    SortUnique(&ranks);
    out->push_back(
        MakeViolation(kP4, ViolationKind::kGlobalShapeMismatch, key, std::nullopt, std::move(ranks),
                      "object " + Quoted(key) + " is rank-local (no global shape) on " +
                          RanksToString(local) + " and sharded on " + RanksToString(sharded)));
  }
  SortUnique(&duplicated);
  for (int64_t rank : duplicated) {
    out->push_back(MakeViolation(kP4, ViolationKind::kDuplicateMain, key, std::nullopt, {rank},
                                 "rank " + std::to_string(rank) + " holds the rank-local object " +
                                     Quoted(key) + " more than once"));
  }
  return true;
}

void CheckObjectKey(std::string_view key, const std::vector<ObjectRef>& all,
                    std::vector<Violation>* out) {
  std::vector<ObjectRef> entries;
  entries.reserve(all.size());
  for (const ObjectRef& e : all) {
    const Status st = ValidateObjectSpec(*e.spec);
    if (st.ok()) {
      entries.push_back(e);
    } else if (OffsetOutsideOnly(*e.spec)) {
      out->push_back(MakeViolation(
          kP4, ViolationKind::kExtraObject, key, ObjectShardBox(*e.spec), {e.rank},
          "ShardedObject " + Quoted(e.spec->UniqueKey()) + " on rank " + std::to_string(e.rank) +
              ": offset " + DimsToString(e.spec->global_offset) + " lies outside global shape " +
              DimsToString(e.spec->global_shape) + " (an extra object)"));
    } else {
      out->push_back(MakeViolation(kP4, ViolationKind::kInvalidEntry, key, std::nullopt, {e.rank},
                                   "rank " + std::to_string(e.rank) + ": " + st.message()));
    }
  }
  if (entries.empty()) return;
  if (CheckRankLocalObjects(key, entries, out)) return;
  if (ReportDisagreement(
          key, "ShardedObject", entries, "global shape", ViolationKind::kGlobalShapeMismatch,
          [](const ObjectSpec& a, const ObjectSpec& b) { return a.global_shape == b.global_shape; },
          [](const ObjectSpec& s) { return DimsToString(s.global_shape); }, out)) {
    return;
  }
  const Dims& shape = entries[0].spec->global_shape;
  const int64_t total = Volume(shape);
  std::vector<CellEntry> shards;
  shards.reserve(entries.size());
  for (const ObjectRef& e : entries) {
    shards.push_back(CellEntry{LinearIndex(e.spec->global_offset, shape), e.rank,
                               IsMainReplica(e.spec->replica_id)});
  }
  std::sort(shards.begin(), shards.end(), [](const CellEntry& a, const CellEntry& b) {
    if (a.cell != b.cell) return a.cell < b.cell;
    if (a.main != b.main) return a.main;
    return a.rank < b.rank;
  });
  auto unique_key = [&](int64_t index) {
    ObjectSpec s;
    s.key = std::string(key);
    s.global_shape = shape;
    s.global_offset = Unravel(index, shape);
    return s;
  };
  std::vector<int64_t> covered;
  int64_t duplicates = 0;
  for (size_t i = 0; i < shards.size();) {
    size_t j = i;
    int64_t mains = 0;
    while (j < shards.size() && shards[j].cell == shards[i].cell) mains += shards[j++].main ? 1 : 0;
    if (mains > 0) covered.push_back(shards[i].cell);
    if (mains > 1 && duplicates++ < kMaxReportsPerKey) {
      std::vector<int64_t> ranks;
      for (size_t k = i; k < i + mains; ++k) ranks.push_back(shards[k].rank);
      SortUnique(&ranks);
      const ObjectSpec s = unique_key(shards[i].cell);
      out->push_back(MakeViolation(
          kP4, ViolationKind::kDuplicateMain, key, ObjectShardBox(s), ranks,
          "Duplicate ShardedObject key " + Quoted(s.UniqueKey()) + ": " + std::to_string(mains) +
              " main replicas on " + RanksToString(ranks) + "; exactly one must be main"));
    }
    i = j;
  }
  if (duplicates > kMaxReportsPerKey) {
    out->push_back(MakeViolation(kP4, ViolationKind::kDuplicateMain, key, std::nullopt, {},
                                 "ShardedObject " + Quoted(key) + ": " +
                                     std::to_string(duplicates - kMaxReportsPerKey) +
                                     " more shards have several main replicas"));
  }
  const int64_t missing = total - static_cast<int64_t>(covered.size());
  if (missing <= 0) return;
  int64_t listed = 0;
  size_t p = 0, q = 0;
  for (int64_t c = 0; c < total && listed < kMaxReportsPerKey; ++c) {
    if (p < covered.size() && covered[p] == c) {
      ++p;
      continue;
    }
    while (q < shards.size() && shards[q].cell < c) ++q;
    std::vector<int64_t> holders;
    while (q < shards.size() && shards[q].cell == c) holders.push_back(shards[q++].rank);
    SortUnique(&holders);
    const ObjectSpec s = unique_key(c);
    out->push_back(
        MakeViolation(kP4, ViolationKind::kMissingObject, key, ObjectShardBox(s), holders,
                      "ShardedObject " + Quoted(s.UniqueKey()) + " (offset " +
                          DimsToString(s.global_offset) + " of global shape " +
                          DimsToString(shape) + ") has no main replica; " + HeldBy(holders)));
    ++listed;
  }
  if (missing > listed) {
    out->push_back(MakeViolation(kP4, ViolationKind::kMissingObject, key, std::nullopt, {},
                                 "ShardedObject " + Quoted(key) + ": " + std::to_string(missing) +
                                     " of " + std::to_string(total) + " shards are missing (" +
                                     std::to_string(missing - listed) + " not listed)"));
  }
}

}  // namespace

std::vector<Violation> CheckChunkTiling(std::string_view key, const Dims& global_shape,
                                        const std::vector<WrittenChunk>& chunks) {
  std::vector<TensorSpec> specs(chunks.size());  // keys left empty: the violations name `key`
  std::vector<TensorRef> entries(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) {
    specs[c].global_shape = global_shape;
    specs[c].global_offset = chunks[c].box.offset;
    specs[c].local_shape = chunks[c].box.shape;
    entries[c] = TensorRef{&specs[c], chunks[c].rank};
  }
  // In rank order, then in the index's order, as GroupTensorsByKey would give them.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const TensorRef& a, const TensorRef& b) { return a.rank < b.rank; });
  std::vector<Violation> out;
  if (!entries.empty()) CheckIrregularCoverage(key, entries, &out);
  return out;
}

std::vector<Violation> CheckShardingIntegrity(const GlobalSignature& signature) {
  std::vector<Violation> out;
  for (const auto& group : GroupTensorsByKey(signature))
    CheckTensorKey(group.key, group.entries, &out);
  for (const auto& group : GroupObjectsByKey(signature))
    CheckObjectKey(group.key, group.entries, &out);
  return out;
}

}  // namespace ckptspec
