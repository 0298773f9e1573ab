#include "model/rng_streams.h"

#include "model/content.h"

namespace ckptspec {

std::string DescribeCoords(const RankCoords& c) {
  return "(tp=" + std::to_string(c.tp) + ", pp=" + std::to_string(c.pp) +
         ", dp=" + std::to_string(c.dp) + ", cp=" + std::to_string(c.cp) +
         ", ep=" + std::to_string(c.ep) + ", etp=" + std::to_string(c.etp) + ")";
}

RankRngState InitialRankRng(uint64_t seed, const RankCoords& c, bool data_parallel_random_init) {
  uint64_t s = seed + 100u * static_cast<uint64_t>(c.pp);
  if (data_parallel_random_init) s += 10u * static_cast<uint64_t>(c.dp);
  RankRngState r;
  for (const char* name : kCpuStreams) r.streams[name] = RngStream{s, 0};
  r.trackers[kDataParallelTracker] = RngStream{s, 0};
  r.trackers[kModelParallelTracker] = RngStream{s + 2718u + static_cast<uint64_t>(c.tp), 0};
  r.trackers[kExpertParallelTracker] =
      RngStream{s + 1024u + 100u * static_cast<uint64_t>(c.ep) + static_cast<uint64_t>(c.etp), 0};
  return r;
}

uint64_t PeekDraw(const std::string& name, const RngStream& s) {
  return ContentBits(s.seed, KeyHash(name), s.counter);
}

Status Draw(RankRngState* state, const std::string& name, uint64_t* out) {
  for (auto* m : {&state->streams, &state->trackers}) {
    auto it = m->find(name);
    if (it == m->end()) continue;
    *out = PeekDraw(name, it->second);
    ++it->second.counter;
    return Status::OK();
  }
  return Status::NotFound("no RNG stream named '" + name + "'");
}

void AdvanceAll(RankRngState* state, uint64_t draws) {
  for (auto* m : {&state->streams, &state->trackers}) {
    for (auto& kv : *m) kv.second.counter += draws;
  }
}

namespace {

nlohmann::json StreamJson(const RngStream& s) {
  return nlohmann::json{{"seed", s.seed}, {"counter", s.counter}};
}

Status StreamFromJson(const nlohmann::json& j, const std::string& name, RngStream* out) {
  if (!j.is_object()) return Status::Corruption("rng stream '" + name + "' is not an object");
  for (const char* f : {"seed", "counter"}) {
    auto it = j.find(f);
    if (it == j.end() || !it->is_number_unsigned()) {
      return Status::Corruption("rng stream '" + name + "': '" + f +
                                "' is missing or not a non-negative integer");
    }
  }
  out->seed = j["seed"].get<uint64_t>();
  out->counter = j["counter"].get<uint64_t>();
  return Status::OK();
}

}  // namespace

nlohmann::json RankRngStateToJson(const RankRngState& s) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, st] : s.streams) j[name] = StreamJson(st);
  nlohmann::json t = nlohmann::json::object();
  for (const auto& [name, st] : s.trackers) t[name] = StreamJson(st);
  j["rng_tracker_states"] = t;
  return j;
}

Status RankRngStateFromJson(const nlohmann::json& j, RankRngState* out) {
  if (!j.is_object()) return Status::Corruption("rng state is not an object");
  RankRngState r;
  for (const char* name : kCpuStreams) {
    auto it = j.find(name);
    if (it == j.end()) return Status::Corruption(std::string("rng state lacks '") + name + "'");
    CKPTSPEC_RETURN_IF_ERROR(StreamFromJson(*it, name, &r.streams[name]));
  }
  auto t = j.find("rng_tracker_states");
  if (t == j.end() || !t->is_object()) {
    return Status::Corruption("rng state lacks the object 'rng_tracker_states'");
  }
  for (auto it = t->begin(); it != t->end(); ++it) {
    CKPTSPEC_RETURN_IF_ERROR(StreamFromJson(it.value(), it.key(), &r.trackers[it.key()]));
  }
  for (const char* name : {kDataParallelTracker, kModelParallelTracker, kExpertParallelTracker}) {
    if (r.trackers.count(name) == 0) {
      return Status::Corruption(std::string("rng_tracker_states lacks '") + name + "'");
    }
  }
  *out = std::move(r);
  return Status::OK();
}

}  // namespace ckptspec
