// The coordinator of ranks an outside launcher started (torchrun, Slurm's srun: docs/SCALE.md):
// ckptspec listens on one address, each rank dials in, proves with the run's token that it was
// sent to this run, says its launch rank and host, and then speaks the adapter protocol over the
// connection (docs/PROTOCOL.md, "Processes": ranks that dial in).
//
// Contracts:
//  - Listen(address) binds exactly the interface asked for: "HOST:PORT" with HOST a numeric IPv4
//    address or "localhost" (127.0.0.1), PORT 0 for any free port. Nothing listens on another
//    interface ("0.0.0.0" must be asked for). The token is 32 bytes of the kernel's random
//    source, as 64 hex digits.
//  - WriteFile(path) writes {"address": "HOST:PORT", "token": "<hex>"} with mode 0600,
//    atomically (a temporary file renamed over the path), for the ranks to read
//    (CKPTSPEC_COORDINATOR_FILE). An existing file at the path is replaced.
//  - AcceptRanks(n, timeout_s) waits until launch ranks 0..n-1 of a world of n have connected and
//    been accepted, or the deadline. A connection's first line is
//    {"op": "connect", "protocol": 1, "token", "rank", "world_size", "host", "pid"}, read within
//    kHandshakeTimeout_s and kMaxHandshakeBytes: a wrong token, another protocol, a rank outside
//    0..n-1, a world size other than n, a launch rank already connected, or a malformed line is
//    answered {"ok": false, "error": {...}} naming why and closed; it does not count (refusals()
//    says how many, last_refusal() the last). An accepted one is answered {"ok": true}. At the
//    deadline the error is the fault "start failed" naming the launch ranks that never
//    connected, and the ranks accepted so far are closed. The ranks are returned ordered by
//    launch rank.
//  - Not thread-safe. The destructor closes the listening socket (accepted ranks live on).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "model/status.h"
#include "targets/process/rank_endpoint.h"

namespace ckptspec {

inline constexpr double kHandshakeTimeout_s = 10;
inline constexpr size_t kMaxHandshakeBytes = 4096;

// A rank that dialled in: its requests and replies are lines on one TCP connection; its stderr
// stays with its launcher.
class SocketRank : public RankEndpoint {
 public:
  SocketRank(int fd, int launch_rank, std::string host, long pid);
  ~SocketRank() override;
  SocketRank(const SocketRank&) = delete;
  SocketRank& operator=(const SocketRank&) = delete;

  int request_fd() const override { return fd_; }
  int reply_fd() const override { return fd_; }
  int log_fd() const override { return -1; }
  void DrainLog() override {}
  const CappedLog& log() const override { return log_; }
  pid_t local_pid() const override { return -1; }
  std::string Where() const override;
  std::string LogElsewhere() const override;
  std::pair<AdapterFault, std::string> Ended(const std::string& during) override;
  void End() override;
  void CloseRequests() override;
  bool WaitEnded(double timeout_s) override;

  int launch_rank() const { return launch_rank_; }
  const std::string& host() const { return host_; }

 private:
  int fd_;
  int launch_rank_;
  std::string host_;
  long pid_;
  CappedLog log_{0, 0};
};

class Coordinator {
 public:
  Coordinator() = default;
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  Status Listen(const std::string& address);
  Status WriteFile(const std::string& path) const;
  Status AcceptRanks(int n, double timeout_s, std::vector<std::unique_ptr<SocketRank>>* ranks);

  // "HOST:PORT" as bound (the port chosen when 0 was asked); empty before Listen.
  const std::string& address() const { return address_; }
  const std::string& token() const { return token_; }
  size_t refusals() const { return refusals_; }
  const std::string& last_refusal() const { return last_refusal_; }

 private:
  int listen_fd_ = -1;
  std::string address_;
  std::string token_;
  size_t refusals_ = 0;
  std::string last_refusal_;
};

}  // namespace ckptspec
