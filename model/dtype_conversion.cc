#include "model/dtype_conversion.h"

#include <cmath>
#include <string>

#include "model/float_codec.h"
#include "model/number_text.h"

namespace ckptspec {

namespace {

// What decides whether a floating format holds every value of another: its significand bits
// after the leading one, the exponent of its smallest subnormal, and its largest finite value.
struct FloatRange {
  int mantissa_bits;
  int smallest_subnormal_exponent;
  double largest_finite;
};

FloatRange RangeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return {23, -149, 3.4028234663852886e38};
    case DType::kBFloat16:
      return {7, -133, 3.3895313892515355e38};
    case DType::kFloat16:
      return {10, -24, 65504.0};
    case DType::kFloat8E4M3:
      return {3, -9, 448.0};
    case DType::kFloat8E5M2:
      return {2, -16, 57344.0};
    case DType::kInt32:
    case DType::kInt64:
      break;
  }
  return {0, 0, 0.0};
}

}  // namespace

Status CheckConversion(DType from, DType to) {
  if (from == to || (IsFloatingDType(from) && IsFloatingDType(to))) return Status::OK();
  return Status::InvalidArgument(std::string("no conversion from ") + DTypeName(from) + " to " +
                                 DTypeName(to) +
                                 ": a load converts between floating dtypes only (an integer "
                                 "element has no floating reading to round into, and the reverse "
                                 "would truncate)");
}

bool ConversionIsExact(DType from, DType to) {
  if (from == to) return true;
  const FloatRange a = RangeOf(from), b = RangeOf(to);
  return b.mantissa_bits >= a.mantissa_bits &&
         b.smallest_subnormal_exponent <= a.smallest_subnormal_exponent &&
         b.largest_finite >= a.largest_finite;
}

Status ConvertElement(DType from, DType to, uint64_t bits, uint64_t* out) {
  if (from == to) {
    *out = bits;
    return Status::OK();
  }
  CKPTSPEC_RETURN_IF_ERROR(CheckConversion(from, to));
  const double value = DecodeToDouble(from, bits);
  // Exact: every value of a floating dtype here is an fp32 value.
  const uint64_t converted = EncodeFloat(to, static_cast<float>(value));
  if (std::isfinite(value) && !std::isfinite(DecodeToDouble(to, converted))) {
    return Status::InvalidArgument(
        "the value " + ExactDecimal(value) + " does not fit " + DTypeName(to) +
        " (largest finite " + ExactDecimal(RangeOf(to).largest_finite) + "): converting " +
        DTypeName(from) + " to " + DTypeName(to) + " would make it infinite");
  }
  *out = converted;
  return Status::OK();
}

Status ConvertElements(DType from, DType to, const uint8_t* src, uint64_t count,
                       uint64_t first_index, uint8_t* dst) {
  const int in = DTypeSize(from), out = DTypeSize(to);
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t bits = 0;
    for (int b = 0; b < in; ++b) bits |= static_cast<uint64_t>(src[k * in + b]) << (8 * b);
    uint64_t converted = 0;
    const Status s = ConvertElement(from, to, bits, &converted);
    if (!s.ok()) return s.WithContext("element " + std::to_string(first_index + k));
    for (int b = 0; b < out; ++b) dst[k * out + b] = static_cast<uint8_t>(converted >> (8 * b));
  }
  return Status::OK();
}

}  // namespace ckptspec
