#include "ondisk/checkpoint_kind.h"

#include <cctype>

namespace ckptspec {
namespace {

constexpr const char* kTracker = "latest_checkpointed_iteration.txt";

bool Exists(Env* env, const std::string& path) { return env->FileExists(path).ok(); }

// torch_dist when `dir`'s metadata.json names it (a small file: 1 MiB is plenty).
bool IsTorchDist(Env* env, const std::string& dir) {
  std::string text;
  if (!ReadFileToString(env, JoinPath(dir, "metadata.json"), uint64_t{1} << 20, &text).ok()) {
    return false;
  }
  return text.find("\"torch_dist\"") != std::string::npos;
}

}  // namespace

const char* CheckpointKindName(CheckpointKind kind) {
  switch (kind) {
    case CheckpointKind::kReference:
      return "reference";
    case CheckpointKind::kDcp:
      return "pytorch-dcp";
    case CheckpointKind::kTorchDist:
      return "megatron-torch_dist";
  }
  return "?";
}

Status DetectCheckpoint(Env* env, const std::string& root, DetectedCheckpoint* out) {
  std::string dir = root;
  if (!Exists(env, JoinPath(root, ".metadata")) && Exists(env, JoinPath(root, kTracker))) {
    // A Megatron root holds the same tracker as the reference: its iteration directory decides.
    std::string tracker;
    CKPTSPEC_RETURN_IF_ERROR(ReadFileToString(env, JoinPath(root, kTracker), 4096, &tracker));
    std::string digits;
    for (char c : tracker) {
      if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
    }
    if (digits.empty() || digits.size() > 7) {
      out->kind = CheckpointKind::kReference;  // the reference's verify names what is wrong
      out->index_dir.clear();
      return Status::OK();
    }
    dir = JoinPath(root, "iter_" + std::string(7 - digits.size(), '0') + digits);
    if (!Exists(env, JoinPath(dir, ".metadata"))) {
      out->kind = CheckpointKind::kReference;
      out->index_dir.clear();
      return Status::OK();
    }
  }
  if (!Exists(env, JoinPath(dir, ".metadata"))) {
    return Status::NotFound(root + ": not a checkpoint this tool reads: no " + kTracker +
                            " (ckptspec's reference format or a Megatron root) and no .metadata "
                            "(PyTorch DCP, Megatron torch_dist)");
  }
  out->kind = IsTorchDist(env, dir) ? CheckpointKind::kTorchDist : CheckpointKind::kDcp;
  out->index_dir = dir;
  return Status::OK();
}

}  // namespace ckptspec
