// A tensor saved alone with torch.save, as each tensor item of a PyTorch DCP __R_I.distcp file is:
// its dtype, shape and strides from data.pkl (read with the safe pickle reader) and where its
// elements lie in the archive.
#pragma once

#include <cstdint>

#include "formats/byte_source.h"
#include "formats/torch_dtype.h"
#include "formats/torch_save_archive.h"
#include "formats/zip_reader.h"
#include "model/box.h"
#include "model/status.h"

namespace ckptspec {

struct TorchTensorItem {
  const TorchDType* dtype = nullptr;
  Dims shape;
  Dims stride;
  int64_t storage_offset = 0;  // in elements
  ZipEntry storage;            // the data/KEY entry holding the storage
  uint64_t data_offset = 0;    // in the source: the first element's byte (row-major, contiguous)
  uint64_t data_bytes = 0;     // the elements' bytes: numel * element size
};

// The largest data.pkl read (a tensor's pickle is a few hundred bytes).
inline constexpr uint64_t kMaxTensorPickleBytes = uint64_t{1} << 20;

// Reads the archive that fills `source` (OpenTorchSaveArchive) and its data.pkl, which must
// rebuild one tensor: torch._utils._rebuild_tensor_v2/_v3 of a persistent storage id
// ('storage', storage class, key, location, numel). Checks, each a Corruption or NotSupported
// naming the source and what differs: the storage class and dtype known and consistent; the
// entry data/KEY present and of the storage's size (numel elements of a typed storage, numel
// bytes of an UntypedStorage); shape and stride tuples of non-negative ints of one length; the
// strides row-major contiguous (NotSupported otherwise: DCP saves contiguous items); the elements
// inside the storage. CRCs are not checked (CheckZipEntryCrc over `storage` does).
Status ReadTorchTensorItem(const ByteSource& source, const ZipLimits& limits,
                           TorchTensorItem* item);

}  // namespace ckptspec
