// A deterministic dataset and its iterator: per-epoch shuffles, global batches split into
// micro-batches over DP ranks, and the resume rule (docs/BUGS.md B10, B16, B18, B25).
//
// Two samplers (DataConfig::sampler), as real training loops build them:
//
// kGlobal (Megatron's MegatronPretrainingSampler over a dataset-level shuffle): the dataset has
// num_samples samples with ids 0..N-1. The run consumes an infinite SEQUENCE of samples: position
// p (0, 1, 2, ...) holds Permutation(seed, epoch = p / N)[p % N]. Epoch boundaries fall inside
// batches when N is not a multiple of the batch size: the sequence is seamless (no sample is
// dropped, none repeated within an epoch). Each iteration consumes global_batch_size consecutive
// positions starting at consumed_samples. Within an iteration, micro-batch m (0 <= m <
// grad_accum_steps) of DP rank r takes the micro_batch_size positions starting at
// consumed_samples + (m * dp_size + r) * micro_batch_size (Megatron's sampler slices each
// micro_batch_size x dp chunk by DP rank). The sequence does not depend on the DP size, so a
// resume under another DP size continues it too: only the slicing of each iteration's positions
// over the ranks changes.
//
// kPerRank (a stateful loader on every DP rank, as torchtitan's per-DP-rank dataloader or an
// Energon loader keep one): the dataset is split into dp_size SHARDS, shard s holding the ids
// i with i % dp_size == s (ShardSize: N / dp_size, one more for s < N % dp_size). DP rank r's
// loader reads shard r as its own endless stream: stream position q holds
// s + dp_size * Permutation(a seed drawn from (seed, s, dp_size), epoch = q / shard size,
// shard size)[q % shard size]: each shard shuffled on its own (unshuffled: in id order). Every
// iteration each loader draws grad_accum_steps * micro_batch_size samples, micro-batch m of rank r
// the micro_batch_size stream positions from position + m * micro_batch_size. The loaders'
// states differ by rank (shard, and the epoch where shard sizes differ), so each DP rank saves its
// own; a loader's position means nothing under another DP size (its shard changes), so a resume
// under another DP size is refused unless the loaders start fresh (torchtitan asserts the saved
// DP degree; the spec names it). consumed_samples still counts the run's samples (every loader's
// position is consumed_samples / dp_size).
//
// State: (consumed_samples, epoch, seed) and, under kPerRank, one RankLoaderState per DP rank.
// epoch == consumed_samples / N. The correct resume rule: the resumed run continues the exact
// sequence, so "train k, save, resume, train m" sees the same samples as "train k + m". In
// particular the resume offset is applied exactly once (B10), the epoch comes from the state
// (B16), a skip of s iterations is s * global_batch_size samples (B18), and every DP rank's
// loader comes back to that rank (B25).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_fields.h"
#include "model/status.h"

namespace ckptspec {

enum class DataSampler { kGlobal, kPerRank };

// "global" / "per_rank".
const char* DataSamplerName(DataSampler s);
bool ParseDataSampler(const std::string& name, DataSampler* out);  // false: no such name

struct DataConfig {
  DataSampler sampler = DataSampler::kGlobal;
  int64_t num_samples = 64;
  uint64_t seed = 1234;
  bool shuffle = true;  // false: every epoch is the identity permutation
  int64_t global_batch_size = 8;
  int64_t micro_batch_size = 2;
  int64_t dp_size = 2;
};

// Positive sizes; global_batch_size divisible by micro_batch_size * dp_size; under kPerRank at
// least one sample per shard (num_samples >= dp_size). Errors name the fields.
Status ValidateDataConfig(const DataConfig& c);

// global_batch_size / (micro_batch_size * dp_size).
int64_t GradAccumSteps(const DataConfig& c);

// A Fisher-Yates shuffle of 0..n-1 driven by ContentBits(seed, hash(epoch), i): platform
// independent. The identity when n <= 1.
std::vector<int64_t> Permutation(uint64_t seed, int64_t epoch, int64_t n);

// The number of ids i < num_samples with i % num_shards == shard. Precondition: 0 <= shard <
// num_shards.
int64_t ShardSize(int64_t num_samples, int64_t shard, int64_t num_shards);

// One DP rank's loader under kPerRank: the shard it reads (of num_shards, the DP size it was built
// for) and how far it has read that shard's stream.
struct RankLoaderState {
  int64_t shard = 0;
  int64_t num_shards = 1;
  int64_t position = 0;  // stream positions drawn
  int64_t epoch = 0;     // position / ShardSize
  bool operator==(const RankLoaderState& o) const {
    return shard == o.shard && num_shards == o.num_shards && position == o.position &&
           epoch == o.epoch;
  }
};

struct DataIteratorState {
  int64_t consumed_samples = 0;
  int64_t epoch = 0;
  uint64_t seed = 0;
  // The in-memory sampler, not part of the checkpoint (neither persisted nor compared): a sampler
  // built at a resume from consumed_samples c either re-derives every epoch pass from the running
  // count (correct; pass_origin = -1), or keeps c frozen and re-applies it at each new pass
  // (pass_origin = c: docs/BUGS.md B10), so every later pass restarts at position c and replays the
  // tail of c's epoch. Only what it samples can tell the two apart.
  int64_t pass_origin = -1;
  // kPerRank: DP rank r's loader at [r]; empty under kGlobal.
  std::vector<RankLoaderState> loaders;
  bool operator==(const DataIteratorState& o) const {
    return consumed_samples == o.consumed_samples && epoch == o.epoch && seed == o.seed &&
           loaders == o.loaders;
  }
};

DataIteratorState InitialDataIterator(const DataConfig& c);

// The samples of the iteration starting at consumed_samples under kGlobal, in the fixed order:
// micro-batch m, then DP rank r, then position j in the micro-batch; index [m][r][j].
using StepSamples = std::vector<std::vector<std::vector<int64_t>>>;
StepSamples SamplesOfStep(const DataConfig& c, int64_t consumed_samples);

// Flattened in the same order (global_batch_size ids): the sequence positions
// consumed_samples .. consumed_samples + global_batch_size - 1.
std::vector<int64_t> FlatSamplesOfStep(const DataConfig& c, int64_t consumed_samples);

// The samples at sequence positions first .. first + count - 1 of kGlobal's sequence
// (num_samples, seed and shuffle decide it; the batch sizes and the DP size do not).
// Precondition: first >= 0, count >= 0.
std::vector<int64_t> SequenceSamples(const DataConfig& c, int64_t first, int64_t count);

// The sequence position the sampler of `s` draws for the loop's count `consumed`: `consumed` itself
// for a correct sampler; for a frozen one (pass_origin o >= 0, consumed >= o), the passes restart
// at o, each num_samples - o % num_samples long.
int64_t SamplerPosition(const DataConfig& c, const DataIteratorState& s, int64_t consumed);

// The samples at stream positions first .. first + count - 1 of `loader`'s shard stream
// (num_samples, seed and shuffle of `c`; the shard and shard count of `loader`). Precondition:
// first >= 0, count >= 0, 0 <= loader.shard < loader.num_shards <= c.num_samples.
std::vector<int64_t> ShardStreamSamples(const DataConfig& c, const RankLoaderState& loader,
                                        int64_t first, int64_t count);

// The iteration's samples as the sampler of `s` draws them (the training step's input), in the
// order of SamplesOfStep: under kGlobal FlatSamplesOfStep(c, s.consumed_samples) for a correct
// sampler; under kPerRank micro-batch m of DP rank r is loader r's micro_batch_size samples from
// its position + m * micro_batch_size. Precondition: CheckDataIterator(c, s) is OK.
std::vector<int64_t> FlatSamplesOfStep(const DataConfig& c, const DataIteratorState& s);

// OK when `s` can draw under `c`: kPerRank holds one loader per DP rank, each reading a shard of
// num_shards <= num_samples at a position >= 0; kGlobal holds none. FailedPrecondition naming what
// is wrong otherwise.
Status CheckDataIterator(const DataConfig& c, const DataIteratorState& s);

// One iteration: consumed_samples += global_batch_size; epoch follows; every loader draws
// grad_accum_steps * micro_batch_size samples. Precondition: CheckDataIterator(c, *s) is OK.
void AdvanceDataIterator(const DataConfig& c, DataIteratorState* s);

// Samples to skip to resume after `iterations` iterations: iterations * global_batch_size (B18).
int64_t SamplesForIterations(const DataConfig& c, int64_t iterations);

// The resume rule: checks the saved state against the config (seed must match; epoch must equal
// consumed_samples / num_samples; consumed_samples >= 0) and returns the iterator positioned at
// the saved consumed_samples, its sampler a correct one (pass_origin -1). Under kPerRank the saved
// state must hold the loaders of exactly c.dp_size DP ranks (else FailedPrecondition naming the
// saved DP size and the new one: a loader's position cannot be carried to another shard), and
// loader r must read shard r of dp_size, at a position >= 0 with a consistent epoch, equal to
// consumed_samples / dp_size (Corruption naming the rank and field). The sampler kinds must agree: loaders saved and kGlobal now, or none saved
// and kPerRank now, is InvalidArgument naming both. Other errors: Corruption (inconsistent epoch,
// negative count), InvalidArgument (seed differs from the config's).
Status ResumeDataIterator(const DataConfig& c, const DataIteratorState& saved,
                          DataIteratorState* out);

// The whole state: {consumed_samples, epoch, seed} and, when there are loaders, "loaders": one
// {shard, num_shards, position, epoch} per DP rank (kGlobal's bytes have no "loaders" member).
nlohmann::json DataIteratorStateToJson(const DataIteratorState& s);
// Missing or mistyped fields: Corruption naming the field's path from "data_iterator"
// ("data_iterator.loaders[1].shard: expected an integer, got null"), or from `f` when the state
// is a value of a larger document (model/json_fields.h).
Status DataIteratorStateFromJson(const nlohmann::json& j, DataIteratorState* out);
Status DataIteratorStateFromJson(const JsonField& f, DataIteratorState* out);

// What DP rank `dp_rank` saves as its data-iterator object: DataIteratorStateToJson of the state
// without loaders and, when the state has loaders, "dp_size" (their number) and "loader" (rank
// dp_rank's). Precondition: dp_rank < loaders.size() when there are loaders.
nlohmann::json DataIteratorRankToJson(const DataIteratorState& s, int64_t dp_rank);
// Reads it back: the state without loaders into *shared; when the object holds a loader,
// *dp_size and *loader are set (else *dp_size = 0). Missing or mistyped fields: Corruption, as
// DataIteratorStateFromJson's.
Status DataIteratorRankFromJson(const nlohmann::json& j, DataIteratorState* shared,
                                int64_t* dp_size, RankLoaderState* loader);

}  // namespace ckptspec
