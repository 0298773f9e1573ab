#include "targets/process/rank_group_pool.h"

#include <utility>

#include "targets/process/process_tree.h"

namespace ckptspec {

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

size_t RankGroupPool::idle_ranks() const {
  size_t ranks = 0;
  for (const IdleGroup& idle : idle_) ranks += static_cast<size_t>(idle.group->world_size());
  return ranks;
}

uint64_t RankGroupPool::idle_bytes() const {
  uint64_t bytes = 0;
  for (const IdleGroup& idle : idle_) bytes += idle.bytes;
  return bytes;
}

RankGroupPool::~RankGroupPool() {
  for (IdleGroup& idle : idle_) (void)idle.group->Shutdown();  // no case is left to blame
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
  RankGroupOptions options = options_;
  options.world_size = world_size;
  *group = std::make_unique<RankGroup>(std::move(options), &ids_);
  ++started_;
  HelloReply hello;
  const Status s = (*group)->Start(&hello);
  if (started != nullptr) {
    for (pid_t pid : (*group)->pids()) started->push_back(pid);
  }
  return s;
}

Status RankGroupPool::Release(std::unique_ptr<RankGroup> group,
                              std::optional<AdapterFault>* fault) {
  if (fault != nullptr) fault->reset();
  if (!group || !group->alive()) return Status::OK();
  const size_t size = static_cast<size_t>(group->world_size());
  if (!group->hello().reset || size > bounds_.max_ranks) return group->Shutdown();
  const Status reset = group->Reset();
  if (!reset.ok()) {  // the group is dead; dropping it reaps it
    if (fault != nullptr) *fault = group->last_fault();
    return reset;
  }
  const std::optional<uint64_t> measured = measure_(*group);
  const uint64_t bytes = measured ? *measured : bounds_.unmeasured_rank_bytes * size;
  if (bytes > bounds_.max_bytes) return group->Shutdown();
  for (size_t i = 0; i < idle_.size(); ++i) {
    if (idle_[i].group->world_size() != group->world_size()) continue;
    (void)idle_[i].group->Shutdown();  // the one of this size idle longest gives way
    idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  idle_.push_back(IdleGroup{std::move(group), bytes});
  // Over a bound, the group whose world size was asked for least gives way (among equals the one
  // idle longest: idle_ is in that order, the group just released last). Only the released
  // group's own shutdown is this call's outcome.
  Status outcome;
  while (idle_ranks() > bounds_.max_ranks || idle_bytes() > bounds_.max_bytes) {
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
