// The built-in adapter's engine side: rank 0 of the adapter serves every rank's request of one
// call at once with the reference engine on the POSIX Env (other ranks relay their requests to it,
// main.cc). This puts the whole protocol path (docs/PROTOCOL.md) under test without Python.
//
// Contracts:
//  - Serve() takes one request per rank (parsed JSON; a line that did not parse is null) and
//    returns one reply per rank, never throws. Requests must agree on "op" and "id"; a malformed
//    request gets an InvalidArgument error reply naming the member, sent to every rank.
//  - save reads every rank's entry files before the engine runs (so the harness may delete them as
//    soon as the reply is out, async saves included); load writes every kept entry's file (or
//    its range of the rank's packed file, revision 4).
//  - One ReferenceEngine per checkpoint directory, kept across calls (plan cache, pending async
//    save); a request naming another directory finalizes the old engine first.
//  - reset (when options.reset declared it) drops the engine, as the end of the process does: its
//    plan cache is forgotten, and its destructor completes a pending async save.
//  - An async save's input dicts are the adapter's own, shared with the engine as the caller's
//    live dicts (SaveInput) with the placements the request names; poll (when options.poll
//    declared it) writes each update into its tensor's buffer in place, as training would, then
//    asks the engine's Poll.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "targets/process/protocol.h"
#include "targets/process/scratch_file.h"
#include "targets/reference/reference_engine.h"

namespace ckptspec {

struct ReferenceAdapterOptions {
  int world_size = 1;
  Env* env = nullptr;  // not owned; Env::Posix() unless a fault needs another
  // Fault injection (tests of the harness's verdicts): with wrong_size_rank >= 0, every load
  // writes that rank's first kept tensor one byte short.
  int wrong_size_rank = -1;
  bool reset = true;   // declare the reset capability (protocol revision 2)
  bool poll = true;    // declare the poll capability (protocol revision 3)
  bool packed = true;  // declare the packed capability (protocol revision 4)
  // Async saves write on a background thread (kThread), or inside the poll, finalize, save or
  // load that completes them (kDeferred: what the in-process targets do).
  AsyncExecution async_execution = AsyncExecution::kThread;
  // Null: the reference engine; else the engine to serve with (a catalog mutant's, to show what
  // the protocol path makes of it).
  std::function<std::unique_ptr<ReferenceEngine>(ReferenceOptions)> make_engine;
};

class ReferenceAdapter {
 public:
  explicit ReferenceAdapter(ReferenceAdapterOptions options);
  std::vector<nlohmann::json> Serve(const std::vector<nlohmann::json>& requests);

 private:
  Status Hello(const std::vector<nlohmann::json>& requests, std::vector<nlohmann::json>* replies);
  Status Save(const std::vector<nlohmann::json>& requests);
  Status Poll(const std::vector<nlohmann::json>& requests, std::vector<nlohmann::json>* replies);
  // Writes one poll update into rank `rank`'s tensor of the pending save's input, in place.
  Status UpdateInPlace(size_t rank, const PollUpdate& update, EntryReader* reader);
  Status Load(const std::vector<nlohmann::json>& requests, std::vector<nlohmann::json>* replies);
  Status EngineFor(const std::string& directory, ReferenceEngine** engine);

  ReferenceAdapterOptions options_;
  std::string directory_;
  std::unique_ptr<ReferenceEngine> engine_;
  // The dicts of the engine's pending async save (null without one): poll updates them in place.
  std::shared_ptr<std::vector<ShardedStateDict>> live_;
};

}  // namespace ckptspec
