// Fuzzes the adapter protocol's message parser (docs/PROTOCOL.md; targets/process/protocol.h), the
// code that reads what a third-party adapter (or the harness) sends: any bytes give a Status, never
// a crash. A line that parses as JSON is read as every message kind; a message that reads
// round-trips: written back and read again, it is the same message.
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_target.h"
#include "model/json_util.h"
#include "targets/process/framework_protocol.h"
#include "targets/process/protocol.h"

namespace {

using ckptspec::Status;
using nlohmann::json;

// Reads `message` as T; when it reads, writing it back and reading again gives the same JSON.
template <typename T>
void ReadsAndRoundTrips(const json& message, Status (*from)(const json&, T*),
                        void (*to)(const T&, json*), const char* what) {
  T value;
  if (!from(message, &value).ok()) return;
  json written = json::object();
  to(value, &written);
  T again;
  CKPTSPEC_FUZZ_CHECK(from(written, &again).ok(), what);
  json rewritten = json::object();
  to(again, &rewritten);
  CKPTSPEC_FUZZ_CHECK(written == rewritten, what);
  CKPTSPEC_FUZZ_CHECK(!ckptspec::DumpLine(written).empty(), what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  json message;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!ParseJson(text, JsonLimits(), &message).ok()) return 0;
  ReadsAndRoundTrips<HelloReply>(message, HelloReplyFromJson, HelloReplyToJson,
                                 "a hello reply does not round-trip");
  ReadsAndRoundTrips<SaveCall>(message, SaveCallFromJson, SaveCallToJson,
                               "a save request does not round-trip");
  ReadsAndRoundTrips<LoadCall>(message, LoadCallFromJson, LoadCallToJson,
                               "a load request does not round-trip");
  ReadsAndRoundTrips<LoadReply>(message, LoadReplyFromJson, LoadReplyToJson,
                                "a load reply does not round-trip");
  ReadsAndRoundTrips<PollCall>(message, PollCallFromJson, PollCallToJson,
                               "a poll request does not round-trip");
  ReadsAndRoundTrips<PollReply>(message, PollReplyFromJson, PollReplyToJson,
                                "a poll reply does not round-trip");
  // The framework adapter's messages (revision 5).
  ReadsAndRoundTrips<FrameworkJob>(message, BuildCallFromJson, BuildCallToJson,
                                   "a build request does not round-trip");
  ReadsAndRoundTrips<TrainCall>(message, TrainCallFromJson, TrainCallToJson,
                                "a train request does not round-trip");
  ReadsAndRoundTrips<TrainResult>(message, TrainReplyFromJson, TrainReplyToJson,
                                  "a train reply does not round-trip");
  ReadsAndRoundTrips<FrameworkSaveCall>(message, FrameworkSaveCallFromJson, FrameworkSaveCallToJson,
                                        "a framework save request does not round-trip");
  ReadsAndRoundTrips<FrameworkSaveReply>(
      message,
      [](const json& m, FrameworkSaveReply* out) { return FrameworkSaveReplyFromJson(m, 0, out); },
      FrameworkSaveReplyToJson, "a framework save reply does not round-trip");
  ReadsAndRoundTrips<FrameworkLoadCall>(message, FrameworkLoadCallFromJson, FrameworkLoadCallToJson,
                                        "a framework load request does not round-trip");
  ReadsAndRoundTrips<RankObservation>(message, ObserveReplyFromJson, ObserveReplyToJson,
                                      "an observe reply does not round-trip");
  Capabilities capabilities;
  if (CapabilitiesFromJson(message, &capabilities).ok()) {
    Capabilities again;
    CKPTSPEC_FUZZ_CHECK(CapabilitiesFromJson(CapabilitiesToJson(capabilities), &again).ok(),
                        "capabilities do not round-trip");
  }
  Status error;
  if (ErrorFromJson(message, &error).ok()) {
    CKPTSPEC_FUZZ_CHECK(!error.ok(), "an error member read as OK");
    Status again;
    CKPTSPEC_FUZZ_CHECK(ErrorFromJson(ErrorToJson(error), &again).ok() &&
                            again.code() == error.code() && again.message() == error.message(),
                        "an error does not round-trip");
  }
  // The fuzzer checks that reading ends without a crash or UB; any verdict is a valid outcome.
  if (message.is_object() && message.contains("error")) {
    ErrorFromJson(message["error"], &error).IgnoreError();
  }
  return 0;
}
