// PropertyOutcome as bytes: how a worker process of `ckptspec run --jobs` (cli/worker_pool.h) hands
// its outcome to the ckptspec process. A JSON object of every field; numbers round-trip exactly.
#pragma once

#include <string>

#include "model/status.h"
#include "runner/runner.h"

namespace ckptspec {

std::string EncodeOutcome(const PropertyOutcome& outcome);
// Corruption naming the field's path from "worker outcome" (model/json_fields.h) when `bytes`
// is not an encoded outcome: "worker outcome.verdict: expected an integer in [0, 4], got 9".
Status DecodeOutcome(const std::string& bytes, PropertyOutcome* outcome);

}  // namespace ckptspec
