#include "model/rng_streams.h"

#include "model/content.h"
#include "model/json_fields.h"

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

Status ReadStream(const JsonField& f, RngStream* out) {
  CKPTSPEC_RETURN_IF_ERROR(f.Member("seed").GetUint64(&out->seed));
  return f.Member("counter").GetUint64(&out->counter);
}

Status ReadRankRngState(const JsonField& f, RankRngState* out) {
  RankRngState r;
  for (const char* name : kCpuStreams) {
    CKPTSPEC_RETURN_IF_ERROR(ReadStream(f.Member(name), &r.streams[name]));
  }
  const JsonField trackers = f.Member("rng_tracker_states");
  for (const char* name : {kDataParallelTracker, kModelParallelTracker, kExpertParallelTracker}) {
    CKPTSPEC_RETURN_IF_ERROR(trackers.Member(name).ExpectPresent());
  }
  CKPTSPEC_RETURN_IF_ERROR(
      trackers.ForEachMember([&r](const std::string& name, const JsonField& stream) {
        return ReadStream(stream, &r.trackers[name]);
      }));
  *out = std::move(r);
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
  return AsCorruption(ReadRankRngState(JsonField(j, "rng_state"), out));
}

}  // namespace ckptspec
