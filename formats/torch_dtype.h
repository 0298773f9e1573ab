// The element types a PyTorch checkpoint may name, as one table: every torch.dtype of PyTorch 2.x
// (fp8 and fp4 variants, complex, quantized, bits and sub-byte integer types included), its
// element size, the typed-storage class torch.save names for it (torch.FloatStorage, ...; newer
// torch writes torch.storage.UntypedStorage plus the dtype instead) and, where one exists, the
// ckptspec DType (model/dtype.h) the device compare understands.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "model/dtype.h"

namespace ckptspec {

struct TorchDType {
  const char* name;           // canonical: "float32", "bfloat16", "float8_e4m3fn" (torch.<name>)
  const char* alias;          // another attribute of torch naming it ("float", "half"), or nullptr
  uint8_t element_bytes;      // torch.dtype.itemsize
  bool is_floating;           // torch.dtype.is_floating_point
  bool is_complex;            // torch.dtype.is_complex
  const char* storage_class;  // "FloatStorage" (torch.<storage_class>), or nullptr
  std::optional<DType> ckptspec_dtype;  // the device compare's type, when it has one
};

// Every entry, in a fixed order; the index of an entry is its stable id in this build.
const TorchDType* TorchDTypes(int* count);

// The entry whose canonical name or alias is `name` ("float32", "float"), or nullptr.
const TorchDType* FindTorchDType(std::string_view name);
// The entry whose storage_class is `storage_class` ("FloatStorage"), or nullptr.
const TorchDType* FindTorchDTypeByStorageClass(std::string_view storage_class);

}  // namespace ckptspec
