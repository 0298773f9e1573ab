// Element types of checkpointed tensors.
//
// Floating types follow PyTorch: fp32 (IEEE binary32), bf16, fp16 (IEEE binary16), fp8 e4m3
// (torch.float8_e4m3fn: no infinities, one NaN pattern per sign, max 448) and fp8 e5m2
// (torch.float8_e5m2: IEEE-like with infinities). The narrow-float codecs live in float_codec.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/host_device.h"

namespace ckptspec {

enum class DType : uint8_t {
  kFloat32 = 0,
  kBFloat16 = 1,
  kFloat16 = 2,
  kFloat8E4M3 = 3,
  kFloat8E5M2 = 4,
  kInt32 = 5,
  kInt64 = 6,
};

inline constexpr int kNumDTypes = 7;
inline constexpr DType kAllDTypes[kNumDTypes] = {
    DType::kFloat32,    DType::kBFloat16, DType::kFloat16, DType::kFloat8E4M3,
    DType::kFloat8E5M2, DType::kInt32,    DType::kInt64};

// Bytes per element.
CKPTSPEC_HD constexpr int DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kBFloat16:
      return 2;
    case DType::kFloat16:
      return 2;
    case DType::kFloat8E4M3:
      return 1;
    case DType::kFloat8E5M2:
      return 1;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
  }
  return 0;
}

CKPTSPEC_HD constexpr bool IsFloatingDType(DType dtype) {
  return dtype != DType::kInt32 && dtype != DType::kInt64;
}

// Canonical short names: "fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int32", "int64".
const char* DTypeName(DType dtype);

// Parses a canonical name (or the PyTorch spelling: "float32", "bfloat16", "float16",
// "float8_e4m3fn", "float8_e5m2"). Returns false for anything else.
bool ParseDType(std::string_view name, DType* out);

}  // namespace ckptspec
