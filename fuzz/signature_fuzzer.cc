// Fuzzes the plan-dump parser (docs/SIGNATURE.md) and the validators behind `verify-plan`: any
// bytes give a Status; a parsed signature runs through P4, P5, P11 and a P6 self-diff without a
// crash, the self-diff is empty, and the signature round-trips through its JSON form. The text
// goes through the project's JSON reader (model/json_util.h) with its limits (seeds deep_common,
// ranks_twice, number_overflow).
#include <string>

#include "fuzz/fuzz_target.h"
#include "model/signature_json.h"
#include "model/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  GlobalSignature signature;
  if (!ParseSignature(std::string_view(reinterpret_cast<const char*>(data), size), &signature)
           .ok()) {
    return 0;
  }
  CheckShardingIntegrity(signature);
  CheckKeyInjectivity(signature);
  CheckCommonState(signature);
  CKPTSPEC_FUZZ_CHECK(DiffStructure(signature, signature).empty(),
                      "a signature differs from itself");
  GlobalSignature again;
  CKPTSPEC_FUZZ_CHECK(SignatureFromJson(SignatureToJson(signature), &again).ok(),
                      "a written signature does not parse");
  std::string difference;
  CKPTSPEC_FUZZ_CHECK(SameSignature(signature, again, &difference),
                      "signature does not round-trip");
  return 0;
}
