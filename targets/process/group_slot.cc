#include "targets/process/group_slot.h"

#include <optional>
#include <utility>

#include "targets/process/protocol.h"

namespace ckptspec {

using nlohmann::json;

Status RanksErrors(const std::vector<json>& replies) {
  std::vector<std::pair<std::vector<size_t>, Status>> distinct;  // the ranks that said each
  for (size_t r = 0; r < replies.size(); ++r) {
    if (replies[r]["ok"].get<bool>()) continue;
    Status error;
    (void)ErrorFromJson(replies[r]["error"], &error);  // well-formed: RankGroup::Call checked it
    bool seen = false;
    for (auto& [ranks, status] : distinct) {
      if (status.code() == error.code() && status.message() == error.message()) {
        ranks.push_back(r);
        seen = true;
      }
    }
    if (!seen) distinct.push_back({{r}, error});
  }
  if (distinct.empty()) return Status::OK();
  std::string message;
  for (size_t i = 0; i < distinct.size(); ++i) {
    const auto& [ranks, status] = distinct[i];
    std::string who = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t k = 0; k < ranks.size(); ++k) who += (k ? ", " : "") + std::to_string(ranks[k]);
    message += (i == 0 ? "adapter " : "; ") + who + ": " + status.message();
  }
  Status combined;  // the first error's code with the whole message, through the wire form
  (void)ErrorFromJson(
      json{{"code", StatusCodeName(distinct[0].second.code())}, {"message", message}}, &combined);
  return combined;
}

GroupSlot::GroupSlot(RankGroupOptions group, std::shared_ptr<RankGroupPool> pool,
                     CaseEvents* events)
    : group_options_(std::move(group)), pool_(std::move(pool)), events_(events) {}

GroupSlot::~GroupSlot() {
  const Status released = Release();
  if (!released.ok() && events_ != nullptr && events_->release_fault.ok()) {
    events_->release_fault = released;
  }
}

Status GroupSlot::Release() {
  if (!group_) return Status::OK();
  Status s;
  if (pool_) {
    std::optional<AdapterFault> fault;
    s = pool_->Release(std::move(group_), &fault);
    // A reset that hung is a timeout of the case like any other (runner.h: not run again).
    if (fault == AdapterFault::kTimedOut && events_ != nullptr && events_->timed_out.ok()) {
      events_->timed_out = s;
    }
  } else {
    s = group_->Shutdown();
  }
  group_.reset();
  return s;
}

Status GroupSlot::NoteTimeout(Status s) {
  if (!s.ok() && events_ != nullptr && events_->timed_out.ok() && group_ &&
      group_->last_fault() == AdapterFault::kTimedOut) {
    events_->timed_out = s;
  }
  return s;
}

Status GroupSlot::Ensure(int world_size) {
  if (alive() && group_->world_size() == world_size) return Status::OK();
  CKPTSPEC_RETURN_IF_ERROR(Release());
  Status started;
  if (pool_) {
    started = pool_->Acquire(world_size, &group_, &started_pids_);
  } else {
    RankGroupOptions options = group_options_;
    options.world_size = world_size;
    group_ = std::make_unique<RankGroup>(std::move(options), &ids_);
    HelloReply hello;
    started = group_->Start(&hello);
    for (pid_t pid : group_->pids()) started_pids_.push_back(pid);
  }
  return NoteTimeout(std::move(started));
}

Status GroupSlot::Call(const std::string& op, std::vector<json> requests,
                       std::vector<json>* replies) {
  if (!group_) return Status::FailedPrecondition("adapter harness: " + op + " without a group");
  CKPTSPEC_RETURN_IF_ERROR(NoteTimeout(group_->Call(op, std::move(requests), replies)));
  return RanksErrors(*replies);
}

}  // namespace ckptspec
