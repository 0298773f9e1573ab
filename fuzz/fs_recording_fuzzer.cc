// Fuzzes what a recorded process writes to its file-system log (crash/fs_control.h's record
// format) and what the coordinator does with it: the parser (crash/recording_log.h, behind
// FsRecorder::ReadRecording) and, on what parses, the crash-state builder (crash/crash_states.h)
// over a small fixed snapshot (fuzz/fs_recording_snapshot.h). The processes are untrusted, so any
// bytes give a Status, never a crash, a hang or an allocation beyond a small multiple of the input.
// Invariants:
//  - what parses re-encodes (EncodeRecordingRecord) to records that parse to the same operations;
//  - the enumeration stays within its documented cost (candidates per crash point);
//  - every crash point the enumeration returns is accepted by BuildCrashState (the first and
//    the last distinct point are built: an ordered one and, usually, a weak one).
#include <algorithm>
#include <string>
#include <vector>

#include "crash/crash_states.h"
#include "crash/recording_log.h"
#include "fuzz/fs_recording_snapshot.h"
#include "fuzz/fuzz_target.h"

namespace {

using namespace ckptspec;

constexpr size_t kVariantsPerPoint = 2;
constexpr uint64_t kMaxStates = 256;

std::string Encode(const std::vector<FsOp>& ops) {
  std::string log;
  for (const FsOp& op : ops) log += EncodeRecordingRecord(op);
  return log;
}

void ReEncodesToTheSameOperations(const std::vector<FsOp>& ops) {
  const std::string log = Encode(ops);
  std::vector<FsOp> again;
  CKPTSPEC_FUZZ_CHECK(ParseRecordingLog(log, "re-encoded", &again).ok(),
                      "re-encoded records do not parse");
  CKPTSPEC_FUZZ_CHECK(Encode(again) == log, "re-encoded records parse to other operations");
}

void BuildsTheCrashState(const std::vector<FsOp>& ops, const CrashPoint& point) {
  FileTree tree;
  const Status built = BuildCrashState(FsRecordingFuzzSnapshot(), ops, point, &tree);
  CKPTSPEC_FUZZ_CHECK(built.ok(), "a crash point the enumeration returned does not build");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::vector<FsOp> ops;
  if (!ParseRecordingLog(bytes, "rec.fuzz.bin", &ops).ok()) return 0;
  ReEncodesToTheSameOperations(ops);
  if (ops.size() > kFsRecordingFuzzMaxOps) return 0;
  std::stable_sort(ops.begin(), ops.end(),
                   [](const FsOp& a, const FsOp& b) { return a.seq < b.seq; });
  const uint64_t n = ops.size();
  CrashStateOptions options;
  options.max_variants_per_point = kVariantsPerPoint;
  options.seed = n;
  options.max_states = kMaxStates;
  options.only_after_ops = {0, 1, n / 2, n > 0 ? n - 1 : 0, n, n + 1};  // n + 1: ignored
  CrashStates states;
  if (!EnumerateCrashStates(FsRecordingFuzzSnapshot(), ops, options, &states).ok()) return 0;
  // crash/crash_states.h: at most (2 + non-durable ops + non-durable writes + variants) per point.
  const uint64_t points = 5;
  CKPTSPEC_FUZZ_CHECK(states.candidates <= points * (2 + 2 * n + kVariantsPerPoint),
                      "more candidates than the documented cost");
  CKPTSPEC_FUZZ_CHECK(!states.distinct.empty(), "no crash state at all");
  BuildsTheCrashState(ops, states.distinct.front());
  BuildsTheCrashState(ops, states.distinct.back());
  return 0;
}
