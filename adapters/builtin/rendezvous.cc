#include "adapters/builtin/rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace ckptspec {
namespace {

using Clock = std::chrono::steady_clock;

Status SocketError(const std::string& what) {
  return Status::IOError("rendezvous: " + what + ": " + strerror(errno));
}

bool Address(const std::string& address, int port, sockaddr_in* out) {
  *out = sockaddr_in{};
  out->sin_family = AF_INET;
  out->sin_port = htons(static_cast<uint16_t>(port));
  return inet_pton(AF_INET, address.c_str(), &out->sin_addr) == 1;
}

Status SendAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return SocketError("send");
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

Status ReadLine(int fd, std::string* buffer, std::string* line) {
  for (;;) {
    const size_t newline = buffer->find('\n');
    if (newline != std::string::npos) {
      *line = buffer->substr(0, newline);
      buffer->erase(0, newline + 1);
      return Status::OK();
    }
    char chunk[65536];
    const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SocketError("recv");
    if (n == 0) return Status::IOError("rendezvous: the peer closed the connection");
    buffer->append(chunk, static_cast<size_t>(n));
  }
}

void NoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

Star::~Star() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

Status Star::Open(int rank, int world, const std::string& address, int port, double timeout_s) {
  rank_ = rank;
  fds_.assign(world, -1);
  buffers_.assign(world, std::string());
  if (world == 1) return Status::OK();
  return rank == 0 ? Accept(world, address, port, timeout_s)
                   : Connect(rank, address, port, timeout_s);
}

Status Star::Accept(int world, const std::string& address, int port, double timeout_s) {
  sockaddr_in addr;
  if (!Address(address, port, &addr))
    return Status::InvalidArgument("rendezvous: bad address " + address);
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return SocketError("socket");
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, world) != 0) {
    const Status s = SocketError("bind/listen on " + address + ":" + std::to_string(port));
    close(listener);
    return s;
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  Status status;
  for (int accepted = 0; accepted < world - 1 && status.ok();) {
    const int left_ms = static_cast<int>(
        std::chrono::duration<double, std::milli>(deadline - Clock::now()).count());
    pollfd p{listener, POLLIN, 0};
    if (left_ms <= 0 || poll(&p, 1, left_ms) == 0) {
      status = Status::IOError("rendezvous: only " + std::to_string(accepted) + " of " +
                               std::to_string(world - 1) + " peers connected in time");
      break;
    }
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EINTR) status = SocketError("accept");
      continue;
    }
    NoDelay(fd);
    std::string buffer, hello;
    status = ReadLine(fd, &buffer, &hello);
    int peer = -1;
    if (status.ok() && (sscanf(hello.c_str(), "rank %d", &peer) != 1 || peer < 1 || peer >= world ||
                        fds_[peer] >= 0)) {
      status = Status::IOError("rendezvous: unexpected greeting '" + hello + "'");
    }
    if (!status.ok()) {
      close(fd);
      break;
    }
    fds_[peer] = fd;
    buffers_[peer] = buffer;
    ++accepted;
  }
  close(listener);
  return status;
}

Status Star::Connect(int rank, const std::string& address, int port, double timeout_s) {
  sockaddr_in addr;
  if (!Address(address, port, &addr))
    return Status::InvalidArgument("rendezvous: bad address " + address);
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return SocketError("socket");
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      NoDelay(fd);
      fds_[0] = fd;
      return SendAll(fd, "rank " + std::to_string(rank) + "\n");
    }
    const Status s = SocketError("connect to " + address + ":" + std::to_string(port));
    close(fd);
    if (Clock::now() >= deadline) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Status Star::Send(int peer, const std::string& line) {
  if (peer < 0 || peer >= static_cast<int>(fds_.size()) || fds_[peer] < 0) {
    return Status::InvalidArgument("rendezvous: no connection to rank " + std::to_string(peer));
  }
  return SendAll(fds_[peer], line + "\n").WithContext("to rank " + std::to_string(peer));
}

Status Star::Receive(int peer, std::string* line) {
  if (peer < 0 || peer >= static_cast<int>(fds_.size()) || fds_[peer] < 0) {
    return Status::InvalidArgument("rendezvous: no connection to rank " + std::to_string(peer));
  }
  return ReadLine(fds_[peer], &buffers_[peer], line)
      .WithContext("from rank " + std::to_string(peer));
}

}  // namespace ckptspec
