// Fuzzes the adapter protocol's message parser (docs/PROTOCOL.md; targets/process/protocol.h), the
// code that reads what a third-party adapter (or the harness) sends: any bytes give a Status, never
// a crash. A line that parses as JSON is read as every message kind; a message that reads
// round-trips: written back and read again, it is the same message. Before that, the input goes
// through the reply reader (targets/process/reply_lines.h) as a rank's stdout would, split into
// reads at points drawn from the input itself: the lines are those between its newlines, each
// once, whatever the split.
#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_target.h"
#include "model/json_util.h"
#include "targets/process/framework_protocol.h"
#include "targets/process/protocol.h"
#include "targets/process/reply_lines.h"

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

// Feeds `text` to a ReplyLines in reads whose lengths, and the reader's line limit, come from a
// generator seeded by the input's bytes (so mutating the input moves the split points too).
void ReadsTheSameLinesHoweverSplit(std::string_view text) {
  uint64_t seed = 1469598103934665603ull;  // FNV-1a over the input
  for (char c : text) seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::mt19937_64 draw(seed);
  const size_t max_line_bytes = static_cast<size_t>(draw() % (text.size() + 2));
  std::vector<std::string_view> expected;
  size_t begin = 0;
  for (size_t nl; (nl = text.find('\n', begin)) != std::string_view::npos; begin = nl + 1) {
    expected.push_back(text.substr(begin, nl - begin));
  }
  ckptspec::ReplyLines reader(max_line_bytes);
  std::string line;
  size_t taken = 0;
  for (size_t at = 0; at < text.size();) {
    // Mostly short reads, sometimes one that takes the rest.
    const size_t left = text.size() - at;
    const size_t n = draw() % 8 == 0 ? left : std::min<size_t>(left, 1 + draw() % 64);
    reader.Append(text.data() + at, n);
    at += n;
    while (reader.TakeLine(&line)) {
      CKPTSPEC_FUZZ_CHECK(taken < expected.size() && line == expected[taken],
                          "the reply reader gave a line that is not the input's next line");
      ++taken;
    }
    CKPTSPEC_FUZZ_CHECK(reader.too_long() == (reader.pending().size() > max_line_bytes),
                        "the reply reader's limit disagrees with what is pending");
  }
  CKPTSPEC_FUZZ_CHECK(taken == expected.size(), "the reply reader missed a line");
  CKPTSPEC_FUZZ_CHECK(reader.pending() == text.substr(begin),
                      "the reply reader lost what follows the last newline");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ckptspec;
  json message;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ReadsTheSameLinesHoweverSplit(text);
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
