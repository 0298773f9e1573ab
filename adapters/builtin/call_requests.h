// The requests of one call as rank 0 of the built-in adapter receives them (every rank's line,
// relayed: main.cc), for both its modes (reference_adapter.h, framework_adapter.h).
//
// Contracts: ReplyTo never throws; CheckAgreement and CheckHello return InvalidArgument or
// NotSupported naming the rank and the member, which the caller sends as every rank's error.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/status.h"

namespace ckptspec {

// {"id": the request's id (null when it has none), "rank": rank, "ok": true}.
nlohmann::json ReplyTo(const nlohmann::json& request, int rank);

// Every rank's request is an object with the same string "op" and integer "id"; *op is it.
Status CheckAgreement(const std::vector<nlohmann::json>& requests, std::string* op);

// Every rank's hello asks for this protocol version, names its own rank and `world_size`.
Status CheckHello(const std::vector<nlohmann::json>& requests, int world_size);

// Every reply an error reply of `error` (each keeping its id and rank).
void FailAll(const std::vector<nlohmann::json>& requests, const Status& error,
             std::vector<nlohmann::json>* replies);

}  // namespace ckptspec
