#include "fuzz/op_input.h"

#include <algorithm>

#include <rapidcheck.h>

#include "generators/run_gen.h"

namespace ckptspec {
namespace {

// A generator's value for a fixed seed and size, or nullopt where it gives up (RC_FAIL /
// RC_DISCARD inside a generator surface as exceptions from value()).
template <typename T>
std::optional<T> Draw(const rc::Gen<T>& gen, uint64_t seed, int size) {
  try {
    return gen(rc::Random(seed), size).value();
  } catch (...) {
    return std::nullopt;
  }
}

LoadFlags FlagsOf(uint8_t bits) {
  LoadFlags f;
  f.finetune = bits & 1;
  f.no_load_optim = bits & 2;
  f.no_load_rng = bits & 4;
  f.override_scheduler = bits & 8;
  f.use_checkpoint_scheduler = (bits & 16) && !f.override_scheduler;
  f.reset_dataloader = bits & 32;
  return f;
}

uint8_t U8(FuzzedDataProvider* input) { return input->ConsumeIntegral<uint8_t>(); }

std::optional<StatefulOp> ReadRestart(FuzzedDataProvider* input, const StatefulModel& m) {
  StatefulOp op;
  op.kind = OpKind::kRestart;
  op.run = m.run;
  switch (U8(input) % 3) {
    case 0:
      op.restart = RestartKind::kSameRun;
      return op;
    case 1: {
      op.restart = RestartKind::kOtherRun;
      const bool change_layout = U8(input) & 1;
      const uint64_t seed = input->ConsumeIntegral<uint64_t>();
      op.flags = FlagsOf(U8(input));
      const std::optional<RunSpec> run =
          Draw(gen::ResumeRunFor(m.run, 8, change_layout), seed, 100);
      if (!run) return std::nullopt;
      op.run = *run;
      return op;
    }
    default: {
      op.restart = RestartKind::kAddParameter;
      const size_t module = U8(input) % std::max<size_t>(1, m.run.configs.size());
      const bool prefer_bias = U8(input) & 1;
      if (!RunWithAddedParameter(m.run, module, prefer_bias, &op.run, &op.added).ok()) {
        return std::nullopt;
      }
      return op;
    }
  }
}

}  // namespace

std::optional<RunSpec> ReadRun(FuzzedDataProvider* input) {
  const uint64_t seed = input->ConsumeIntegral<uint64_t>();
  const int size = U8(input) % 101;
  return Draw(gen::RunUpTo(8), seed, size);
}

std::optional<StatefulOp> ReadOp(FuzzedDataProvider* input, const StatefulModel& m) {
  StatefulOp op;
  const int kind = U8(input) % 9;
  switch (kind) {
    case 0:
      op.kind = OpKind::kTrain;
      op.n = 1 + U8(input) % 4;
      return op;
    case 1:
      op.kind = OpKind::kSave;
      op.async = (U8(input) & 1) && m.capabilities.async;
      op.cached = (U8(input) & 1) && m.capabilities.plan_cache;
      return op;
    case 2:
      op.kind = OpKind::kFinalize;
      return op;
    case 3:
      op.kind = OpKind::kRerunFault;
      return op;
    case 4:
      op.kind = OpKind::kCrash;
      op.at_op = static_cast<int64_t>(U8(input) % (kMinSaveOps + 1)) - 1;
      return op;
    case 5:
      return ReadRestart(input, m);
    case 7:
      op.kind = OpKind::kHeal;
      return op;
    default: {  // 6 Freeze, 8 Unfreeze
      const bool freeze = kind == 6;
      op.kind = freeze ? OpKind::kFreeze : OpKind::kUnfreeze;
      op.module = U8(input) % std::max<size_t>(1, m.states.size());
      const uint8_t key = U8(input);
      const std::vector<std::string> keys =
          freeze ? FreezableKeys(m, op.module) : UnfreezableKeys(m, op.module);
      if (keys.empty()) return std::nullopt;
      op.key = keys[key % keys.size()];
      return op;
    }
  }
}

void OpInputWriter::U64(uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) U8(static_cast<uint8_t>(v >> shift));
}

OpInputWriter& OpInputWriter::Run(uint64_t seed, uint8_t size) {
  U64(seed);
  U8(size);
  return *this;
}

OpInputWriter& OpInputWriter::Train(uint8_t n) {
  U8(0);
  U8(static_cast<uint8_t>(n - 1));
  return *this;
}

OpInputWriter& OpInputWriter::Save(bool async, bool cached) {
  U8(1);
  U8(async);
  U8(cached);
  return *this;
}

OpInputWriter& OpInputWriter::Finalize() {
  U8(2);
  return *this;
}

OpInputWriter& OpInputWriter::RerunFault() {
  U8(3);
  return *this;
}

OpInputWriter& OpInputWriter::Crash(int at_op) {
  U8(4);
  U8(static_cast<uint8_t>(at_op + 1));
  return *this;
}

OpInputWriter& OpInputWriter::RestartSame() {
  U8(5);
  U8(0);
  return *this;
}

OpInputWriter& OpInputWriter::RestartOther(bool change_layout, uint64_t seed, uint8_t flags) {
  U8(5);
  U8(1);
  U8(change_layout);
  U64(seed);
  U8(flags);
  return *this;
}

OpInputWriter& OpInputWriter::RestartAddParameter(uint8_t module, bool prefer_bias) {
  U8(5);
  U8(2);
  U8(module);
  U8(prefer_bias);
  return *this;
}

OpInputWriter& OpInputWriter::Freeze(uint8_t module, uint8_t key) {
  U8(6);
  U8(module);
  U8(key);
  return *this;
}

OpInputWriter& OpInputWriter::Heal() {
  U8(7);
  return *this;
}

OpInputWriter& OpInputWriter::Unfreeze(uint8_t module, uint8_t key) {
  U8(8);
  U8(module);
  U8(key);
  return *this;
}

std::string OpInputWriter::Finish() const {
  return std::string(read_order_.rbegin(), read_order_.rend());
}

}  // namespace ckptspec
