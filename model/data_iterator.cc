#include "model/data_iterator.h"

#include <numeric>

#include "model/content.h"

namespace ckptspec {

namespace {
constexpr uint64_t kShuffleDomain = 0x53485546464C4531ull;  // "SHUFFLE1"
constexpr uint64_t kShardDomain = 0x5348415244533031ull;    // "SHARDS01"
}  // namespace

const char* DataSamplerName(DataSampler s) {
  return s == DataSampler::kPerRank ? "per_rank" : "global";
}

bool ParseDataSampler(const std::string& name, DataSampler* out) {
  for (DataSampler s : {DataSampler::kGlobal, DataSampler::kPerRank}) {
    if (name == DataSamplerName(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

int64_t ShardSize(int64_t num_samples, int64_t shard, int64_t num_shards) {
  return num_samples / num_shards + (shard < num_samples % num_shards ? 1 : 0);
}

Status ValidateDataConfig(const DataConfig& c) {
  auto positive = [](const char* f, int64_t v) -> Status {
    if (v > 0) return Status::OK();
    return Status::InvalidArgument(std::string("data: ") + f + " = " + std::to_string(v) +
                                   " must be positive");
  };
  CKPTSPEC_RETURN_IF_ERROR(positive("num_samples", c.num_samples));
  CKPTSPEC_RETURN_IF_ERROR(positive("global_batch_size", c.global_batch_size));
  CKPTSPEC_RETURN_IF_ERROR(positive("micro_batch_size", c.micro_batch_size));
  CKPTSPEC_RETURN_IF_ERROR(positive("dp_size", c.dp_size));
  if (c.sampler == DataSampler::kPerRank && c.num_samples < c.dp_size) {
    return Status::InvalidArgument(
        "data: num_samples = " + std::to_string(c.num_samples) +
        " leaves a per_rank loader's shard empty under dp_size = " + std::to_string(c.dp_size));
  }
  if (c.global_batch_size % (c.micro_batch_size * c.dp_size) != 0) {
    return Status::InvalidArgument(
        "data: global_batch_size = " + std::to_string(c.global_batch_size) +
        " is not divisible by micro_batch_size * dp_size = " +
        std::to_string(c.micro_batch_size * c.dp_size));
  }
  return Status::OK();
}

int64_t GradAccumSteps(const DataConfig& c) {
  return c.global_batch_size / (c.micro_batch_size * c.dp_size);
}

std::vector<int64_t> Permutation(uint64_t seed, int64_t epoch, int64_t n) {
  std::vector<int64_t> perm(static_cast<size_t>(n > 0 ? n : 0));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  const uint64_t stream = Mix64(kShuffleDomain ^ Mix64(static_cast<uint64_t>(epoch)));
  for (int64_t i = n - 1; i >= 1; --i) {
    const uint64_t j =
        ContentBits(seed, stream, static_cast<uint64_t>(i)) % static_cast<uint64_t>(i + 1);
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

DataIteratorState InitialDataIterator(const DataConfig& c) {
  DataIteratorState s;
  s.seed = c.seed;
  if (c.sampler == DataSampler::kPerRank) {
    for (int64_t r = 0; r < c.dp_size; ++r) {
      RankLoaderState l;
      l.shard = r;
      l.num_shards = c.dp_size;
      s.loaders.push_back(l);
    }
  }
  return s;
}

namespace {

// The samples at the given sequence positions (permutations cached per epoch).
std::vector<int64_t> SamplesAt(const DataConfig& c, const std::vector<int64_t>& positions) {
  std::vector<int64_t> out;
  out.reserve(positions.size());
  int64_t cached_epoch = -1;
  std::vector<int64_t> perm;
  for (int64_t p : positions) {
    const int64_t epoch = p / c.num_samples;
    if (epoch != cached_epoch) {
      if (c.shuffle) {
        perm = Permutation(c.seed, epoch, c.num_samples);
      } else {
        perm.resize(static_cast<size_t>(c.num_samples));
        std::iota(perm.begin(), perm.end(), int64_t{0});
      }
      cached_epoch = epoch;
    }
    out.push_back(perm[static_cast<size_t>(p % c.num_samples)]);
  }
  return out;
}

}  // namespace

std::vector<int64_t> SequenceSamples(const DataConfig& c, int64_t first, int64_t count) {
  std::vector<int64_t> positions(static_cast<size_t>(count));
  std::iota(positions.begin(), positions.end(), first);
  return SamplesAt(c, positions);
}

std::vector<int64_t> FlatSamplesOfStep(const DataConfig& c, int64_t consumed) {
  DataIteratorState correct;
  correct.consumed_samples = consumed;
  return FlatSamplesOfStep(c, correct);
}

int64_t SamplerPosition(const DataConfig& c, const DataIteratorState& s, int64_t consumed) {
  if (s.pass_origin < 0 || consumed < s.pass_origin) return consumed;
  const int64_t pass_length = c.num_samples - s.pass_origin % c.num_samples;
  return s.pass_origin + (consumed - s.pass_origin) % pass_length;
}

std::vector<int64_t> ShardStreamSamples(const DataConfig& c, const RankLoaderState& loader,
                                        int64_t first, int64_t count) {
  const int64_t n = ShardSize(c.num_samples, loader.shard, loader.num_shards);
  const uint64_t shard_seed =
      Mix64(c.seed ^ Mix64(kShardDomain ^ Mix64(static_cast<uint64_t>(loader.num_shards) << 32 ^
                                                static_cast<uint64_t>(loader.shard))));
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(count));
  int64_t cached_epoch = -1;
  std::vector<int64_t> perm;
  for (int64_t q = first; q < first + count; ++q) {
    const int64_t epoch = q / n;
    if (epoch != cached_epoch) {
      if (c.shuffle) {
        perm = Permutation(shard_seed, epoch, n);
      } else {
        perm.resize(static_cast<size_t>(n));
        std::iota(perm.begin(), perm.end(), int64_t{0});
      }
      cached_epoch = epoch;
    }
    out.push_back(loader.shard + loader.num_shards * perm[static_cast<size_t>(q % n)]);
  }
  return out;
}

std::vector<int64_t> FlatSamplesOfStep(const DataConfig& c, const DataIteratorState& s) {
  if (c.sampler == DataSampler::kPerRank) {
    const int64_t accum = GradAccumSteps(c);
    std::vector<std::vector<int64_t>> per_rank;
    for (const RankLoaderState& l : s.loaders) {
      per_rank.push_back(ShardStreamSamples(c, l, l.position, accum * c.micro_batch_size));
    }
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(c.global_batch_size));
    for (int64_t m = 0; m < accum; ++m) {
      for (const std::vector<int64_t>& rank : per_rank) {
        out.insert(out.end(), rank.begin() + m * c.micro_batch_size,
                   rank.begin() + (m + 1) * c.micro_batch_size);
      }
    }
    return out;
  }
  std::vector<int64_t> positions;
  positions.reserve(static_cast<size_t>(c.global_batch_size));
  for (int64_t p = s.consumed_samples; p < s.consumed_samples + c.global_batch_size; ++p) {
    positions.push_back(SamplerPosition(c, s, p));
  }
  return SamplesAt(c, positions);
}

StepSamples SamplesOfStep(const DataConfig& c, int64_t consumed) {
  const std::vector<int64_t> flat = FlatSamplesOfStep(c, consumed);
  const int64_t accum = GradAccumSteps(c);
  StepSamples out(static_cast<size_t>(accum),
                  std::vector<std::vector<int64_t>>(static_cast<size_t>(c.dp_size)));
  for (int64_t m = 0; m < accum; ++m) {
    for (int64_t r = 0; r < c.dp_size; ++r) {
      const int64_t start = (m * c.dp_size + r) * c.micro_batch_size;
      out[m][r].assign(flat.begin() + start, flat.begin() + start + c.micro_batch_size);
    }
  }
  return out;
}

Status CheckDataIterator(const DataConfig& c, const DataIteratorState& s) {
  const size_t want = c.sampler == DataSampler::kPerRank ? static_cast<size_t>(c.dp_size) : 0;
  if (s.loaders.size() != want) {
    return Status::FailedPrecondition("data iterator holds " + std::to_string(s.loaders.size()) +
                                      " per-rank loaders; a " + DataSamplerName(c.sampler) +
                                      " sampler at dp_size " + std::to_string(c.dp_size) +
                                      " draws with " + std::to_string(want));
  }
  for (size_t r = 0; r < s.loaders.size(); ++r) {
    const RankLoaderState& l = s.loaders[r];
    if (l.num_shards < 1 || l.num_shards > c.num_samples || l.shard < 0 ||
        l.shard >= l.num_shards || l.position < 0) {
      return Status::FailedPrecondition("data iterator: DP rank " + std::to_string(r) +
                                        "'s loader (shard " + std::to_string(l.shard) + " of " +
                                        std::to_string(l.num_shards) + ", position " +
                                        std::to_string(l.position) + ") cannot draw from " +
                                        std::to_string(c.num_samples) + " samples");
    }
  }
  return Status::OK();
}

void AdvanceDataIterator(const DataConfig& c, DataIteratorState* s) {
  s->consumed_samples += c.global_batch_size;
  s->epoch = s->consumed_samples / c.num_samples;
  const int64_t per_rank = c.global_batch_size / c.dp_size;
  for (RankLoaderState& l : s->loaders) {
    l.position += per_rank;
    l.epoch = l.position / ShardSize(c.num_samples, l.shard, l.num_shards);
  }
}

int64_t SamplesForIterations(const DataConfig& c, int64_t iterations) {
  return iterations * c.global_batch_size;
}

Status ResumeDataIterator(const DataConfig& c, const DataIteratorState& saved,
                          DataIteratorState* out) {
  if (saved.consumed_samples < 0) {
    return Status::Corruption("data iterator: consumed_samples = " +
                              std::to_string(saved.consumed_samples) + " is negative");
  }
  const bool saved_per_rank = !saved.loaders.empty();
  if (saved_per_rank != (c.sampler == DataSampler::kPerRank)) {
    return Status::InvalidArgument(
        std::string("data iterator: the checkpoint holds a ") +
        (saved_per_rank ? "per_rank" : "global") + " sampler's state; this run's sampler is " +
        DataSamplerName(c.sampler) + " (reset_dataloader starts it fresh)");
  }
  const int64_t saved_dp = static_cast<int64_t>(saved.loaders.size());
  if (saved_per_rank && saved_dp != c.dp_size) {
    return Status::FailedPrecondition(
        "data iterator: the checkpoint holds per-DP-rank loaders for DP size " +
        std::to_string(saved_dp) + "; this run has DP size " + std::to_string(c.dp_size) +
        " (a loader's position does not carry over to another shard; reset_dataloader starts "
        "the loaders fresh)");
  }
  if (saved.epoch != saved.consumed_samples / c.num_samples) {
    return Status::Corruption(
        "data iterator: epoch = " + std::to_string(saved.epoch) +
        " is inconsistent with consumed_samples = " + std::to_string(saved.consumed_samples) +
        " over " + std::to_string(c.num_samples) + " samples");
  }
  if (saved.seed != c.seed) {
    return Status::InvalidArgument("data iterator: saved seed " + std::to_string(saved.seed) +
                                   " differs from the configured seed " + std::to_string(c.seed));
  }
  if (saved_per_rank) {
    for (int64_t r = 0; r < saved_dp; ++r) {
      const RankLoaderState& l = saved.loaders[static_cast<size_t>(r)];
      const std::string who = "data iterator: DP rank " + std::to_string(r) + "'s loader ";
      if (l.shard != r || l.num_shards != saved_dp) {
        return Status::Corruption(who + "reads shard " + std::to_string(l.shard) + " of " +
                                  std::to_string(l.num_shards) + ", not its own (" +
                                  std::to_string(r) + " of " + std::to_string(saved_dp) + ")");
      }
      if (l.position < 0 || saved.consumed_samples % saved_dp != 0 ||
          l.position != saved.consumed_samples / saved_dp) {
        return Status::Corruption(who + "is at position " + std::to_string(l.position) +
                                  "; consumed_samples = " + std::to_string(saved.consumed_samples) +
                                  " puts every loader at consumed_samples / " +
                                  std::to_string(saved_dp));
      }
      const int64_t shard_size = ShardSize(c.num_samples, l.shard, l.num_shards);
      if (l.epoch != l.position / shard_size) {
        return Status::Corruption(
            who + "epoch = " + std::to_string(l.epoch) + " is inconsistent with its position " +
            std::to_string(l.position) + " over a shard of " + std::to_string(shard_size));
      }
    }
  }
  *out = saved;
  out->pass_origin = -1;
  return Status::OK();
}

namespace {

nlohmann::json SharedToJson(const DataIteratorState& s) {
  return nlohmann::json{
      {"consumed_samples", s.consumed_samples}, {"epoch", s.epoch}, {"seed", s.seed}};
}

nlohmann::json LoaderToJson(const RankLoaderState& l) {
  return nlohmann::json{{"shard", l.shard},
                        {"num_shards", l.num_shards},
                        {"position", l.position},
                        {"epoch", l.epoch}};
}

// consumed_samples, epoch and seed (the state without loaders) into *out.
Status ReadShared(const JsonField& f, DataIteratorState* out) {
  DataIteratorState s;
  CKPTSPEC_RETURN_IF_ERROR(f.Member("consumed_samples").GetInt64(&s.consumed_samples));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("epoch").GetInt64(&s.epoch));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("seed").GetUint64(&s.seed));
  *out = s;
  return Status::OK();
}

Status ReadLoader(const JsonField& f, RankLoaderState* out) {
  CKPTSPEC_RETURN_IF_ERROR(f.Member("shard").GetInt64(&out->shard));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("num_shards").GetInt64(&out->num_shards));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("position").GetInt64(&out->position));
  CKPTSPEC_RETURN_IF_ERROR(f.Member("epoch").GetInt64(&out->epoch));
  if (out->num_shards < 1 || out->shard < 0 || out->shard >= out->num_shards) {
    return f.Error("shard " + std::to_string(out->shard) + " of " +
                   std::to_string(out->num_shards) + " is not a shard");
  }
  return Status::OK();
}

Status ReadDataIteratorState(const JsonField& f, DataIteratorState* out) {
  DataIteratorState s;
  CKPTSPEC_RETURN_IF_ERROR(ReadShared(f, &s));
  const JsonField loaders = f.OptionalMember("loaders");
  CKPTSPEC_RETURN_IF_ERROR(loaders.ExpectArray());
  if (loaders.present() && loaders.size() == 0) return loaders.Expected("a non-empty array");
  CKPTSPEC_RETURN_IF_ERROR(loaders.ForEachElement([&s](const JsonField& loader) {
    RankLoaderState l;
    CKPTSPEC_RETURN_IF_ERROR(ReadLoader(loader, &l));
    s.loaders.push_back(l);
    return Status::OK();
  }));
  *out = std::move(s);
  return Status::OK();
}

Status ReadDataIteratorRank(const JsonField& f, DataIteratorState* shared, int64_t* dp_size,
                            RankLoaderState* loader) {
  CKPTSPEC_RETURN_IF_ERROR(ReadShared(f, shared));
  *dp_size = 0;
  const JsonField loader_field = f.OptionalMember("loader");
  const JsonField dp_size_field = f.OptionalMember("dp_size");
  if (loader_field.present() != dp_size_field.present()) {
    return f.Error(std::string("\"dp_size\" and \"loader\" come together, got only \"") +
                   (loader_field.present() ? "loader" : "dp_size") + "\"");
  }
  if (!loader_field.present()) return Status::OK();
  CKPTSPEC_RETURN_IF_ERROR(dp_size_field.GetInt64(dp_size));
  if (*dp_size < 1) return dp_size_field.Expected("a positive integer");
  return ReadLoader(loader_field, loader);
}

}  // namespace

nlohmann::json DataIteratorStateToJson(const DataIteratorState& s) {
  nlohmann::json j = SharedToJson(s);
  if (!s.loaders.empty()) {
    j["loaders"] = nlohmann::json::array();
    for (const RankLoaderState& l : s.loaders) j["loaders"].push_back(LoaderToJson(l));
  }
  return j;
}

Status DataIteratorStateFromJson(const JsonField& f, DataIteratorState* out) {
  return AsCorruption(ReadDataIteratorState(f, out));
}

Status DataIteratorStateFromJson(const nlohmann::json& j, DataIteratorState* out) {
  return DataIteratorStateFromJson(JsonField(j, "data_iterator"), out);
}

nlohmann::json DataIteratorRankToJson(const DataIteratorState& s, int64_t dp_rank) {
  nlohmann::json j = SharedToJson(s);
  if (!s.loaders.empty()) {
    j["dp_size"] = static_cast<int64_t>(s.loaders.size());
    j["loader"] = LoaderToJson(s.loaders[static_cast<size_t>(dp_rank)]);
  }
  return j;
}

Status DataIteratorRankFromJson(const nlohmann::json& j, DataIteratorState* shared,
                                int64_t* dp_size, RankLoaderState* loader) {
  return AsCorruption(ReadDataIteratorRank(JsonField(j, "data_iterator"), shared, dp_size, loader));
}

}  // namespace ckptspec
