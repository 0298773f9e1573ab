// Fuzzes the reference format's metadata parser (docs/FORMAT.md): any bytes give a Status, never
// a crash, a hang or an unbounded allocation; whatever parses re-encodes to text that parses to
// the same metadata (the encoder and decoder agree). The text goes through the project's JSON
// reader (model/json_util.h) with its limits: nesting deeper than kDefaultMaxJsonDepth, a key
// twice and numbers that do not fit are refused (seeds deep_common, tensors_twice,
// chunk_member_twice, number_overflow).
#include <string>

#include "fuzz/fuzz_target.h"
#include "targets/reference/format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckpointMetadata metadata;
  if (!DecodeMetadata(text, "iter_0000001/metadata.json", &metadata).ok()) return 0;
  const std::string encoded = EncodeMetadata(metadata);
  CheckpointMetadata again;
  CKPTSPEC_FUZZ_CHECK(DecodeMetadata(encoded, "re-encoded", &again).ok(),
                      "re-encoded metadata does not parse");
  CKPTSPEC_FUZZ_CHECK(EncodeMetadata(again) == encoded, "metadata does not round-trip");
  int64_t iteration;
  // The fuzzer checks that reading ends without a crash or UB; any verdict is a valid outcome.
  DecodeTracker(text, "latest_checkpointed_iteration.txt", &iteration).IgnoreError();
  return 0;
}
