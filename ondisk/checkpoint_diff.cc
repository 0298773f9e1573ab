#include "ondisk/checkpoint_diff.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "device/compare_host.h"
#include "device/compare_setup.h"
#include "formats/quoted_name.h"
#include "model/box_overlap.h"
#include "model/float_codec.h"

namespace ckptspec {
namespace {

// The sub-box `part` of a chunk `box` held row-major in `data`, copied out row-major.
std::string Extract(const std::string& data, const Box& box, const Box& part, size_t element) {
  int64_t volume = 0;
  if (!CheckedVolume(part.shape, &volume)) return {};
  std::string out(static_cast<size_t>(volume) * element, '\0');
  if (volume == 0) return out;
  const size_t rank = part.shape.size();
  const size_t row = rank == 0 ? element : static_cast<size_t>(part.shape.back()) * element;
  Dims coord(rank, 0);  // within `part`
  for (size_t done = 0; done < out.size(); done += row) {
    Dims local(rank);
    for (size_t i = 0; i < rank; ++i) local[i] = part.offset[i] - box.offset[i] + coord[i];
    const size_t from = static_cast<size_t>(LinearIndex(local, box.shape)) * element;
    std::memcpy(&out[done], &data[from], row);
    for (size_t axis = rank > 0 ? rank - 1 : 0; axis-- > 0;) {
      if (++coord[axis] < part.shape[axis]) break;
      coord[axis] = 0;
    }
  }
  return out;
}

uint64_t ElementBits(const std::string& data, uint64_t index, size_t element) {
  uint64_t bits = 0;
  std::memcpy(&bits, &data[index * element], std::min<size_t>(element, 8));
  return bits;
}

std::string ValueText(const TorchDType& dtype, uint64_t bits) {
  char text[64];
  if (dtype.ckptspec_dtype.has_value() && IsFloatingDType(*dtype.ckptspec_dtype)) {
    std::snprintf(text, sizeof(text), "%.9g", DecodeToDouble(*dtype.ckptspec_dtype, bits));
  } else if (dtype.ckptspec_dtype.has_value()) {
    const int64_t v = dtype.element_bytes == 4 ? static_cast<int32_t>(static_cast<uint32_t>(bits))
                                               : static_cast<int64_t>(bits);
    std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(text, sizeof(text), "0x%0*llx",
                  static_cast<int>(2 * std::min<size_t>(dtype.element_bytes, 8)),
                  static_cast<unsigned long long>(bits));
  }
  return text;
}

Dims Unravel(uint64_t index, const Dims& shape) {
  Dims coord(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    coord[i] = shape[i] == 0 ? 0 : static_cast<int64_t>(index % static_cast<uint64_t>(shape[i]));
    if (shape[i] != 0) index /= static_cast<uint64_t>(shape[i]);
  }
  return coord;
}

// For each chunk of A (by index), the chunks of B that meet it, ascending; found by one sweep over
// both sides' chunks (model/box_overlap.h), so sub-quadratic in the number of chunks. A's chunks
// are disjoint and so are B's (else an error: an element would be compared more than once), so
// the pairs are at most the tensor's elements. Every chunk must have the tensor's axes and lie
// inside it (the readers validated it; checked again here, as the comparison indexes by it).
Status MeetingChunks(const StoredTensor& ta, const StoredTensor& tb,
                     std::vector<std::vector<size_t>>* partners) {
  const size_t rank = ta.shape.size();
  const StoredTensor* sides[2] = {&ta, &tb};
  for (int side = 0; side < 2; ++side) {
    for (const StoredChunk& c : sides[side]->chunks) {
      if (c.box.offset.size() != rank || c.box.shape.size() != rank || !IsWithin(c.box, ta.shape)) {
        return Status::Corruption(std::string(side == 0 ? "A" : "B") + ": chunk " +
                                  BoxToString(c.box) + " does not lie inside the tensor's shape " +
                                  DimsToString(ta.shape));
      }
    }
  }
  // Non-empty chunks of both sides as boxes (a scalar as the box [0, 1) of one axis).
  BoxBounds all;
  all.rank = std::max<size_t>(rank, 1);
  std::vector<size_t> ids;  // A's chunk c is c, B's chunk j is ta.chunks.size() + j
  const int64_t scalar_lo = 0, scalar_hi = 1;
  for (int side = 0; side < 2; ++side) {
    const auto& chunks = sides[side]->chunks;
    for (size_t c = 0; c < chunks.size(); ++c) {
      int64_t volume = 0;
      if (!CheckedVolume(chunks[c].box.shape, &volume) || volume == 0) continue;
      Dims hi = chunks[c].box.offset;
      for (size_t axis = 0; axis < rank; ++axis) hi[axis] += chunks[c].box.shape[axis];
      if (rank == 0) {
        all.Add(&scalar_lo, &scalar_hi);
      } else {
        all.Add(chunks[c].box.offset.data(), hi.data());
      }
      ids.push_back(side == 0 ? c : ta.chunks.size() + c);
    }
  }
  partners->assign(ta.chunks.size(), {});
  if (ids.empty()) return Status::OK();
  const SweepAxes axes = ChooseSweepAxes(all);
  std::vector<size_t> order;
  const BoxBounds sorted = SortedAlong(all, axes.sweep, &order);
  Status overlap;
  ForEachOverlap(sorted, axes, [&](size_t k, size_t i) {
    size_t x = ids[order[k]], y = ids[order[i]];
    if (x > y) std::swap(x, y);
    const size_t na = ta.chunks.size();
    if (y < na || x >= na) {
      const bool in_a = y < na;
      const StoredTensor& t = in_a ? ta : tb;
      const size_t first = in_a ? x : x - na, second = in_a ? y : y - na;
      overlap = Status::Corruption(
          std::string(in_a ? "A" : "B") + ": chunks " + BoxToString(t.chunks[first].box) + " and " +
          BoxToString(t.chunks[second].box) + " overlap (ckptspec verify reports it)");
      return false;
    }
    (*partners)[x].push_back(y - na);
    return true;
  });
  if (!overlap.ok()) return overlap;
  for (std::vector<size_t>& p : *partners) std::sort(p.begin(), p.end());
  return Status::OK();
}

class TensorDiffer {
 public:
  TensorDiffer(const CheckpointContents& a, const CheckpointContents& b, const DiffOptions& options)
      : a_(a), b_(b), options_(options) {}

  // NotSupported naming max_read_ratio once the chunks read exceed it (DiffOptions::limits); a
  // Run that exceeds it stops there.
  const Status& budget() const { return budget_; }

  TensorDiff Run(const StoredTensor& ta, const StoredTensor& tb) {
    TensorDiff d;
    d.key = ta.key;
    if (ta.dtype != tb.dtype) {
      d.problem = std::string("dtype ") + ta.dtype->name + " in A, " + tb.dtype->name + " in B";
      return d;
    }
    if (ta.shape != tb.shape) {
      d.problem = "shape " + DimsToString(ta.shape) + " in A, " + DimsToString(tb.shape) + " in B";
      return d;
    }
    int64_t elements = 0;
    CheckedVolume(ta.shape, &elements);
    d.elements = static_cast<uint64_t>(elements);
    const bool device_semantics =
        ta.dtype->ckptspec_dtype.has_value() && ta.shape.size() <= CKPTSPEC_DEVICE_MAX_RANK;
    d.bitwise_only = !device_semantics && options_.mode != CKPTSPEC_COMPARE_BITWISE;
    first_global_ = UINT64_MAX;
    cache_.clear();
    cached_bytes_ = 0;
    std::vector<std::vector<size_t>> partners;
    if (const Status s = MeetingChunks(ta, tb, &partners); !s.ok()) {
      d.problem = s.message();
      return d;
    }
    std::string a_bytes;
    for (size_t i = 0; i < ta.chunks.size(); ++i) {
      if (partners[i].empty()) continue;
      const StoredChunk& ca = ta.chunks[i];
      Status s = Charge(ca);
      if (s.ok()) s = a_.ReadChunk(ta, ca, &a_bytes);
      for (size_t p = 0; s.ok() && p < partners[i].size(); ++p) {
        const size_t j = partners[i][p];
        Box part;
        if (!Intersect(ca.box, tb.chunks[j].box, &part)) continue;
        const std::string* b_bytes = nullptr;
        s = BChunk(tb, j, &b_bytes);
        if (!s.ok()) break;
        const std::string x = Extract(a_bytes, ca.box, part, ta.dtype->element_bytes);
        const std::string y = Extract(*b_bytes, tb.chunks[j].box, part, ta.dtype->element_bytes);
        s = device_semantics ? CompareWithDevice(ta, part, x, y, &d)
                             : CompareBitwise(ta, part, x, y, &d);
      }
      if (!budget_.ok()) return d;
      if (!s.ok()) {
        d.problem = s.message();
        return d;
      }
    }
    return d;
  }

 private:
  Status BChunk(const StoredTensor& tb, size_t j, const std::string** out) {
    auto it = cache_.find(j);
    if (it == cache_.end()) {
      std::string bytes;
      CKPTSPEC_RETURN_IF_ERROR(Charge(tb.chunks[j]));
      CKPTSPEC_RETURN_IF_ERROR(b_.ReadChunk(tb, tb.chunks[j], &bytes));
      if (cached_bytes_ + bytes.size() > options_.cache_bytes) {
        cache_.clear();
        cached_bytes_ = 0;
      }
      cached_bytes_ += bytes.size();
      it = cache_.emplace(j, std::move(bytes)).first;
    }
    *out = &it->second;
    return Status::OK();
  }

  // Counts a read of `chunk`'s bytes against the budget.
  Status Charge(const StoredChunk& chunk) {
    const unsigned __int128 allowed =
        static_cast<unsigned __int128>(options_.limits.max_read_ratio) *
        std::max<uint64_t>(a_.stored_bytes() + b_.stored_bytes(), 1);
    read_ += chunk.bytes.length;
    if (read_ > allowed && budget_.ok()) {
      budget_ =
          LimitExceeded("comparing A (" + std::to_string(a_.stored_bytes()) +
                            " bytes on disk) with B (" + std::to_string(b_.stored_bytes()) + ")",
                        static_cast<uint64_t>(read_), "bytes read", &ResourceLimits::max_read_ratio,
                        options_.limits);
    }
    return budget_;
  }

  void NoteFirst(const StoredTensor& t, const Dims& coord, uint64_t a_bits, uint64_t b_bits,
                 TensorDiff* d) {
    const uint64_t global = static_cast<uint64_t>(LinearIndex(coord, t.shape));
    if (global >= first_global_) return;
    first_global_ = global;
    d->first_mismatch = coord;
    d->first_a = ValueText(*t.dtype, a_bits);
    d->first_b = ValueText(*t.dtype, b_bits);
  }

  Status CompareWithDevice(const StoredTensor& t, const Box& part, const std::string& x,
                           const std::string& y, TensorDiff* d) {
    ckptspec_compare_options o = {};
    o.dtype = static_cast<int32_t>(*t.dtype->ckptspec_dtype);
    device::DefaultTolerances(*t.dtype->ckptspec_dtype, &o.rtol, &o.atol);
    o.mode = options_.mode;
    o.max_ulp = options_.max_ulp;
    o.equal_nan = options_.equal_nan ? 1 : 0;
    if (options_.rtol >= 0) o.rtol = options_.rtol;
    if (options_.atol >= 0) o.atol = options_.atol;
    ckptspec_shard_geometry g = {};
    g.rank = static_cast<int32_t>(part.shape.size());
    for (size_t i = 0; i < part.shape.size(); ++i) {
      g.global_shape[i] = t.shape[i];
      g.offset[i] = part.offset[i];
      g.local_shape[i] = part.shape[i];
    }
    ckptspec_compare_report r;
    CKPTSPEC_RETURN_IF_ERROR(device::CompareHostBuffers(y.data(), x.data(), g, o, &r));
    d->compared += r.element_count;
    d->mismatches += r.mismatch_count;
    d->nan_mismatches += r.nan_mismatches;
    d->inf_mismatches += r.inf_mismatches;
    d->signed_zero_mismatches += r.signed_zero_mismatches;
    d->max_abs_error = std::max(d->max_abs_error, r.max_abs_error);
    d->max_rel_error = std::max(d->max_rel_error, r.max_rel_error);
    if (r.first_mismatch_index >= 0) {
      const Dims coord(r.first_mismatch_coord, r.first_mismatch_coord + r.rank);
      const size_t e = t.dtype->element_bytes;
      const uint64_t i = static_cast<uint64_t>(r.first_mismatch_index);
      NoteFirst(t, coord, ElementBits(x, i, e), ElementBits(y, i, e), d);
    }
    return Status::OK();
  }

  Status CompareBitwise(const StoredTensor& t, const Box& part, const std::string& x,
                        const std::string& y, TensorDiff* d) {
    const size_t e = t.dtype->element_bytes;
    const uint64_t n = x.size() / e;
    d->compared += n;
    bool noted = false;  // the part's first mismatch is its lowest global index
    for (uint64_t i = 0; i < n; ++i) {
      if (std::memcmp(&x[i * e], &y[i * e], e) == 0) continue;
      ++d->mismatches;
      if (noted) continue;
      noted = true;
      Dims coord = Unravel(i, part.shape);
      for (size_t k = 0; k < coord.size(); ++k) coord[k] += part.offset[k];
      NoteFirst(t, coord, ElementBits(x, i, e), ElementBits(y, i, e), d);
    }
    return Status::OK();
  }

  const CheckpointContents& a_;
  const CheckpointContents& b_;
  const DiffOptions& options_;
  uint64_t first_global_ = UINT64_MAX;
  std::unordered_map<size_t, std::string> cache_;
  uint64_t cached_bytes_ = 0;
  unsigned __int128 read_ = 0;  // the chunks' bytes read so far, every tensor
  Status budget_;
};

}  // namespace

bool DiffReport::same() const {
  if (!only_in_a.empty() || !only_in_b.empty() || !blobs_only_in_a.empty() ||
      !blobs_only_in_b.empty() || !blobs_differing.empty()) {
    return false;
  }
  for (const TensorDiff& t : tensors) {
    if (!t.same()) return false;
  }
  return true;
}

Status DiffCheckpoints(const CheckpointContents& a, const CheckpointContents& b,
                       const DiffOptions& options, DiffReport* report) {
  *report = DiffReport();
  report->a_format = CheckpointKindName(a.kind());
  report->b_format = CheckpointKindName(b.kind());
  std::unordered_map<std::string_view, size_t> b_tensors, b_blobs;
  for (size_t i = 0; i < b.tensors().size(); ++i) b_tensors.emplace(b.tensors()[i].key, i);
  for (size_t i = 0; i < b.blobs().size(); ++i) b_blobs.emplace(b.blobs()[i].key, i);
  TensorDiffer differ(a, b, options);
  std::unordered_map<std::string_view, bool> in_a;
  for (const StoredTensor& t : a.tensors()) {
    in_a[t.key] = true;
    const auto it = b_tensors.find(t.key);
    if (it == b_tensors.end()) {
      report->only_in_a.push_back(t.key);
      continue;
    }
    try {
      report->tensors.push_back(differ.Run(t, b.tensors()[it->second]));
    } catch (const std::bad_alloc&) {
      return Status::OutOfMemory("comparing tensor " + QuotedName(t.key) + ": out of memory");
    }
    if (!differ.budget().ok()) return differ.budget();
  }
  for (const StoredTensor& t : b.tensors()) {
    if (in_a.count(t.key) == 0) report->only_in_b.push_back(t.key);
  }
  std::unordered_map<std::string_view, bool> blob_in_a;
  for (const StoredBlob& blob : a.blobs()) {
    blob_in_a[blob.key] = true;
    const auto it = b_blobs.find(blob.key);
    if (it == b_blobs.end()) {
      report->blobs_only_in_a.push_back(blob.key);
      continue;
    }
    std::string x, y;
    const Status sa = a.ReadBlob(blob, &x);
    const Status sb = b.ReadBlob(b.blobs()[it->second], &y);
    if (!sa.ok() || !sb.ok() || x != y) {
      report->blobs_differing.push_back(blob.key + (sa.ok() ? "" : " (A: " + sa.message() + ")") +
                                        (sb.ok() ? "" : " (B: " + sb.message() + ")"));
    } else {
      ++report->blobs_same;
    }
  }
  for (const StoredBlob& blob : b.blobs()) {
    if (blob_in_a.count(blob.key) == 0) report->blobs_only_in_b.push_back(blob.key);
  }
  return Status::OK();
}

std::string FormatDiffReport(const DiffReport& r) {
  std::string out = "A: " + r.a_format + ", B: " + r.b_format + "\n";
  for (const std::string& k : r.only_in_a) out += "  tensor " + QuotedName(k) + ": only in A\n";
  for (const std::string& k : r.only_in_b) out += "  tensor " + QuotedName(k) + ": only in B\n";
  int64_t same = 0;
  for (const TensorDiff& t : r.tensors) {
    if (t.same()) {
      ++same;
      continue;
    }
    out += "  tensor " + QuotedName(t.key) + ": ";
    if (!t.problem.empty()) {
      out += t.problem + "\n";
      continue;
    }
    if (t.mismatches > 0) {
      out +=
          std::to_string(t.mismatches) + " of " + std::to_string(t.compared) + " elements differ";
      if (t.nan_mismatches + t.inf_mismatches + t.signed_zero_mismatches > 0) {
        out += " (NaN " + std::to_string(t.nan_mismatches) + ", inf " +
               std::to_string(t.inf_mismatches) + ", signed zero " +
               std::to_string(t.signed_zero_mismatches) + ")";
      }
      out += "; first at " + DimsToString(t.first_mismatch) + ": " + t.first_a + " in A, " +
             t.first_b + " in B";
      char errors[96];
      std::snprintf(errors, sizeof(errors), "; max abs error %.6g, max rel error %.6g",
                    t.max_abs_error, t.max_rel_error);
      out += errors;
    }
    if (t.compared < t.elements) {
      out += (t.mismatches > 0 ? "; " : "") + std::to_string(t.elements - t.compared) + " of " +
             std::to_string(t.elements) + " elements not held by both";
    }
    if (t.bitwise_only) out += " (compared bitwise: its dtype has no tolerance semantics)";
    out += "\n";
  }
  for (const std::string& k : r.blobs_only_in_a) out += "  item " + QuotedName(k) + ": only in A\n";
  for (const std::string& k : r.blobs_only_in_b) out += "  item " + QuotedName(k) + ": only in B\n";
  for (const std::string& k : r.blobs_differing) out += "  item " + QuotedName(k) + ": differs\n";
  out += std::to_string(same) + " of " + std::to_string(r.tensors.size()) +
         " common tensors equal, " + std::to_string(r.blobs_same) + " of " +
         std::to_string(r.blobs_same + static_cast<int64_t>(r.blobs_differing.size())) +
         " common items equal\n";
  out += r.same() ? "SAME\n" : "DIFFERENT\n";
  return out;
}

std::string DiffReportJson(const DiffReport& r) {
  nlohmann::json j;
  j["a_format"] = r.a_format;
  j["b_format"] = r.b_format;
  j["only_in_a"] = r.only_in_a;
  j["only_in_b"] = r.only_in_b;
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorDiff& t : r.tensors) {
    nlohmann::json x = {{"key", t.key},
                        {"same", t.same()},
                        {"elements", t.elements},
                        {"compared", t.compared},
                        {"mismatches", t.mismatches}};
    if (!t.problem.empty()) x["problem"] = t.problem;
    if (t.mismatches > 0) {
      x["first_mismatch"] = t.first_mismatch;
      x["first_a"] = t.first_a;
      x["first_b"] = t.first_b;
      x["max_abs_error"] = t.max_abs_error;
      x["max_rel_error"] = t.max_rel_error;
    }
    if (t.bitwise_only) x["bitwise_only"] = true;
    tensors.push_back(x);
  }
  j["tensors"] = tensors;
  j["items_only_in_a"] = r.blobs_only_in_a;
  j["items_only_in_b"] = r.blobs_only_in_b;
  j["items_differing"] = r.blobs_differing;
  j["items_same"] = r.blobs_same;
  j["same"] = r.same();
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace ckptspec
