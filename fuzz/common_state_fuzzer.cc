// Fuzzes what a load reads from a checkpoint's common state and objects before trusting it: the
// canonical framework's checkpoint info, a rank's RNG state, the rerun state machine's payload.
// Any bytes give a Status (Corruption naming the field), never a crash.
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_target.h"
#include "model/json_util.h"
#include "model/rerun_state_machine.h"
#include "model/rng_streams.h"
#include "model/state_sharding.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  nlohmann::json j;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!ParseJson(text, JsonLimits(), &j).ok()) return 0;
  CheckpointInfo info;
  // The fuzzer checks that reading ends without a crash or UB; any verdict is a valid outcome.
  ReadCheckpointInfo(j, &info).IgnoreError();
  RankRngState rng;
  if (RankRngStateFromJson(j, &rng).ok()) {
    RankRngState again;
    CKPTSPEC_FUZZ_CHECK(RankRngStateFromJson(RankRngStateToJson(rng), &again).ok() && again == rng,
                        "RNG state does not round-trip");
  }
  RerunLoadContext context;
  RerunStateMachine machine = NewRerunStateMachine(RerunMode::kValidateResults, 0);
  // The fuzzer checks that reading ends without a crash or UB; any verdict is a valid outcome.
  LoadRerunPayload(j, context, &machine).IgnoreError();
  return 0;
}
