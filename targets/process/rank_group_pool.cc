#include "targets/process/rank_group_pool.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "targets/process/cleanup_registry.h"
#include "targets/process/process_tree.h"

namespace ckptspec {
namespace {

constexpr double kFreeRankGrace_s = 5;

// Ends a rank that is in no group: end of file on its requests (the protocol's shutdown), a few
// seconds to leave, then killed (a local process) or closed (a launched one).
void EndFreeRank(RankEndpoint* rank) {
  rank->CloseRequests();
  rank->WaitEnded(kFreeRankGrace_s);
  rank->End();
}

// "launch ranks 2, 3" / "ranks started here" of a group, for the record of what a launched pool
// lost.
std::string GroupRanks(const RankGroup& group) {
  std::string out;
  for (int r = 0; r < group.world_size(); ++r) {
    const std::string where = group.rank(r).Where();
    out += (out.empty() ? "" : "; ") + (where.empty() ? "rank " + std::to_string(r) : where);
  }
  return out;
}

}  // namespace

std::optional<uint64_t> ResidentGroupBytes(const RankGroup& group) {
  uint64_t total = 0;
  for (pid_t pid : group.pids()) {
    const std::optional<uint64_t> bytes = ResidentTreeBytes(pid);
    if (!bytes) return std::nullopt;
    total += *bytes;
  }
  return total;
}

RankGroupPool::RankGroupPool(RankGroupOptions options, IdleBounds bounds,
                             GroupMemoryMeasure measure)
    : options_(std::move(options)), bounds_(bounds), measure_(std::move(measure)) {}

std::shared_ptr<RankGroupPool> RankGroupPool::Launched(
    RankGroupOptions options, std::vector<std::unique_ptr<SocketRank>> ranks) {
  options.launcher_store = true;
  constexpr uint64_t kNoBound = std::numeric_limits<uint64_t>::max();
  auto pool = std::make_shared<RankGroupPool>(
      std::move(options), IdleBounds{std::numeric_limits<size_t>::max(), kNoBound, 0},
      [](const RankGroup&) { return std::optional<uint64_t>(0); });
  pool->launched_ = true;
  pool->launched_ranks_ = ranks.size();
  for (auto& rank : ranks) pool->free_.push_back(FreeRank{std::move(rank), 0});
  return pool;
}

size_t RankGroupPool::idle_ranks() const {
  size_t ranks = free_.size();
  for (const IdleGroup& idle : idle_) ranks += static_cast<size_t>(idle.group->world_size());
  return ranks;
}

uint64_t RankGroupPool::idle_bytes() const {
  uint64_t bytes = 0;
  for (const IdleGroup& idle : idle_) bytes += idle.bytes;
  for (const FreeRank& rank : free_) bytes += rank.bytes;
  return bytes;
}

RankGroupPool::~RankGroupPool() {
  for (IdleGroup& idle : idle_) (void)idle.group->Shutdown();  // no case is left to blame
  for (FreeRank& rank : free_) EndFreeRank(rank.rank.get());
  KillLeftovers(FindLeftoverChildren());
}

Status RankGroupPool::Acquire(int world_size, std::unique_ptr<RankGroup>* group,
                              std::vector<pid_t>* started) {
  ++asked_[world_size];
  for (size_t i = 0; i < idle_.size(); ++i) {
    if (idle_[i].group->world_size() != world_size) continue;
    *group = std::move(idle_[i].group);
    idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
    return Status::OK();
  }
  if (regroup_ || launched_) return Regroup(world_size, group, started);
  RankGroupOptions options = options_;
  options.world_size = world_size;
  *group = std::make_unique<RankGroup>(std::move(options), &ids_);
  ++started_;
  HelloReply hello;
  const Status s = (*group)->Start(&hello);
  if (started != nullptr) {
    for (pid_t pid : (*group)->pids()) started->push_back(pid);
  }
  if (s.ok() && hello.regroup) regroup_ = true;
  return s;
}

std::vector<std::unique_ptr<RankEndpoint>> RankGroupPool::TakeFree(size_t n) {
  std::vector<size_t> order(free_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (launched_) {
    // Round-robin over the hosts, hosts and ranks in launch order: the k-th rank of each host
    // comes before the (k+1)-th of any.
    std::map<std::string, int> host_order, seen;
    std::vector<std::pair<std::pair<int, int>, size_t>> keyed;
    std::vector<size_t> by_launch = order;
    const auto launch_rank = [&](size_t i) {
      return static_cast<const SocketRank&>(*free_[i].rank).launch_rank();
    };
    std::sort(by_launch.begin(), by_launch.end(),
              [&](size_t a, size_t b) { return launch_rank(a) < launch_rank(b); });
    for (size_t i : by_launch) {
      const std::string& host = static_cast<const SocketRank&>(*free_[i].rank).host();
      host_order.emplace(host, static_cast<int>(host_order.size()));
      keyed.push_back({{seen[host]++, host_order[host]}, i});
    }
    std::sort(keyed.begin(), keyed.end());
    for (size_t k = 0; k < keyed.size(); ++k) order[k] = keyed[k].second;
  }
  std::vector<std::unique_ptr<RankEndpoint>> taken;
  for (size_t k = 0; k < n; ++k) taken.push_back(std::move(free_[order[k]].rank));
  free_.erase(std::remove_if(free_.begin(), free_.end(), [](const FreeRank& f) { return !f.rank; }),
              free_.end());
  return taken;
}

Status RankGroupPool::Regroup(int world_size, std::unique_ptr<RankGroup>* group,
                              std::vector<pid_t>* started) {
  const size_t n = static_cast<size_t>(world_size);
  // Idle groups give way, the size asked for least first, among equals the one idle longest.
  while (free_.size() < n && !idle_.empty()) {
    size_t victim = 0;
    for (size_t i = 1; i < idle_.size(); ++i) {
      if (asked_[idle_[i].group->world_size()] < asked_[idle_[victim].group->world_size()]) {
        victim = i;
      }
    }
    IdleGroup broken = std::move(idle_[victim]);
    idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(victim));
    const uint64_t share = broken.bytes / static_cast<uint64_t>(broken.group->world_size());
    for (auto& rank : broken.group->TakeRanks()) free_.push_back(FreeRank{std::move(rank), share});
  }
  if (free_.size() < n && launched_) {
    std::string text = "a case needs " + std::to_string(n) + " ranks; the launched pool has " +
                       std::to_string(launched_ranks_) + " (" + std::to_string(free_.size()) +
                       " of them idle)";
    for (const std::string& lost : lost_) text += "; lost: " + lost;
    return Status::FailedPrecondition(text);
  }
  RankGroupOptions options = options_;
  options.world_size = world_size;
  while (free_.size() < n) {
    // Its start environment matters little: the hello of its group names its rank and store.
    const int slot = static_cast<int>(free_.size());
    std::unique_ptr<ProcessRank> process;
    const Status s = StartRankProcess(options_, slot, world_size, PickFreePort(), &process);
    if (started != nullptr && process->local_pid() > 0) started->push_back(process->local_pid());
    if (!s.ok()) return AdapterFaultStatus(slot, AdapterFault::kStartFailed, s.message());
    ++ranks_started_;
    free_.push_back(FreeRank{std::move(process), 0});
  }
  *group = std::make_unique<RankGroup>(std::move(options), &ids_, TakeFree(n));
  ++regrouped_;
  HelloReply hello;
  Status s = (*group)->Start(&hello);
  if (s.ok() && !(hello.reset && hello.regroup) && launched_) {
    s = (*group)->Fault(-1, AdapterFault::kMalformedReply,
                        "ranks an outside launcher started must declare reset and regroup in "
                        "hello (docs/PROTOCOL.md, revision 6)");
  }
  if (!s.ok() && launched_) NoteLost(**group, s);
  return s;
}

void RankGroupPool::NoteLost(const RankGroup& group, const Status& why) {
  lost_.push_back(GroupRanks(group) + " (" + why.message() + ")");
}

Status RankGroupPool::Release(std::unique_ptr<RankGroup> group,
                              std::optional<AdapterFault>* fault) {
  if (fault != nullptr) fault->reset();
  if (!group) return Status::OK();
  if (!group->alive()) {
    if (launched_ && group->last_fault()) {
      lost_.push_back(GroupRanks(*group) + " (" + group->last_fault_message() + ")");
    }
    return Status::OK();
  }
  const size_t size = static_cast<size_t>(group->world_size());
  if (!group->hello().reset || size > bounds_.max_ranks) return group->Shutdown();
  const Status reset = group->Reset();
  if (!reset.ok()) {  // the group is dead; dropping it reaps it
    if (fault != nullptr) *fault = group->last_fault();
    if (launched_) NoteLost(*group, reset);
    return reset;
  }
  const std::optional<uint64_t> measured = measure_(*group);
  const uint64_t bytes = measured ? *measured : bounds_.unmeasured_rank_bytes * size;
  if (bytes > bounds_.max_bytes) return group->Shutdown();
  for (size_t i = 0; i < idle_.size(); ++i) {
    if (idle_[i].group->world_size() != group->world_size()) continue;
    // The one of this size idle longest gives way: its ranks are freed, or shut down.
    if (regroup_ || launched_) {
      const uint64_t share = idle_[i].bytes / size;
      for (auto& rank : idle_[i].group->TakeRanks()) {
        free_.push_back(FreeRank{std::move(rank), share});
      }
    } else {
      (void)idle_[i].group->Shutdown();  // idle: no case is left to blame for its fault
    }
    idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  idle_.push_back(IdleGroup{std::move(group), bytes});
  return Trim();
}

Status RankGroupPool::Trim() {
  // Over a bound, free ranks give way first (freed longest ago first), then the group whose world
  // size was asked for least (among equals the one idle longest: idle_ is in that order, the group
  // just released last). Only the released group's own shutdown is this call's outcome.
  Status outcome;
  while (idle_ranks() > bounds_.max_ranks || idle_bytes() > bounds_.max_bytes) {
    if (!free_.empty()) {
      EndFreeRank(free_.front().rank.get());
      free_.erase(free_.begin());
      continue;
    }
    size_t victim = 0;
    for (size_t i = 1; i < idle_.size(); ++i) {
      if (asked_[idle_[i].group->world_size()] < asked_[idle_[victim].group->world_size()]) {
        victim = i;
      }
    }
    const Status down = idle_[victim].group->Shutdown();
    if (victim + 1 == idle_.size()) outcome = down;
    idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(victim));
  }
  return outcome;
}

}  // namespace ckptspec
