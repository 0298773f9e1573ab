#include "targets/process/rank_group.h"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <sstream>
#include <string_view>

#include "model/json_util.h"
#include "targets/process/poll_deadline.h"
#include "targets/process/cleanup_registry.h"

namespace ckptspec {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A reply line longer than this is garbage (entry bytes travel in files, not in lines).
constexpr size_t kMaxLineBytes = size_t{256} << 20;
constexpr double kShutdownGrace_s = 5;
constexpr size_t kLogTailBytes = 600;
// Deepest nesting of a reply's JSON.
constexpr int kMaxReplyDepth = 512;

void IgnoreSigpipeOnce() {
  static const bool done = [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
    return true;
  }();
  (void)done;  // the static's initializer is the run-once; its value is not needed
}

// The start of `text`, control characters escaped, for messages.
std::string Preview(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < 80; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return "'" + out + (text.size() > 80 ? "...'" : "'");
}

// The pipes of a rank the harness polls.
enum class Stream { kStdin, kStdout, kStderr };

// The deadline of hello, which also covers the processes' start (a Python rank importing torch
// takes seconds of CPU): the request's deadline per round of as many ranks as there are cores,
// since more ranks than cores start in turns.
double HelloTimeout(const RankGroupOptions& options) {
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const long rounds = (options.world_size + cores - 1) / cores;
  return options.timeout_s * static_cast<double>(std::max(1L, rounds));
}

// The capabilities a hello reply declares, "reset" included, as the adapter wrote them.
json DeclaredCapabilities(const HelloReply& hello) {
  json reply = json::object();
  HelloReplyToJson(hello, &reply);
  return reply["capabilities"];
}

}  // namespace

Status StartRankProcess(const RankGroupOptions& options, int rank, int world_size, int master_port,
                        std::unique_ptr<ProcessRank>* out) {
  *out = std::make_unique<ProcessRank>();
  std::vector<std::string> env = {"RANK=" + std::to_string(rank),
                                  "WORLD_SIZE=" + std::to_string(world_size),
                                  "LOCAL_RANK=" + std::to_string(rank),
                                  "MASTER_ADDR=127.0.0.1",
                                  "MASTER_PORT=" + std::to_string(master_port),
                                  "CKPTSPEC_PROTOCOL=" + std::to_string(kProtocolVersion)};
  env.insert(env.end(), options.extra_env.begin(), options.extra_env.end());
  return (*out)->Start(options.command, env);
}

RankGroup::RankGroup(RankGroupOptions options, RequestIds* ids)
    : options_(std::move(options)), ids_(ids) {}

RankGroup::RankGroup(RankGroupOptions options, RequestIds* ids,
                     std::vector<std::unique_ptr<RankEndpoint>> ranks)
    : options_(std::move(options)), ids_(ids), ranks_(std::move(ranks)), given_ranks_(true) {}

std::vector<std::unique_ptr<RankEndpoint>> RankGroup::TakeRanks() {
  alive_ = false;
  replies_.clear();
  return std::move(ranks_);
}

RankGroup::~RankGroup() {
  KillAll();
  KillLeftovers(FindLeftoverChildren());
}

std::vector<pid_t> RankGroup::pids() const {
  std::vector<pid_t> out;
  for (const auto& r : ranks_) {
    if (r->local_pid() > 0) out.push_back(r->local_pid());
  }
  return out;
}

void RankGroup::KillAll() {
  for (auto& r : ranks_) r->End();
  alive_ = false;
}

Status RankGroup::Fault(int rank, AdapterFault fault, const std::string& detail) {
  std::string text = detail;
  if (rank >= 0 && rank < static_cast<int>(ranks_.size())) {
    RankEndpoint& endpoint = *ranks_[rank];
    if (!endpoint.Where().empty()) text += " (" + endpoint.Where() + ")";
    endpoint.DrainLog();
    const std::string tail = endpoint.log().TailLine(kLogTailBytes);
    if (!endpoint.LogElsewhere().empty()) {
      text += "; " + endpoint.LogElsewhere();
    } else {
      text += tail.empty() ? "; stderr empty" : "; stderr: " + tail;
    }
  }
  KillAll();
  last_fault_ = fault;
  last_fault_rank_ = rank;
  const Status status = AdapterFaultStatus(rank, fault, text);
  last_fault_message_ = status.message();
  return status;
}

Status RankGroup::Start(HelloReply* hello) {
  IgnoreSigpipeOnce();
  if (!name_.empty()) return Status::FailedPrecondition("adapter group already started");
  const int n = options_.world_size;
  if (n < 1) return Status::InvalidArgument("adapter group: world size " + std::to_string(n));
  if (given_ranks_ && ranks_.size() != static_cast<size_t>(n)) {
    return Status::InvalidArgument("adapter group of " + std::to_string(n) + " ranks given " +
                                   std::to_string(ranks_.size()));
  }
  name_ = "g" + std::to_string(ids_->next);
  json group = {{"name", name_}};
  if (!options_.launcher_store) {
    port_ = PickFreePort();
    if (port_ == 0) return Fault(0, AdapterFault::kStartFailed, "no free TCP port on 127.0.0.1");
    group["store"] = "127.0.0.1:" + std::to_string(port_);
  }
  replies_.assign(n, ReplyLines(kMaxLineBytes));
  for (int r = 0; r < n && !given_ranks_; ++r) {
    std::unique_ptr<ProcessRank> process;
    const Status s = StartRankProcess(options_, r, n, port_, &process);
    ranks_.push_back(std::move(process));
    if (!s.ok()) return Fault(r, AdapterFault::kStartFailed, s.message());
  }
  alive_ = true;
  std::vector<json> requests(n);
  for (int r = 0; r < n; ++r) {
    requests[r] = {{"protocol", kProtocolVersion},
                   {"revision", kProtocolRevision},
                   {"rank", r},
                   {"world_size", n},
                   {"group", group}};
  }
  std::vector<json> replies;
  CKPTSPEC_RETURN_IF_ERROR(
      Call("hello", std::move(requests), &replies,
           given_ranks_ && options_.launcher_store ? options_.timeout_s : HelloTimeout(options_)));
  for (int r = 0; r < n; ++r) {
    if (!replies[r]["ok"].get<bool>()) {
      Status refused;
      (void)ErrorFromJson(replies[r]["error"], &refused);  // well-formed: Call checked it
      KillAll();
      return refused.WithContext("adapter rank " + std::to_string(r) + " refused hello");
    }
    HelloReply h;
    const Status s = HelloReplyFromJson(replies[r], &h);
    if (!s.ok()) return Fault(r, AdapterFault::kMalformedReply, "reply to hello: " + s.message());
    if (r == 0) {
      hello_ = h;
      continue;
    }
    const json declared = DeclaredCapabilities(h), by_rank0 = DeclaredCapabilities(hello_);
    if (declared != by_rank0) {
      return Fault(r, AdapterFault::kMalformedReply,
                   "reply to hello: declares capabilities " + DumpLine(declared) +
                       ", rank 0 declares " + DumpLine(by_rank0));
    }
  }
  *hello = hello_;
  return Status::OK();
}

Status RankGroup::Reset() {
  if (!hello_.reset)
    return Status::FailedPrecondition("adapter group: its ranks did not declare reset");
  std::vector<json> requests(ranks_.size(), json::object()), replies;
  CKPTSPEC_RETURN_IF_ERROR(Call("reset", std::move(requests), &replies));
  for (size_t r = 0; r < replies.size(); ++r) {
    if (replies[r]["ok"].get<bool>()) continue;
    Status refused;
    (void)ErrorFromJson(replies[r]["error"], &refused);  // well-formed: Call checked it
    KillAll();
    return refused.WithContext("adapter rank " + std::to_string(r) + " refused reset");
  }
  const std::vector<LeftoverProcess> leftovers = FindLeftoverChildren();
  if (leftovers.empty()) return Status::OK();
  const std::string detail = DescribeLeftovers(leftovers) + " still ran after reset; killed";
  KillLeftovers(leftovers);
  return Fault(-1, AdapterFault::kLeftBehind, detail);
}

Status RankGroup::Call(const std::string& op, std::vector<json> requests,
                       std::vector<json>* replies, double timeout_s) {
  if (alive_ && requests.size() != ranks_.size()) {
    return Status::InvalidArgument("adapter call '" + op + "': " + std::to_string(requests.size()) +
                                   " requests for " + std::to_string(ranks_.size()) + " ranks");
  }
  return CallWithLines(
      op,
      [&](size_t r, int64_t id) {
        requests[r]["id"] = id;
        requests[r]["op"] = op;
        return DumpLine(requests[r]);
      },
      replies, timeout_s);
}

Status RankGroup::CallWithLines(const std::string& op, const RequestLine& line_of,
                                std::vector<json>* replies, double timeout_s) {
  if (!alive_) {
    return Status::FailedPrecondition("adapter group is not running (started: " +
                                      std::string(name_.empty() ? "no" : "yes, then ended") + ")");
  }
  const int64_t id = ids_->next++;
  std::vector<std::string> lines(ranks_.size());
  for (size_t r = 0; r < ranks_.size(); ++r) {
    lines[r] = line_of(r, id);
    lines[r] += '\n';
  }
  const std::string during = op + " (request " + std::to_string(id) + ")";
  std::vector<std::string> raw;
  CKPTSPEC_RETURN_IF_ERROR(
      Exchange(during, lines, timeout_s > 0 ? timeout_s : options_.timeout_s, &raw));
  replies->assign(raw.size(), json());
  for (size_t r = 0; r < raw.size(); ++r) {
    CKPTSPEC_RETURN_IF_ERROR(CheckReply(static_cast<int>(r), id, during, raw[r], &(*replies)[r]));
  }
  return Status::OK();
}

Status RankGroup::Exchange(const std::string& during, const std::vector<std::string>& lines,
                           double timeout_s, std::vector<std::string>* out) {
  const size_t n = ranks_.size();
  for (size_t r = 0; r < n; ++r) {
    if (!replies_[r].empty()) {
      return Fault(
          static_cast<int>(r), AdapterFault::kGarbage,
          "output nobody asked for, before " + during + ": " + Preview(replies_[r].pending()));
    }
  }
  out->assign(n, std::string());
  std::vector<size_t> written(n, 0);
  std::vector<bool> replied(n, false);
  const auto deadline = DeadlineAfter(timeout_s);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, Stream>> who;
    for (size_t r = 0; r < n; ++r) {
      if (ranks_[r]->log_fd() >= 0) {
        fds.push_back({ranks_[r]->log_fd(), POLLIN, 0});
        who.push_back({r, Stream::kStderr});
      }
      if (written[r] < lines[r].size()) {
        fds.push_back({ranks_[r]->request_fd(), POLLOUT, 0});
        who.push_back({r, Stream::kStdin});
      }
      if (!replied[r]) {
        fds.push_back({ranks_[r]->reply_fd(), POLLIN, 0});
        who.push_back({r, Stream::kStdout});
      }
    }
    if (who.size() == static_cast<size_t>(std::count_if(who.begin(), who.end(), [](const auto& w) {
          return w.second == Stream::kStderr;
        }))) {
      return Status::OK();  // every request written, every reply read
    }
    const int wait_ms = MillisecondsUntil(deadline);
    if (wait_ms == 0) {
      for (size_t r = 0; r < n; ++r) {
        if (!replied[r] || written[r] < lines[r].size()) {
          std::ostringstream detail_text;
          detail_text << "no reply within " << timeout_s << " s during " << during;
          std::string detail = detail_text.str();
          if (written[r] < lines[r].size()) detail += " (it had not read the whole request)";
          return Fault(static_cast<int>(r), AdapterFault::kTimedOut, detail);
        }
      }
    }
    const int ready = poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      const std::string error = strerror(errno);
      KillAll();
      return Status::IOError("adapter harness: poll: " + error);
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const size_t r = who[i].first;
      const int rank = static_cast<int>(r);
      if (who[i].second == Stream::kStderr) {
        ranks_[r]->DrainLog();
        continue;
      }
      if (who[i].second ==
          Stream::kStdin) {  // the rank's stdin can take more of the request (or is gone)
        const ssize_t w =
            write(fds[i].fd, lines[r].data() + written[r], lines[r].size() - written[r]);
        if (w > 0) {
          written[r] += static_cast<size_t>(w);
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
          return DeadRank(rank, during);
        }
        continue;
      }
      char chunk[65536];
      const ssize_t got = read(fds[i].fd, chunk, sizeof(chunk));
      if (got < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return DeadRank(rank, during);
      }
      if (got == 0) return DeadRank(rank, during);
      replies_[r].Append(chunk, static_cast<size_t>(got));
      if (replies_[r].TakeLine(&(*out)[r])) {
        replied[r] = true;
        if (!replies_[r].empty()) {
          return Fault(rank, AdapterFault::kGarbage,
                       "more than one line in reply to " + during + ": then " +
                           Preview(replies_[r].pending()));
        }
      } else if (replies_[r].too_long()) {
        return Fault(rank, AdapterFault::kGarbage,
                     "a reply line longer than " + std::to_string(kMaxLineBytes) +
                         " bytes during " + during + ": " + Preview(replies_[r].pending()));
      }
    }
  }
}

Status RankGroup::DeadRank(int rank, const std::string& during) {
  const auto [fault, detail] = ranks_[rank]->Ended(during);
  return Fault(rank, fault, detail);
}

Status RankGroup::CheckReply(int rank, int64_t id, const std::string& during,
                             const std::string& line, json* reply) {
  // The project's reader refuses a reply deeper than kMaxReplyDepth while reading it, before any
  // tree that deep exists (copies recurse once per level), and a key twice in one object.
  json j;
  JsonLimits limits;
  limits.max_depth = kMaxReplyDepth;
  const Status read = ParseJson(line, limits, &j);
  if (!read.ok() || !j.is_object()) {
    return Fault(rank, AdapterFault::kGarbage,
                 "reply to " + during + " is not a JSON object: " + Preview(line) +
                     (read.ok() ? std::string() : " (" + read.message() + ")"));
  }
  const auto integer = [&](const char* name, int64_t* value) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_number_integer()) return false;
    *value = it->get<int64_t>();
    return true;
  };
  int64_t got_id = 0, got_rank = 0;
  if (!integer("id", &got_id)) {
    return Fault(rank, AdapterFault::kMalformedReply,
                 "reply to " + during + " has no integer \"id\": " + Preview(line));
  }
  if (got_id != id) {
    return Fault(
        rank, AdapterFault::kWrongRequest,
        "answered request " + std::to_string(got_id) + " while " + during + " was pending");
  }
  if (!integer("rank", &got_rank)) {
    return Fault(rank, AdapterFault::kMalformedReply,
                 "reply to " + during + " has no integer \"rank\": " + Preview(line));
  }
  if (got_rank != rank) {
    return Fault(rank, AdapterFault::kWrongRank,
                 "answered " + during + " as rank " + std::to_string(got_rank));
  }
  auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean()) {
    return Fault(rank, AdapterFault::kMalformedReply,
                 "reply to " + during + " has no boolean \"ok\": " + Preview(line));
  }
  if (!ok->get<bool>()) {
    Status error;
    auto e = j.find("error");
    const Status form = e == j.end() ? Status::InvalidArgument("missing member \"error\"")
                                     : ErrorFromJson(*e, &error);
    if (!form.ok()) {
      return Fault(rank, AdapterFault::kMalformedReply,
                   "failed reply to " + during + ": " + form.message());
    }
  }
  *reply = std::move(j);
  return Status::OK();
}

Status RankGroup::Shutdown() {
  const bool was_alive = alive_;
  if (alive_) {
    std::vector<json> requests(ranks_.size(), json::object()), replies;
    // A polite request: whatever it comes to, the ranks are closed, awaited and killed below,
    // and what they leave behind is the verdict.
    (void)Call("shutdown", std::move(requests), &replies,
               std::min(kShutdownGrace_s, options_.timeout_s));
  }
  const auto deadline = Clock::now() + std::chrono::seconds(static_cast<int>(kShutdownGrace_s));
  for (auto& r : ranks_) {
    r->CloseRequests();
    r->WaitEnded(std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count()));
  }
  KillAll();
  const std::vector<LeftoverProcess> leftovers = FindLeftoverChildren();
  if (leftovers.empty() || !was_alive) {
    KillLeftovers(leftovers);
    return Status::OK();
  }
  const std::string detail = DescribeLeftovers(leftovers) + " still ran after shutdown; killed";
  KillLeftovers(leftovers);
  return Fault(-1, AdapterFault::kLeftBehind, detail);
}

}  // namespace ckptspec
