// The input format of op_sequence_fuzzer: a run and a sequence of job operations (stateful_ops.h),
// read with libFuzzer's FuzzedDataProvider, and a writer that builds such inputs (the seed tool's
// seeds and tests). FuzzedDataProvider reads integers from the END of the input, so the values
// below, in reading order, are the input's bytes from the last to the first.
//
// Reading order (u8 = one byte, u64 = eight bytes, the first read most significant):
//   run:  u64 seed, u8 size -> gen::RunUpTo(8) drawn with RapidCheck's Random(seed) at size
//         (size % 101): the stateful test's own generator, so every input decodes to a valid run
//   then, while bytes remain (at most kMaxOps operations): u8 kind % 9, then its arguments:
//     0 Train       u8 n -> 1 + n % 4
//     1 Save        u8 async (bit 0), u8 plan cache (bit 0); each only where the target can
//     2 Finalize
//     3 RerunFault
//     4 Crash       u8 k -> k % 17 - 1: the save's storage op that crashes, -1 right after it
//     5 Restart     u8 kind % 3: 0 the same run; 1 another run: u8 change layout (bit 0), u64
//                   seed (gen::ResumeRunFor(run, 8, change) drawn with Random(seed)), u8 flags
//                   (bits 0-5: finetune, no_load_optim, no_load_rng, override_scheduler,
//                   use_checkpoint_scheduler (dropped with override), reset_dataloader); 2 one more
//                   parameter: u8 module % modules, u8 prefer biases (bit 0)
//     6 Freeze      u8 module % modules, u8 key index % freezable keys
//     7 Heal
//     8 Unfreeze    u8 module % modules, u8 key index % unfreezable keys (torch.optim family)
// An operation whose arguments do not apply (no freezable key, a grown model that does not fit,
// a generator that finds no run) decodes to nothing; the bytes are still consumed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>

#include "harness/stateful_ops.h"

namespace ckptspec {

inline constexpr int kMaxOps = 16;

// The run, or nullopt when the generator fails for this seed.
std::optional<RunSpec> ReadRun(FuzzedDataProvider* input);
// The next operation for the model's state, or nullopt (see above).
std::optional<StatefulOp> ReadOp(FuzzedDataProvider* input, const StatefulModel& m);

// Writes inputs in the format above (values are taken modulo as the reader does).
class OpInputWriter {
 public:
  OpInputWriter& Run(uint64_t seed, uint8_t size);
  OpInputWriter& Train(uint8_t n);
  OpInputWriter& Save(bool async, bool cached);
  OpInputWriter& Finalize();
  OpInputWriter& RerunFault();
  OpInputWriter& Crash(int at_op);  // -1 .. kMinSaveOps - 1
  OpInputWriter& RestartSame();
  OpInputWriter& RestartOther(bool change_layout, uint64_t seed, uint8_t flags);
  OpInputWriter& RestartAddParameter(uint8_t module, bool prefer_bias);
  OpInputWriter& Freeze(uint8_t module, uint8_t key);
  OpInputWriter& Heal();
  OpInputWriter& Unfreeze(uint8_t module, uint8_t key);
  // The input's bytes.
  std::string Finish() const;

 private:
  void U8(uint8_t v) { read_order_.push_back(v); }
  void U64(uint64_t v);
  std::vector<uint8_t> read_order_;
};

}  // namespace ckptspec
