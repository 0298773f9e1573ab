// The built-in adapter's rendezvous: a star of TCP connections on MASTER_ADDR:MASTER_PORT. Rank 0
// listens and accepts one connection from every other rank (each first sends "rank R"); then
// rank 0 exchanges protocol lines with every peer, and every peer with rank 0 only.
//
// Contracts: lines are '\n'-terminated and carry no '\n' inside; Send and Receive block (the
// harness's per-request deadline bounds them from outside); a closed or failed connection is an
// IOError naming the peer; nothing raises SIGPIPE (MSG_NOSIGNAL).
#pragma once

#include <string>
#include <vector>

#include "model/status.h"

namespace ckptspec {

class Star {
 public:
  Star() = default;
  ~Star();
  Star(const Star&) = delete;
  Star& operator=(const Star&) = delete;

  // Rank 0 listens and accepts world - 1 peers; the others connect (retrying until `timeout_s`).
  // A world of one opens nothing.
  Status Open(int rank, int world, const std::string& address, int port, double timeout_s);

  // Rank 0: to or from `peer` (1 .. world-1). Other ranks: peer must be 0.
  Status Send(int peer, const std::string& line);
  Status Receive(int peer, std::string* line);

 private:
  Status Accept(int world, const std::string& address, int port, double timeout_s);
  Status Connect(int rank, const std::string& address, int port, double timeout_s);

  int rank_ = 0;
  std::vector<int> fds_;              // by peer rank; -1 where there is no connection
  std::vector<std::string> buffers_;  // bytes received from each peer past the last line
};

}  // namespace ckptspec
