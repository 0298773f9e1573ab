#include "generators/world_cap.h"

namespace ckptspec::gen {
namespace {

thread_local int current_cap = 0;  // < 1: none

}  // namespace

int CurrentWorldCap() { return current_cap < 1 ? 0 : current_cap; }

int CappedWorld(int max_world) {
  return current_cap < 1 ? max_world : std::max(1, std::min(max_world, current_cap));
}

int CappedWorldPerModule(int max_world, size_t modules) {
  if (current_cap < 1 || modules == 0) return max_world;
  return std::max(1, CappedWorld(max_world) / static_cast<int>(modules));
}

ScopedWorldCap::ScopedWorldCap(int cap) : previous_(current_cap) { current_cap = cap; }

ScopedWorldCap::~ScopedWorldCap() { current_cap = previous_; }

}  // namespace ckptspec::gen
