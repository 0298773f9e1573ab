// The deterministic training step (docs/DESIGN.md §4 "A deterministic training step").
//
// Gradient of element i of parameter `name` in an iteration that consumes samples s_1..s_B (the
// data iterator's order: micro-batch, DP rank, position):
//     g_i = fp32( (sum_k ContentUnitFloat(ContentBits(seed ^ Mix64(s_k), KeyHash(name), i))) / B )
// summed in double in that order, so the data order matters and the sum is reproducible.
//
// One iteration, in this order:
//  1. Megatron's loop `while should_run_forward_backward()`: NOT_RUNNING_YET -> INITIAL_RUN
//     (snapshot of the RNG and the data position); every rank's RNG streams advance by one draw
//     per micro-batch (dropout); the gradients are computed; ValidateResult("loss", the mean
//     gradient of the first trainable parameter, never rejected); the loop ends at
//     NOT_RUNNING_YET (REPORT_DETERMINISM_STATS mode reruns once from the snapshot first).
//     Then ShouldCheckpointAndExit, which must ask for neither.
//  2. optimizer: sub-optimizers in order, groups in order, parameters in order. Per group
//     lr = group.lr and wd = group.weight_decay (set by the scheduler for the current num_steps).
//     The step counter in use (per parameter or per group, by config) is incremented first; Adam
//     with decoupled weight decay (apex FusedAdam adam_w_mode / torch AdamW), in double:
//         m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2     (stored as fp32)
//         x = x (1 - lr wd) - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//     where x is the master value (offload copy if offloaded, else main copy, else the fp32 model
//     value). The new x is stored to the offload copy (if any), then the main copy (if any), then
//     the model copy (rounded to the model dtype). Frozen parameters are untouched.
//  3. scheduler: num_steps += global_batch_size (Megatron counts samples); every group's lr / wd
//     recomputed.
//  4. data iterator advances by one global batch; iteration += 1.
//
// Property (training_step_test): Train(k) then Train(m) == Train(k + m), bit for bit, also across
// Restarted().
#pragma once

#include <cstdint>
#include <vector>

#include "model/status.h"
#include "model/training_state.h"

namespace ckptspec {

// The fp32 gradient of trainable parameter `param` for the given samples (in order).
std::vector<float> Gradient(const TrainingState& s, int param, const std::vector<int64_t>& samples);

// One iteration. Errors: the rerun machine refuses (e.g. a pending rerun whose job must exit).
Status TrainStep(TrainingState* s);

// n iterations (n >= 0).
Status Train(TrainingState* s, int64_t n);

}  // namespace ckptspec
