#include "model/data_iterator.h"

#include <numeric>

#include "model/content.h"

namespace ckptspec {

namespace {
constexpr uint64_t kShuffleDomain = 0x53485546464C4531ull;  // "SHUFFLE1"
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

std::vector<int64_t> FlatSamplesOfStep(const DataConfig& c, const DataIteratorState& s) {
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

void AdvanceDataIterator(const DataConfig& c, DataIteratorState* s) {
  s->consumed_samples += c.global_batch_size;
  s->epoch = s->consumed_samples / c.num_samples;
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
  *out = saved;
  return Status::OK();
}

nlohmann::json DataIteratorStateToJson(const DataIteratorState& s) {
  return nlohmann::json{
      {"consumed_samples", s.consumed_samples}, {"epoch", s.epoch}, {"seed", s.seed}};
}

Status DataIteratorStateFromJson(const nlohmann::json& j, DataIteratorState* out) {
  if (!j.is_object()) return Status::Corruption("data iterator state is not an object");
  for (const char* f : {"consumed_samples", "epoch", "seed"}) {
    auto it = j.find(f);
    if (it == j.end() || !it->is_number_integer()) {
      return Status::Corruption(std::string("data iterator state: '") + f +
                                "' is missing or not an integer");
    }
  }
  DataIteratorState s;
  s.consumed_samples = j["consumed_samples"].get<int64_t>();
  s.epoch = j["epoch"].get<int64_t>();
  s.seed = j["seed"].get<uint64_t>();
  *out = s;
  return Status::OK();
}

}  // namespace ckptspec
