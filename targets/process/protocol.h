// The adapter protocol's messages (docs/PROTOCOL.md, version 1) as structs, and their JSON form.
// Both sides use this file: the harness (process_engine.h) writes requests and reads replies; the
// built-in adapter (adapters/builtin/) reads requests and writes replies.
//
// Contracts: *ToJson adds the message's members to a JSON object (the caller adds "id", "op",
// "rank", "ok"); *FromJson reads them through model/json_fields.h, never throws, rejects a missing
// or mistyped member with an InvalidArgument Status naming its path from the message's name
// ("load.tensors[2].file: expected a string, got 3"), and leaves *out unspecified on error. Unknown members are ignored (later versions may add some), except in
// "capabilities", where an unknown name is an error (a misspelled capability must not read false).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/framework_support.h"
#include "model/sharded.h"
#include "model/status.h"
#include "targets/target.h"

namespace ckptspec {

inline constexpr int kProtocolVersion = 1;
// Revisions add what an adapter opts into and keep the version (docs/PROTOCOL.md, "Revisions").
// Revision 2: the reset request and capability, live groups. Revision 3: the poll request and
// capability, tensor placements in save. Revision 4: the packed capability, entries at ranges of
// one file per rank and request. Revision 5: framework adapters (the framework capability).
// Revision 6: hello names the group (and its store); the regroup capability: a rank pool's
// ranks say hello again after a reset, in another group; ranks may dial in to a coordinator.
inline constexpr int kProtocolRevision = 6;

// Revision 4: where an entry's bytes lie in a file that holds several entries (the members
// "offset" and "length" of the entry, both or neither).
struct FileRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
  bool operator==(const FileRange& o) const { return offset == o.offset && length == o.length; }
};

// An entry and the scratch file that holds (save) or receives (load) its bytes: the whole file,
// or (revision 4, only to an adapter that declared packed) `range` of it.
struct WireTensor {
  TensorSpec spec;
  std::string file;
  std::optional<FileRange> range;
};
struct WireObject {
  ObjectSpec spec;
  std::string file;
  std::optional<FileRange> range;
};

struct HelloReply {
  int protocol = kProtocolVersion;
  std::string adapter;  // the adapter's name for itself (may be empty)
  Capabilities capabilities;
  // Revision 2: "reset" among the capabilities: the process serves case after case, forgetting
  // everything at each reset request. Not an engine capability (target.h): the harness's.
  bool reset = false;
  // Revision 3: "poll" among the capabilities: the process answers poll requests (PollCall).
  bool poll = false;
  // Revision 4: "packed" among the capabilities: the process reads each entry's bytes from its
  // range of a file shared by the rank's entries of one request, and writes loaded tensors
  // into their ranges of one file (objects keep a file each).
  bool packed = false;
  // Revision 5: "framework" among the capabilities: the process is a framework adapter (the
  // requests of docs/PROTOCOL.md, "Framework adapters"), and the reply's "framework" member says
  // what it can be asked.
  std::optional<FrameworkSupport> framework;
  // Revision 6: "regroup" among the capabilities (with "reset"): after a reset the process may
  // be sent hello again, with another rank, world size and group (a rank pool's ranks).
  bool regroup = false;
};

// Engine::Save's arguments for one rank.
struct SaveCall {
  std::string directory;
  int64_t iteration = 0;
  SaveOptions options;
  std::vector<WireTensor> tensors;
  // Revision 3: where each tensor lives in the training process (SaveInput::placement), one per
  // tensor; the member "placement" of each tensor entry, "device" when absent.
  std::vector<Placement> placements;
  std::vector<WireObject> objects;
  nlohmann::json common = nlohmann::json::object();
};

// Revision 3, Engine::Poll for one rank: the tensors of the pending async save whose values the
// training loop changed in place since the save was scheduled, by their index in the save's
// "tensors", each with a scratch file holding its current bytes. The adapter writes them into
// the buffers it handed its checkpointer (as training would), then reports without waiting
// whether the save is complete.
struct PollUpdate {
  int64_t index = 0;
  std::string file;
  std::optional<FileRange> range;  // revision 4, as WireTensor's
};
struct PollCall {
  std::vector<PollUpdate> updates;
};
struct PollReply {
  bool complete = true;
};

// Engine::Load's request for one rank.
struct LoadCall {
  std::string directory;
  std::optional<int64_t> iteration;  // nullopt: the tracker's
  StrictMode strict = StrictMode::kAssumeOkUnexpected;
  bool allow_shape_mismatch = false;
  std::vector<WireTensor> tensors;
  std::vector<WireObject> objects;
};

// One rank's answer to a load.
struct LoadReply {
  int64_t iteration = -1;
  nlohmann::json common = nlohmann::json::object();
  std::vector<std::string> dropped;     // keys removed from this rank's template
  std::vector<std::string> unexpected;  // return_* modes
  std::vector<std::string> missing;     // return_all
  std::vector<std::string> warnings;    // log_* modes
};

nlohmann::json CapabilitiesToJson(const Capabilities& capabilities);
Status CapabilitiesFromJson(const nlohmann::json& json, Capabilities* out);

void HelloReplyToJson(const HelloReply& hello, nlohmann::json* reply);
Status HelloReplyFromJson(const nlohmann::json& reply, HelloReply* out);
void SaveCallToJson(const SaveCall& call, nlohmann::json* request);
Status SaveCallFromJson(const nlohmann::json& request, SaveCall* out);
void PollCallToJson(const PollCall& call, nlohmann::json* request);
Status PollCallFromJson(const nlohmann::json& request, PollCall* out);
void PollReplyToJson(const PollReply& poll, nlohmann::json* reply);
Status PollReplyFromJson(const nlohmann::json& reply, PollReply* out);
void LoadCallToJson(const LoadCall& call, nlohmann::json* request);
Status LoadCallFromJson(const nlohmann::json& request, LoadCall* out);
void LoadReplyToJson(const LoadReply& load, nlohmann::json* reply);
Status LoadReplyFromJson(const nlohmann::json& reply, LoadReply* out);

// {"code": "NotFound", "message": "..."} of a non-OK Status.
nlohmann::json ErrorToJson(const Status& status);
// The Status an error member describes; InvalidArgument (describing what is wrong with it) when
// it is not {"code": a Status code name other than "OK", "message": a string}.
Status ErrorFromJson(const nlohmann::json& error, Status* out);

// A reply line's text: the JSON on one line (invalid UTF-8 replaced, never throws).
std::string DumpLine(const nlohmann::json& message);

}  // namespace ckptspec
