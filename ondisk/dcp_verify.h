// `ckptspec verify` on a PyTorch DCP or Megatron torch_dist directory.
//
// Always: .metadata is read with the safe pickle reader (formats/pickle_reader.h) and checked
// (formats/dcp_checks.h: tiling, storage entries, file extents); for torch_dist, metadata.json is
// read (backend and version named) and common.pt's top-level keys are listed (its pickle read in
// permissive mode: unknown classes are kept as data, nothing runs); megatron-core from 0.17 on
// writes no common.pt but keeps the common state as a bytes item "common_state/...", whose keys
// are listed instead.
// With `data`: every tensor item's bytes are read: the torch.save archive at its extent parses
// (formats/torch_tensor_item.h), holds the chunk's dtype and shape, and every CRC-32 matches; every
// bytes item's archive opens and its CRCs match. With `checksums` (implies data): the
// layout-independent checksum of each tensor (ondisk/global_checksum.h) is reported.
// Untrusted input (docs/SECURITY.md): every file is read through a confined view of `env`;
// .metadata and common.pt beyond max_metadata_bytes are refused before they are read; data is
// streamed in blocks: memory is the index plus one block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/dcp_checks.h"
#include "ondisk/checkpoint_kind.h"
#include "base/env.h"
#include "base/resource_limits.h"

namespace ckptspec {

struct DcpVerifyOptions {
  bool data = false;
  bool checksums = false;
  ResourceLimits limits;
};

struct TensorChecksum {
  std::string fqn;
  std::string dtype;
  Dims shape;
  uint64_t checksum = 0;
};

struct DcpVerifyReport {
  CheckpointKind kind = CheckpointKind::kDcp;
  std::string dir;                           // the directory holding .metadata
  std::string dcp_version;                   // Metadata.version
  std::vector<std::string> metadata_extras;  // attributes beyond DCP's (Megatron's)
  // torch_dist only.
  std::string sharded_backend, common_backend;
  int64_t sharded_backend_version = -1, common_backend_version = -1;
  std::string common_source;  // "common.pt", or "bytes item 'common_state/shard_0_1'"
  std::vector<std::string> common_keys;
  DcpIndexReport index;  // counts, and the index's findings
  // With data.
  int64_t items_read = 0;
  uint64_t bytes_read = 0;
  std::vector<std::string> data_findings;
  std::vector<TensorChecksum> checksums;  // with checksums, in .metadata's order

  bool ok() const { return index.ok() && data_findings.empty(); }
};

// Errors only for what stops the check (the directory or .metadata unreadable, .metadata beyond
// the limits or not DCP's Metadata); everything wrong with the checkpoint is a finding.
Status VerifyDcpCheckpoint(Env* env, const DetectedCheckpoint& detected,
                           const DcpVerifyOptions& options, DcpVerifyReport* report);

// The JSON form of a report (`ckptspec verify --json`).
std::string DcpVerifyReportJson(const DcpVerifyReport& report);

}  // namespace ckptspec
