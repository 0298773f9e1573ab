#include "targets/process/rank_group_pool.h"

#include <utility>

namespace ckptspec {

RankGroupPool::RankGroupPool(RankGroupOptions options, size_t max_idle_ranks)
    : options_(std::move(options)), max_idle_ranks_(max_idle_ranks) {}

size_t RankGroupPool::idle_ranks() const {
  size_t ranks = 0;
  for (const auto& group : idle_) ranks += static_cast<size_t>(group->world_size());
  return ranks;
}

RankGroupPool::~RankGroupPool() {
  for (auto& group : idle_) (void)group->Shutdown();  // no case is left to blame
}

Status RankGroupPool::Acquire(int world_size, std::unique_ptr<RankGroup>* group,
                              std::vector<pid_t>* started) {
  for (size_t i = 0; i < idle_.size(); ++i) {
    if (idle_[i]->world_size() != world_size) continue;
    *group = std::move(idle_[i]);
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
  if (!group->hello().reset || size > max_idle_ranks_) return group->Shutdown();
  const Status reset = group->Reset();
  if (!reset.ok()) {  // the group is dead; dropping it reaps it
    if (fault != nullptr) *fault = group->last_fault();
    return reset;
  }
  for (size_t i = 0; i < idle_.size(); ++i) {
    if (idle_[i]->world_size() != group->world_size()) continue;
    (void)idle_[i]->Shutdown();  // the one of this size idle longest gives way
    idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  while (!idle_.empty() && idle_ranks() + size > max_idle_ranks_) {
    (void)idle_.front()->Shutdown();
    idle_.erase(idle_.begin());
  }
  idle_.push_back(std::move(group));
  return Status::OK();
}

}  // namespace ckptspec
