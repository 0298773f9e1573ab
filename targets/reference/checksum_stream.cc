#include "targets/reference/checksum_stream.h"

#include <xxhash.h>

#include <new>

namespace ckptspec {

struct ChecksumStream::State {
  State() : xxh3(XXH3_createState()) {
    if (xxh3 == nullptr) throw std::bad_alloc();  // as `new` would
  }
  ~State() { XXH3_freeState(xxh3); }
  XXH3_state_t* xxh3;
};

ChecksumStream::ChecksumStream() : state_(new State) { XXH3_64bits_reset(state_->xxh3); }
ChecksumStream::~ChecksumStream() = default;

void ChecksumStream::Update(const void* data, size_t size) {
  XXH3_64bits_update(state_->xxh3, data, size);
}

uint64_t ChecksumStream::Digest() const { return XXH3_64bits_digest(state_->xxh3); }

}  // namespace ckptspec
