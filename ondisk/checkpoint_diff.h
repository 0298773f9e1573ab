// `ckptspec diff A B`: are two checkpoints the same model? Tensor by tensor in global coordinates,
// whatever layout (and format) each was saved under: the same keys, dtypes and shapes, and the
// same values -- bitwise by default, or under the device checks' ULP or tolerance semantics
// (device/ckptspec_device.h), computed by their CPU twin. Non-tensor items (DCP bytes items,
// reference objects) are compared by content.
//
// Values are compared over the intersections of A's chunks with B's: each element both hold is
// compared once; elements one side does not hold (a tiling with holes: `ckptspec verify` reports
// it) are counted as not compared. Memory: one chunk of A plus B's chunks that meet it, with B's
// chunks kept in a cache of at most DiffOptions::cache_bytes. Time: the sweep that finds the
// chunks that meet, the elements compared, and reads bounded by DiffOptions::limits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/ckptspec_device.h"
#include "model/box.h"
#include "ondisk/checkpoint_contents.h"

namespace ckptspec {

struct DiffOptions {
  int32_t mode = CKPTSPEC_COMPARE_BITWISE;
  double rtol = -1;  // TOLERANCE mode; negative: torch's default for the dtype
  double atol = -1;
  uint64_t max_ulp = 0;  // ULP mode
  bool equal_nan = false;
  uint64_t cache_bytes = uint64_t{256} << 20;
  // The bytes read (A's chunks once each, B's again when the cache dropped them) may be at most
  // limits.max_read_ratio times what both checkpoints occupy on disk; beyond, the diff stops with
  // the limit named.
  ResourceLimits limits;
};

struct TensorDiff {
  std::string key;
  std::string problem;      // a dtype or shape difference, or a read error: values not compared
  uint64_t elements = 0;    // of the tensor
  uint64_t compared = 0;    // elements both sides hold
  uint64_t mismatches = 0;  // of `compared`
  uint64_t nan_mismatches = 0, inf_mismatches = 0, signed_zero_mismatches = 0;
  Dims first_mismatch;           // global coordinates; empty when none
  std::string first_a, first_b;  // the values there, as text
  double max_abs_error = 0;
  double max_rel_error = 0;
  bool bitwise_only = false;  // the dtype has no tolerance semantics: compared bitwise
  bool same() const { return problem.empty() && mismatches == 0 && compared == elements; }
};

struct DiffReport {
  std::string a_format, b_format;
  std::vector<std::string> only_in_a, only_in_b;  // tensor keys
  std::vector<TensorDiff> tensors;                // every key both hold, in A's order
  std::vector<std::string> blobs_only_in_a, blobs_only_in_b, blobs_differing;
  int64_t blobs_same = 0;
  bool same() const;
};

Status DiffCheckpoints(const CheckpointContents& a, const CheckpointContents& b,
                       const DiffOptions& options, DiffReport* report);

// Human and JSON forms.
std::string FormatDiffReport(const DiffReport& report);
std::string DiffReportJson(const DiffReport& report);

}  // namespace ckptspec
