#include "targets/process/coordinator.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "model/json_util.h"
#include "targets/process/poll_deadline.h"
#include "targets/process/protocol.h"

namespace ckptspec {
namespace {

using nlohmann::json;
using Clock = PollClock;

std::string Errno(const std::string& call) { return call + ": " + strerror(errno); }

// Writes all of `text` to a socket whose peer may be slow, for at most a second; a peer that does
// not read its refusal loses it.
void SendBriefly(int fd, const std::string& text) {
  size_t sent = 0;
  const auto deadline = DeadlineAfter(1);
  while (sent < text.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, MillisecondsUntil(deadline)) <= 0) return;
    const ssize_t w = send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN && errno != EINTR) return;
    if (w > 0) sent += static_cast<size_t>(w);
  }
}

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// A host name as a launched rank reports it: 1-255 printable ASCII characters, no spaces.
bool PlainHost(const std::string& host) {
  if (host.empty() || host.size() > 255) return false;
  return std::all_of(host.begin(), host.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

// A connection not yet accepted: its bytes so far and its deadline.
struct Pending {
  int fd;
  std::string bytes;
  Clock::time_point deadline;
};

}  // namespace

SocketRank::SocketRank(int fd, int launch_rank, std::string host, long pid)
    : fd_(fd), launch_rank_(launch_rank), host_(std::move(host)), pid_(pid) {}

SocketRank::~SocketRank() { End(); }

std::string SocketRank::Where() const {
  return "launch rank " + std::to_string(launch_rank_) + " on host " + host_ + ", pid " +
         std::to_string(pid_);
}

std::string SocketRank::LogElsewhere() const {
  return "its stderr is with its launcher on host " + host_;
}

std::pair<AdapterFault, std::string> SocketRank::Ended(const std::string& during) {
  return {AdapterFault::kExited, "disconnected from the coordinator during " + during};
}

void SocketRank::End() {
  if (fd_ < 0) return;
  shutdown(fd_, SHUT_RDWR);
  close(fd_);
  fd_ = -1;
}

void SocketRank::CloseRequests() {
  if (fd_ >= 0) shutdown(fd_, SHUT_WR);
}

bool SocketRank::WaitEnded(double timeout_s) {
  const auto deadline = DeadlineAfter(timeout_s);
  while (fd_ >= 0) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = poll(&p, 1, MillisecondsUntil(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char chunk[4096];
    const ssize_t got = read(fd_, chunk, sizeof(chunk));
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got <= 0) return true;  // the rank closed its end (or it broke): it is gone
  }
  return true;
}

Coordinator::~Coordinator() {
  if (listen_fd_ >= 0) close(listen_fd_);
}

Status Coordinator::Listen(const std::string& address) {
  if (listen_fd_ >= 0) return Status::FailedPrecondition("coordinator: already listening");
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument("coordinator address '" + address + "' is not HOST:PORT");
  }
  std::string host = address.substr(0, colon);
  const std::string port_text = address.substr(colon + 1);
  if (host == "localhost") host = "127.0.0.1";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("coordinator address '" + address +
                                   "': the host must be a numeric IPv4 address or localhost");
  }
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port_text) > 65535) {
    return Status::InvalidArgument("coordinator address '" + address +
                                   "': the port must be 0 to 65535");
  }
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(port_text)));
  unsigned char random[32];
  if (getrandom(random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
    return Status::IOError(Errno("coordinator: getrandom"));
  }
  token_.clear();
  for (unsigned char c : random) {
    token_ += "0123456789abcdef"[c >> 4];
    token_ += "0123456789abcdef"[c & 15];
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::IOError(Errno("coordinator: socket"));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 1024) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const Status s = Status::IOError(Errno("coordinator: cannot listen on " + address));
    close(fd);
    return s;
  }
  listen_fd_ = fd;
  address_ = host + ":" + std::to_string(ntohs(addr.sin_port));
  return Status::OK();
}

Status Coordinator::WriteFile(const std::string& path) const {
  if (listen_fd_ < 0) return Status::FailedPrecondition("coordinator: not listening");
  const std::string tmp = path + ".tmp";
  const std::string text = DumpLine(json{{"address", address_}, {"token", token_}}) + "\n";
  unlink(tmp.c_str());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::IOError(Errno("coordinator file " + tmp));
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = close(fd) == 0;
  if (!written || !closed || rename(tmp.c_str(), path.c_str()) != 0) {
    const Status s = Status::IOError(Errno("coordinator file " + path));
    unlink(tmp.c_str());
    return s;
  }
  return Status::OK();
}

Status Coordinator::AcceptRanks(int n, double timeout_s,
                                std::vector<std::unique_ptr<SocketRank>>* ranks) {
  if (listen_fd_ < 0) return Status::FailedPrecondition("coordinator: not listening");
  if (n < 1) return Status::InvalidArgument("coordinator: " + std::to_string(n) + " ranks asked");
  std::map<int, std::unique_ptr<SocketRank>> accepted;
  std::vector<Pending> pending;
  const auto deadline = DeadlineAfter(timeout_s);
  const auto refuse = [&](Pending& p, const std::string& why) {
    ++refusals_;
    last_refusal_ = why;
    json reply = {{"ok", false}, {"error", {{"code", "FailedPrecondition"}, {"message", why}}}};
    SendBriefly(p.fd, DumpLine(reply) + "\n");
    close(p.fd);
    p.fd = -1;
  };
  // Judges a complete first line: accepted (the Pending's fd moves into a SocketRank) or refused.
  const auto judge = [&](Pending& p, const std::string& line) {
    json hello;
    JsonLimits limits;
    limits.max_depth = 4;
    limits.max_bytes = kMaxHandshakeBytes;
    if (!ParseJson(line, limits, &hello).ok() || !hello.is_object() ||
        hello.value("op", json()) != "connect") {
      return refuse(p, "the first line is not a connect request");
    }
    const auto integer = [&](const char* name, int64_t* v) {
      auto it = hello.find(name);
      if (it == hello.end() || !it->is_number_integer()) return false;
      *v = it->get<int64_t>();
      return true;
    };
    const auto token = hello.find("token");
    if (token == hello.end() || !token->is_string() ||
        !ConstantTimeEqual(token->get<std::string>(), token_)) {
      return refuse(p, "wrong token: this is not the run the rank was sent to");
    }
    int64_t protocol = 0, rank = -1, world = 0, pid = 0;
    if (!integer("protocol", &protocol) || protocol != kProtocolVersion) {
      return refuse(p, "protocol " + hello.value("protocol", json()).dump() + " asked; " +
                           "the coordinator speaks " + std::to_string(kProtocolVersion));
    }
    if (!integer("world_size", &world) || world != n) {
      return refuse(p, "world size " + hello.value("world_size", json()).dump() +
                           "; the coordinator waits for " + std::to_string(n) + " ranks");
    }
    if (!integer("rank", &rank) || rank < 0 || rank >= n) {
      return refuse(p, "rank " + hello.value("rank", json()).dump() + " is not in 0.." +
                           std::to_string(n - 1));
    }
    if (accepted.count(static_cast<int>(rank))) {
      return refuse(p, "launch rank " + std::to_string(rank) + " is already connected");
    }
    const auto host = hello.find("host");
    if (host == hello.end() || !host->is_string() || !PlainHost(host->get<std::string>()) ||
        !integer("pid", &pid)) {
      return refuse(p, "the connect request lacks a plain \"host\" or an integer \"pid\"");
    }
    const std::string ok = DumpLine(json{{"ok", true}}) + "\n";
    SendBriefly(p.fd, ok);
    accepted[static_cast<int>(rank)] = std::make_unique<SocketRank>(
        p.fd, static_cast<int>(rank), host->get<std::string>(), static_cast<long>(pid));
    p.fd = -1;
  };
  while (static_cast<int>(accepted.size()) < n) {
    int wait_ms = MillisecondsUntil(deadline);
    if (wait_ms == 0) break;
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
    for (const Pending& p : pending) {
      fds.push_back({p.fd, POLLIN, 0});
      wait_ms = std::min(wait_ms, MillisecondsUntil(p.deadline));
    }
    const int ready = poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) return Status::IOError(Errno("coordinator: poll"));
    if (fds[0].revents & POLLIN) {
      for (;;) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        pending.push_back(Pending{fd, std::string(), DeadlineAfter(kHandshakeTimeout_s)});
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      Pending& p = pending[i - 1];
      if (fds[i].revents == 0) continue;
      char chunk[1024];
      const ssize_t got = read(p.fd, chunk, sizeof(chunk));
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (got <= 0) {
        close(p.fd);
        p.fd = -1;
        continue;
      }
      p.bytes.append(chunk, static_cast<size_t>(got));
      const size_t newline = p.bytes.find('\n');
      if (newline != std::string::npos) {
        judge(p, p.bytes.substr(0, newline));
      } else if (p.bytes.size() > kMaxHandshakeBytes) {
        refuse(p, "no connect line within " + std::to_string(kMaxHandshakeBytes) + " bytes");
      }
    }
    for (Pending& p : pending) {
      if (p.fd >= 0 && MillisecondsUntil(p.deadline) == 0) {
        refuse(p, "no connect line within " + std::to_string(int(kHandshakeTimeout_s)) + " s");
      }
    }
    pending.erase(
        std::remove_if(pending.begin(), pending.end(), [](const Pending& p) { return p.fd < 0; }),
        pending.end());
  }
  for (Pending& p : pending) close(p.fd);
  if (static_cast<int>(accepted.size()) < n) {
    std::string missing;
    int count = 0;
    for (int r = 0; r < n; ++r) {
      if (accepted.count(r)) continue;
      if (++count <= 16) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    if (count > 16) missing += ", ... (" + std::to_string(count) + " in all)";
    std::string text = "launch rank" + std::string(count == 1 ? " " : "s ") + missing +
                       " never connected to " + address_ + " within " +
                       std::to_string(static_cast<long>(timeout_s)) + " s";
    if (refusals_ > 0) {
      text += " (" + std::to_string(refusals_) + " connection" + (refusals_ == 1 ? "" : "s") +
              " refused, the last: " + last_refusal_ + ")";
    }
    return AdapterFaultStatus(-1, AdapterFault::kStartFailed, text);
  }
  ranks->clear();
  for (auto& [rank, endpoint] : accepted) ranks->push_back(std::move(endpoint));
  return Status::OK();
}

}  // namespace ckptspec
