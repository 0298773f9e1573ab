#include "targets/reference/decoded_index_cache.h"

#include <algorithm>
#include <iterator>

namespace ckptspec {
namespace {

bool SameLimits(const JsonLimits& a, const JsonLimits& b) {
  return a.max_depth == b.max_depth && a.max_bytes == b.max_bytes &&
         a.max_tree_bytes == b.max_tree_bytes;
}

}  // namespace

DecodedIndexCache& DecodedIndexCache::Shared() {
  static DecodedIndexCache* cache =
      new DecodedIndexCache();  // never destroyed: engines may outlive statics
  return *cache;
}

bool DecodedIndexCache::Find(const std::string& path, const std::string& text,
                             const JsonLimits& limits, CheckpointMetadata* metadata) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->path == path && it->text == text && SameLimits(it->limits, limits)) {
      *metadata = it->metadata;
      return true;
    }
  }
  return false;
}

void DecodedIndexCache::Keep(DecodedIndex index) {
  if (index.text.size() > kMaxTextBytes) return;
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const DecodedIndex& d) { return d.path == index.path; }),
                 entries_.end());
  entries_.push_back(std::move(index));
  size_t total = 0;
  for (const DecodedIndex& d : entries_) total += d.text.size();
  size_t dropped = 0;
  while (entries_.size() - dropped > kMaxEntries || total > kMaxTotalTextBytes) {
    total -= entries_[dropped].text.size();
    ++dropped;
  }
  entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(dropped));
}

}  // namespace ckptspec
