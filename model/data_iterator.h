// A deterministic dataset and its iterator: per-epoch shuffles, global batches split into
// micro-batches over DP ranks, and the resume rule (docs/BUGS.md B10, B16, B18).
//
// Model: the dataset has num_samples samples with ids 0..N-1. The run consumes an infinite
// SEQUENCE of samples: position p (0, 1, 2, ...) holds Permutation(seed, epoch = p / N)[p % N].
// Epoch boundaries fall inside batches when N is not a multiple of the batch size: the sequence
// is seamless (no sample is dropped, none repeated within an epoch). Each iteration consumes
// global_batch_size consecutive positions starting at consumed_samples. Within an iteration,
// micro-batch m (0 <= m < grad_accum_steps) of DP rank r takes the micro_batch_size positions
// starting at consumed_samples + (m * dp_size + r) * micro_batch_size (Megatron's sampler slices
// each micro_batch_size x dp chunk by DP rank).
//
// State: (consumed_samples, epoch, seed), epoch == consumed_samples / N. The correct resume rule:
// the resumed run continues the exact sequence at position consumed_samples, so "train k, save,
// resume, train m" sees the same samples as "train k + m". In particular the resume offset is
// applied exactly once (B10), the epoch comes from the state (B16), and a skip of s iterations is
// s * global_batch_size samples (B18). The sequence does not depend on the DP size (Megatron's
// MegatronPretrainingSampler over a dataset-level shuffle), so a resume under another DP size
// continues it too: only the slicing of each iteration's positions over the ranks changes.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/status.h"

namespace ckptspec {

struct DataConfig {
  int64_t num_samples = 64;
  uint64_t seed = 1234;
  bool shuffle = true;  // false: every epoch is the identity permutation
  int64_t global_batch_size = 8;
  int64_t micro_batch_size = 2;
  int64_t dp_size = 2;
};

// Positive sizes; global_batch_size divisible by micro_batch_size * dp_size. Errors name the fields.
Status ValidateDataConfig(const DataConfig& c);

// global_batch_size / (micro_batch_size * dp_size).
int64_t GradAccumSteps(const DataConfig& c);

// A Fisher-Yates shuffle of 0..n-1 driven by ContentBits(seed, hash(epoch), i): platform
// independent. The identity when n <= 1.
std::vector<int64_t> Permutation(uint64_t seed, int64_t epoch, int64_t n);

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
  bool operator==(const DataIteratorState& o) const {
    return consumed_samples == o.consumed_samples && epoch == o.epoch && seed == o.seed;
  }
};

DataIteratorState InitialDataIterator(const DataConfig& c);

// The samples of the iteration starting at consumed_samples, in the fixed order: micro-batch m,
// then DP rank r, then position j in the micro-batch; index [m][r][j].
using StepSamples = std::vector<std::vector<std::vector<int64_t>>>;
StepSamples SamplesOfStep(const DataConfig& c, int64_t consumed_samples);

// Flattened in the same order (global_batch_size ids): the sequence positions
// consumed_samples .. consumed_samples + global_batch_size - 1.
std::vector<int64_t> FlatSamplesOfStep(const DataConfig& c, int64_t consumed_samples);

// The samples at sequence positions first .. first + count - 1 of the run's global sequence
// (num_samples, seed and shuffle decide it; the batch sizes and the DP size do not).
// Precondition: first >= 0, count >= 0.
std::vector<int64_t> SequenceSamples(const DataConfig& c, int64_t first, int64_t count);

// The sequence position the sampler of `s` draws for the loop's count `consumed`: `consumed` itself
// for a correct sampler; for a frozen one (pass_origin o >= 0, consumed >= o), the passes restart
// at o, each num_samples - o % num_samples long.
int64_t SamplerPosition(const DataConfig& c, const DataIteratorState& s, int64_t consumed);

// The iteration's samples as the sampler of `s` draws them (the training step's input): equal to
// FlatSamplesOfStep(c, s.consumed_samples) for a correct sampler.
std::vector<int64_t> FlatSamplesOfStep(const DataConfig& c, const DataIteratorState& s);

// One iteration: consumed_samples += global_batch_size; epoch follows.
void AdvanceDataIterator(const DataConfig& c, DataIteratorState* s);

// Samples to skip to resume after `iterations` iterations: iterations * global_batch_size (B18).
int64_t SamplesForIterations(const DataConfig& c, int64_t iterations);

// The resume rule: checks the saved state against the config (seed must match; epoch must equal
// consumed_samples / num_samples; consumed_samples >= 0) and returns the iterator positioned at
// the saved consumed_samples. Errors: Corruption (inconsistent epoch, negative count),
// InvalidArgument (seed differs from the config's).
Status ResumeDataIterator(const DataConfig& c, const DataIteratorState& saved,
                          DataIteratorState* out);

nlohmann::json DataIteratorStateToJson(const DataIteratorState& s);
// Missing or mistyped fields: Corruption naming the field.
Status DataIteratorStateFromJson(const nlohmann::json& j, DataIteratorState* out);

}  // namespace ckptspec
