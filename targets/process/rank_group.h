// A group of N adapter ranks speaking the adapter protocol (docs/PROTOCOL.md): sent one request
// each per call, their replies read concurrently under a deadline. The ranks are processes the
// group starts, or ranks handed to it (rank_endpoint.h: a rank pool's processes, or ranks an
// outside launcher started that dialled in to the coordinator).
//
// Contracts:
//  - Start() launches N processes (ProcessRank) with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
//    MASTER_PORT and CKPTSPEC_PROTOCOL set, or takes the ranks it was given, sends hello and checks
//    the replies (protocol version, the same capabilities on every rank). Hello names the group
//    (revision 6): "g<id>", unique over the harness's life, with the store "127.0.0.1:<port>" its
//    rank 0 hosts, or without a store when the ranks use their launcher's. Hello's deadline is
//    the request deadline times ceil(N / online cores) for processes it starts: more ranks than
//    cores start in turns.
//  - Call() never blocks past its deadline. It returns OK with every rank's reply (a JSON object
//    with the right "id" and "rank", and "ok" true, or false with a well-formed "error"), or the
//    Status of a fault (adapter_fault.h) naming the rank, the request and the tail of the rank's
//    stderr log; after a fault every process of the group has been killed and reaped, and the
//    group is dead (alive() false; further calls fail at once).
//  - The destructor kills and reaps whatever is left, leftover children included; nothing outlives
//    the group. TakeRanks() hands the ranks back instead (a pool's, after a reset).
//  - A fault's message names where a launched rank runs ("launch rank 2 on host n1, pid 42").
//  - Each rank's stderr is drained while the group waits on it and kept capped (CappedLog); a
//    fault's message ends with the tail of the rank's stderr. SIGPIPE is set
//    to ignored in this process (once, if it was at its default) so that writing to a dead rank is
//    an error, not the end of the harness.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/status.h"
#include "targets/process/adapter_fault.h"
#include "targets/process/protocol.h"
#include "targets/process/rank_endpoint.h"
#include "targets/process/reply_lines.h"

namespace ckptspec {

struct RankGroupOptions {
  std::string command;  // run by /bin/sh -c
  int world_size = 1;
  double timeout_s = 60;  // deadline of each request, hello included
  // Added to every rank's environment ("NAME=value"), after the group's own: e.g. the storage
  // recorder's LD_PRELOAD (crash/fs_recorder.h).
  std::vector<std::string> extra_env = {};
  // The ranks rendezvous in their launcher's store (hello names no store): ranks an outside
  // launcher started.
  bool launcher_store = false;
};

// Starts rank `rank` of `world_size` as a process of options.command, with the environment of
// docs/PROTOCOL.md, "Processes" (MASTER_PORT `master_port`) and options.extra_env after it. *out
// holds the process whether or not it started (a failed start is its Status).
Status StartRankProcess(const RankGroupOptions& options, int rank, int world_size, int master_port,
                        std::unique_ptr<ProcessRank>* out);

// Where the ids of requests come from: one counter shared by every group of a harness, so ids
// increase over its life (a reply to an earlier request is always recognisable).
struct RequestIds {
  int64_t next = 1;
};

class RankGroup {
 public:
  RankGroup(RankGroupOptions options, RequestIds* ids);  // `ids` not owned, outlives the group
  // A group over `ranks` (options.world_size of them), which Start says hello to.
  RankGroup(RankGroupOptions options, RequestIds* ids,
            std::vector<std::unique_ptr<RankEndpoint>> ranks);
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  // Starts the processes (unless ranks were given) and exchanges hello. On error the group is
  // dead.
  Status Start(HelloReply* hello);
  // The ranks, for a pool to keep (after a successful Reset); the group is then dead and empty.
  std::vector<std::unique_ptr<RankEndpoint>> TakeRanks();
  // Rank 0's reply to hello (after a successful Start; every rank declared the same).
  const HelloReply& hello() const { return hello_; }

  // Sends reset (protocol revision 2; only to ranks that declared it) and waits for every reply.
  // OK when every rank replied ok and no orphan of the adapter is left (a process reparented to
  // ckptspec: cleanup_registry.h). Else the group is dead: an error reply is that error,
  // prefixed "adapter rank R refused reset: "; leftovers are the fault kLeftBehind, after they
  // were killed; a fault of the exchange is that fault.
  Status Reset();

  // Sends {"id", "op", ...requests[r]} to rank r (requests.size() == world size), waits for
  // every reply. `timeout_s` <= 0 means the group's.
  Status Call(const std::string& op, std::vector<nlohmann::json> requests,
              std::vector<nlohmann::json>* replies, double timeout_s = 0);
  // Call with each request given as its line: line_of(r, id) is rank r's request, one JSON
  // object with members "id" (this call's id) and "op" (`op`), without the newline.
  using RequestLine = std::function<std::string(size_t rank, int64_t id)>;
  Status CallWithLines(const std::string& op, const RequestLine& line_of,
                       std::vector<nlohmann::json>* replies, double timeout_s = 0);

  // Declares a fault found in a reply's content (e.g. a wrong size): kills the group and returns
  // the fault's Status, as Call does for the faults it finds.
  Status Fault(int rank, AdapterFault fault, const std::string& detail);

  // Sends shutdown, waits a few seconds for every process to exit, then kills what is left:
  // the ranks' process groups, and every leftover child (cleanup_registry.h): an orphan of the
  // adapter, reparented to ckptspec. Leftovers of a group that was alive until now are the
  // fault kLeftBehind (naming them), returned after they were killed; else OK.
  Status Shutdown();

  bool alive() const { return alive_; }
  int world_size() const { return options_.world_size; }
  int master_port() const { return port_; }
  // The group's name in hello ("g<id>"; empty before Start).
  const std::string& name() const { return name_; }
  const RankEndpoint& rank(int rank) const { return *ranks_[rank]; }
  // What rank `rank` wrote to its stderr so far (capped; drained while the group waits on it).
  const CappedLog& log(int rank) const { return ranks_[rank]->log(); }
  // The pids of the group's local rank processes (for checks that nothing is left behind).
  std::vector<pid_t> pids() const;
  // The last fault and its rank, if any.
  const std::optional<AdapterFault>& last_fault() const { return last_fault_; }
  int last_fault_rank() const { return last_fault_rank_; }
  // The last fault's Status message ("adapter rank 1: exited: ..."), empty before any.
  const std::string& last_fault_message() const { return last_fault_message_; }

 private:
  Status Exchange(const std::string& during, const std::vector<std::string>& lines,
                  double timeout_s, std::vector<std::string>* out);
  Status DeadRank(int rank, const std::string& during);
  Status CheckReply(int rank, int64_t id, const std::string& during, const std::string& line,
                    nlohmann::json* reply);
  void KillAll();

  RankGroupOptions options_;
  RequestIds* ids_;
  std::vector<std::unique_ptr<RankEndpoint>> ranks_;
  bool given_ranks_ = false;  // ranks_ came with the group (a pool's, or launched)
  std::string name_;
  std::vector<ReplyLines> replies_;  // bytes read from each rank's stdout not yet consumed
  int port_ = 0;
  HelloReply hello_;
  bool alive_ = false;
  std::optional<AdapterFault> last_fault_;
  int last_fault_rank_ = -1;
  std::string last_fault_message_;
};

}  // namespace ckptspec
