#include "formats/torch_dtype.h"

#include <iterator>

namespace ckptspec {
namespace {

// Item sizes and flags as torch 2.14 reports them (torch.dtype.itemsize, .is_floating_point,
// .is_complex); sub-byte types (int1..int7, uint1..uint7, float4_e2m1fn_x2) occupy one byte per
// element in storage.
constexpr TorchDType kTorchDTypes[] = {
    {"float32", "float", 4, true, false, "FloatStorage", DType::kFloat32},
    {"float64", "double", 8, true, false, "DoubleStorage", std::nullopt},
    {"float16", "half", 2, true, false, "HalfStorage", DType::kFloat16},
    {"bfloat16", nullptr, 2, true, false, "BFloat16Storage", DType::kBFloat16},
    {"float8_e4m3fn", nullptr, 1, true, false, nullptr, DType::kFloat8E4M3},
    {"float8_e5m2", nullptr, 1, true, false, nullptr, DType::kFloat8E5M2},
    {"float8_e4m3fnuz", nullptr, 1, true, false, nullptr, std::nullopt},
    {"float8_e5m2fnuz", nullptr, 1, true, false, nullptr, std::nullopt},
    {"float8_e8m0fnu", nullptr, 1, true, false, nullptr, std::nullopt},
    {"float4_e2m1fn_x2", nullptr, 1, true, false, nullptr, std::nullopt},
    {"complex32", "chalf", 4, false, true, nullptr, std::nullopt},
    {"complex64", "cfloat", 8, false, true, "ComplexFloatStorage", std::nullopt},
    {"complex128", "cdouble", 16, false, true, "ComplexDoubleStorage", std::nullopt},
    {"bcomplex32", nullptr, 4, false, true, nullptr, std::nullopt},
    {"bool", nullptr, 1, false, false, "BoolStorage", std::nullopt},
    {"uint8", nullptr, 1, false, false, "ByteStorage", std::nullopt},
    {"int8", nullptr, 1, false, false, "CharStorage", std::nullopt},
    {"int16", "short", 2, false, false, "ShortStorage", std::nullopt},
    {"int32", "int", 4, false, false, "IntStorage", DType::kInt32},
    {"int64", "long", 8, false, false, "LongStorage", DType::kInt64},
    {"uint16", nullptr, 2, false, false, nullptr, std::nullopt},
    {"uint32", nullptr, 4, false, false, nullptr, std::nullopt},
    {"uint64", nullptr, 8, false, false, nullptr, std::nullopt},
    {"qint8", nullptr, 1, false, false, "QInt8Storage", std::nullopt},
    {"quint8", nullptr, 1, false, false, "QUInt8Storage", std::nullopt},
    {"qint32", nullptr, 4, false, false, "QInt32Storage", std::nullopt},
    {"quint4x2", nullptr, 1, false, false, "QUInt4x2Storage", std::nullopt},
    {"quint2x4", nullptr, 1, false, false, "QUInt2x4Storage", std::nullopt},
    {"bits8", nullptr, 1, false, false, nullptr, std::nullopt},
    {"bits16", nullptr, 2, false, false, nullptr, std::nullopt},
    {"bits1x8", nullptr, 1, false, false, nullptr, std::nullopt},
    {"bits2x4", nullptr, 1, false, false, nullptr, std::nullopt},
    {"bits4x2", nullptr, 1, false, false, nullptr, std::nullopt},
    {"uint1", "bit", 1, false, false, nullptr, std::nullopt},
    {"uint2", nullptr, 1, false, false, nullptr, std::nullopt},
    {"uint3", nullptr, 1, false, false, nullptr, std::nullopt},
    {"uint4", nullptr, 1, false, false, nullptr, std::nullopt},
    {"uint5", nullptr, 1, false, false, nullptr, std::nullopt},
    {"uint6", nullptr, 1, false, false, nullptr, std::nullopt},
    {"uint7", nullptr, 1, false, false, nullptr, std::nullopt},
    {"int1", nullptr, 1, false, false, nullptr, std::nullopt},
    {"int2", nullptr, 1, false, false, nullptr, std::nullopt},
    {"int3", nullptr, 1, false, false, nullptr, std::nullopt},
    {"int4", nullptr, 1, false, false, nullptr, std::nullopt},
    {"int5", nullptr, 1, false, false, nullptr, std::nullopt},
    {"int6", nullptr, 1, false, false, nullptr, std::nullopt},
    {"int7", nullptr, 1, false, false, nullptr, std::nullopt},
};

}  // namespace

const TorchDType* TorchDTypes(int* count) {
  *count = static_cast<int>(std::size(kTorchDTypes));
  return kTorchDTypes;
}

const TorchDType* FindTorchDType(std::string_view name) {
  for (const TorchDType& d : kTorchDTypes) {
    if (name == d.name || (d.alias != nullptr && name == d.alias)) return &d;
  }
  return nullptr;
}

const TorchDType* FindTorchDTypeByStorageClass(std::string_view storage_class) {
  for (const TorchDType& d : kTorchDTypes) {
    if (d.storage_class != nullptr && storage_class == d.storage_class) return &d;
  }
  return nullptr;
}

}  // namespace ckptspec
