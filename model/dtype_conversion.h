// Converting element values from one dtype into another: the one statement of which conversions
// a load may do and how (docs/SEMANTICS.md §4 "Loading under another dtype", load rule L1 of
// load_semantics.h). The load rules use it for the model weights and the optimizer moments, the
// reference engine for a template whose dtype differs from the checkpoint's.
//
// Contracts:
//  - Between floating dtypes (dtype.h) a value is converted through its exact value
//    (DecodeToDouble is exact for every floating dtype, and every such value is an fp32 value) and
//    rounded to nearest, ties to even, in the target (float_codec.h): what PyTorch's Tensor.copy_
//    does when a template's dtype differs (c10's round_to_nearest_even for bf16). The same dtype
//    keeps the bits.
//  - A NaN stays a NaN (the target's canonical quiet NaN with its sign) and an infinity an infinity
//    (fp8 e4m3fn has none: NaN). A FINITE value whose rounding is not finite in the target (an
//    overflow: above 65504 into fp16, above 448 into fp8 e4m3fn) is refused, InvalidArgument
//    naming the value and both dtypes: a load that silently turns a weight into an infinity leaves
//    the run to fail at its first step. Values below the target's smallest subnormal round to a
//    (signed) zero, as rounding does.
//  - No conversion involves an integer dtype (int32, int64) except the identity: integer entries
//    (step counters) have no floating reading a load may round into, and a float read as an integer
//    would be truncated. InvalidArgument naming both dtypes.
#pragma once

#include <cstdint>

#include "model/dtype.h"
#include "model/status.h"

namespace ckptspec {

// OK when a load may convert `from` into `to` (the identity, or two floating dtypes), else
// InvalidArgument naming both.
Status CheckConversion(DType from, DType to);

// Whether every finite value of `from` is a value of `to` (the conversion never rounds): the
// identity, and the widening ones (bf16, fp16 and fp8 into fp32; fp8 into bf16 and fp16).
// Precondition: CheckConversion(from, to).ok().
bool ConversionIsExact(DType from, DType to);

// `bits` (an element of `from`, zero-extended) as an element of `to` (zero-extended), by the rules
// above. Errors: CheckConversion's, and InvalidArgument for a finite value that overflows `to`.
Status ConvertElement(DType from, DType to, uint64_t bits, uint64_t* out);

// `count` elements of `from` at `src` (little-endian, DTypeSize(from) bytes each) as elements of
// `to` at `dst` (DTypeSize(to) bytes each), by ConvertElement. Errors: its, naming the element by
// its index, the first being `first_index` ("element 12: ...").
Status ConvertElements(DType from, DType to, const uint8_t* src, uint64_t count,
                       uint64_t first_index, uint8_t* dst);

}  // namespace ckptspec
