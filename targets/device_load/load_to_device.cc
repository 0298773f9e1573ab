#include "targets/device_load/load_to_device.h"

#include <utility>

#include "targets/reference/tensor_destination.h"

namespace ckptspec {

namespace {

// A destination writing into a TensorBuffer; host buffers are exposed for direct reads.
class BufferDestination : public TensorDestination {
 public:
  explicit BufferDestination(TensorBuffer* buffer) : buffer_(buffer) {}
  uint64_t size() const override { return buffer_->size(); }
  Status Write(uint64_t offset, const void* src, uint64_t n) override {
    return buffer_->Write(offset, src, n);
  }
  Status Zero() override { return buffer_->Zero(); }
  uint8_t* host_data() override {
    return buffer_->kind() == MemoryKind::kHost && buffer_->size() > 0
               ? static_cast<uint8_t*>(buffer_->data())
               : nullptr;
  }

 private:
  TensorBuffer* buffer_;
};

class BufferProvider : public DestinationProvider {
 public:
  explicit BufferProvider(MemoryKind kind) : kind_(kind) {}

  Status Open(size_t rank, const TensorSpec& spec, uint64_t bytes,
              TensorDestination** out) override {
    LoadedTensor loaded;
    loaded.rank = rank;
    loaded.spec = spec;
    CKPTSPEC_RETURN_IF_ERROR(TensorBuffer::Allocate(kind_, bytes, &loaded.buffer));
    destinations_.push_back(std::make_unique<BufferDestination>(loaded.buffer.get()));
    tensors_.push_back(std::move(loaded));
    *out = destinations_.back().get();
    return Status::OK();
  }

  std::vector<LoadedTensor> Take() { return std::move(tensors_); }

 private:
  MemoryKind kind_;
  std::vector<LoadedTensor> tensors_;
  std::vector<std::unique_ptr<BufferDestination>> destinations_;
};

}  // namespace

Status LoadToMemory(ReferenceEngine& engine, LoadRequest request, MemoryKind kind,
                    MemoryLoadResult* out) {
  if (out == nullptr) return Status::InvalidArgument("load result is null");
  if (kind == MemoryKind::kCuda) CKPTSPEC_RETURN_IF_ERROR(CudaAvailable());
  BufferProvider provider(kind);
  MemoryLoadResult loaded;
  CKPTSPEC_RETURN_IF_ERROR(
      engine.LoadToDestinations(std::move(request), &provider, &loaded.result));
  loaded.tensors = provider.Take();
  *out = std::move(loaded);
  return Status::OK();
}

}  // namespace ckptspec
