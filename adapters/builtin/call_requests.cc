#include "adapters/builtin/call_requests.h"

#include "targets/process/protocol.h"

namespace ckptspec {

using nlohmann::json;

json ReplyTo(const json& request, int rank) {
  json reply = json::object();
  reply["id"] = request.is_object() && request.contains("id") ? request["id"] : json(nullptr);
  reply["rank"] = rank;
  reply["ok"] = true;
  return reply;
}

Status CheckAgreement(const std::vector<json>& requests, std::string* op) {
  for (size_t r = 0; r < requests.size(); ++r) {
    const json& q = requests[r];
    const std::string where = "request of rank " + std::to_string(r);
    if (!q.is_object()) return Status::InvalidArgument(where + ": not a JSON object");
    if (!q.contains("op") || !q["op"].is_string()) {
      return Status::InvalidArgument(where + ": missing string member \"op\"");
    }
    if (!q.contains("id") || !q["id"].is_number_integer()) {
      return Status::InvalidArgument(where + ": missing integer member \"id\"");
    }
    if (q["op"] != requests[0]["op"] || q["id"] != requests[0]["id"]) {
      return Status::InvalidArgument(where + " (" + q["op"].dump() + ", id " + q["id"].dump() +
                                     ") differs from rank 0's (" + requests[0]["op"].dump() +
                                     ", id " + requests[0]["id"].dump() + ")");
    }
  }
  *op = requests[0]["op"].get<std::string>();
  return Status::OK();
}

Status CheckHello(const std::vector<json>& requests, int world_size) {
  for (size_t r = 0; r < requests.size(); ++r) {
    const json& q = requests[r];
    if (q.value("protocol", json()) != json(kProtocolVersion)) {
      return Status::NotSupported("this adapter speaks protocol version " +
                                  std::to_string(kProtocolVersion) + ", asked for " +
                                  q.value("protocol", json()).dump());
    }
    if (q.value("world_size", json()) != json(world_size) || q.value("rank", json()) != json(r)) {
      return Status::InvalidArgument("hello for rank " + q.value("rank", json()).dump() + " of " +
                                     q.value("world_size", json()).dump() + " reached rank " +
                                     std::to_string(r) + " of " + std::to_string(world_size));
    }
  }
  return Status::OK();
}

void FailAll(const std::vector<json>& requests, const Status& error, std::vector<json>* replies) {
  for (size_t r = 0; r < requests.size(); ++r) {
    (*replies)[r] = ReplyTo(requests[r], static_cast<int>(r));
    (*replies)[r]["ok"] = false;
    (*replies)[r]["error"] = ErrorToJson(error);
  }
}

}  // namespace ckptspec
