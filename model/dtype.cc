#include "model/dtype.h"

namespace ckptspec {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "fp32";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat16:
      return "fp16";
    case DType::kFloat8E4M3:
      return "fp8_e4m3";
    case DType::kFloat8E5M2:
      return "fp8_e5m2";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "unknown";
}

bool ParseDType(std::string_view name, DType* out) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"fp32", DType::kFloat32},        {"float32", DType::kFloat32},
      {"bf16", DType::kBFloat16},       {"bfloat16", DType::kBFloat16},
      {"fp16", DType::kFloat16},        {"float16", DType::kFloat16},
      {"fp8_e4m3", DType::kFloat8E4M3}, {"float8_e4m3fn", DType::kFloat8E4M3},
      {"fp8_e5m2", DType::kFloat8E5M2}, {"float8_e5m2", DType::kFloat8E5M2},
      {"int32", DType::kInt32},         {"int64", DType::kInt64},
  };
  for (const Alias& alias : kAliases) {
    if (alias.name == name) {
      *out = alias.dtype;
      return true;
    }
  }
  return false;
}

}  // namespace ckptspec
