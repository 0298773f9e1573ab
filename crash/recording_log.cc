#include "crash/recording_log.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "crash/fs_control.h"

namespace ckptspec {

namespace {

// Reads the records of one log; `name` names it in errors.
class LogParser {
 public:
  LogParser(const std::string& name, const std::string& bytes) : name_(name), bytes_(bytes) {}

  Status Parse(std::vector<FsOp>* ops) {
    while (at_ < bytes_.size()) {
      const size_t start = at_;
      end_ = bytes_.size();  // until the record's size is read
      uint32_t magic = 0, size = 0;
      CKPTSPEC_RETURN_IF_ERROR(Read32(start, &magic));
      if (magic != CKPTSPEC_FSREC_RECORD_MAGIC) return Bad(start, "no record magic");
      CKPTSPEC_RETURN_IF_ERROR(Read32(start, &size));
      const size_t smallest = CKPTSPEC_FSREC_RECORD_FIXED_BYTES + 4 * CKPTSPEC_FSREC_RECORD_STRINGS;
      if (size < smallest) {
        return Bad(start, "size " + std::to_string(size) + " is below the smallest record (" +
                              std::to_string(smallest) + ")");
      }
      if (size > bytes_.size() - start) {
        return Bad(start, "size " + std::to_string(size) + " runs past the end of the file (" +
                              std::to_string(bytes_.size() - start) + " bytes left)");
      }
      end_ = start + size;
      FsOp op;
      CKPTSPEC_RETURN_IF_ERROR(ParseRecord(start, &op));
      if (at_ != end_) {
        return Bad(start, "its fields end at byte " + std::to_string(at_ - start) +
                              ", not at its size " + std::to_string(size));
      }
      ops->push_back(std::move(op));
    }
    return Status::OK();
  }

 private:
  Status ParseRecord(size_t start, FsOp* op) {
    uint64_t seq = 0;
    uint32_t pid = 0, kind_and_flag = 0, err = 0, reserved = 0;
    CKPTSPEC_RETURN_IF_ERROR(Read64(start, &seq));
    CKPTSPEC_RETURN_IF_ERROR(Read32(start, &pid));
    CKPTSPEC_RETURN_IF_ERROR(Read32(start, &kind_and_flag));  // kind, injected, two zero bytes
    const uint32_t kind = kind_and_flag & 0xff;
    const uint32_t injected = (kind_and_flag >> 8) & 0xff;
    if (kind > static_cast<uint32_t>(FsOpKind::kUnseen)) {
      return Bad(start, "kind " + std::to_string(kind) + " is not an operation");
    }
    if (injected > 1) return Bad(start, "injected flag " + std::to_string(injected));
    CKPTSPEC_RETURN_IF_ERROR(Read32(start, &err));
    CKPTSPEC_RETURN_IF_ERROR(Read32(start, &reserved));
    op->seq = seq;
    op->pid = static_cast<int32_t>(pid);
    op->kind = static_cast<FsOpKind>(kind);
    op->injected = injected != 0;
    op->err = static_cast<int>(err);
    FileId* ids[] = {&op->file, &op->dir, &op->dir2, &op->replaced};
    for (FileId* id : ids) {
      CKPTSPEC_RETURN_IF_ERROR(Read64(start, &id->dev));
      CKPTSPEC_RETURN_IF_ERROR(Read64(start, &id->ino));
    }
    CKPTSPEC_RETURN_IF_ERROR(Read64(start, &op->offset));
    CKPTSPEC_RETURN_IF_ERROR(Read64(start, &op->length));
    std::string* strings[] = {&op->name, &op->name2, &op->path, &op->path2, &op->detail, &op->data};
    for (std::string* s : strings) {
      uint32_t length = 0;
      CKPTSPEC_RETURN_IF_ERROR(Read32(start, &length));
      if (length > end_ - at_) {
        return Bad(start, "a string of " + std::to_string(length) + " bytes runs past its end (" +
                              std::to_string(end_ - at_) + " bytes left)");
      }
      s->assign(bytes_, at_, length);
      at_ += length;
    }
    // An entry's name becomes a path under the root when a crash state is written out: it must be
    // one component, or a hostile log could name a file outside the root.
    for (const std::string* entry : {&op->name, &op->name2}) {
      if (!entry->empty() && (*entry == "." || *entry == ".." ||
                              entry->find_first_of(std::string("/\0", 2)) != std::string::npos)) {
        return Bad(start, "the entry name '" + *entry + "' is not one path component");
      }
    }
    return Status::OK();
  }

  template <typename T>
  Status ReadFixed(size_t start, T* value) {
    if (sizeof(T) > end_ - at_) return Bad(start, "truncated inside its fixed fields");
    std::memcpy(value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return Status::OK();
  }
  Status Read32(size_t start, uint32_t* value) { return ReadFixed(start, value); }
  Status Read64(size_t start, uint64_t* value) { return ReadFixed(start, value); }

  Status Bad(size_t start, const std::string& what) const {
    return Status::Corruption(name_ + ": the record at byte " + std::to_string(start) + ": " +
                              what);
  }

  const std::string& name_;
  const std::string& bytes_;
  size_t at_ = 0;
  size_t end_ = 0;  // where the current record ends (the file's end until its size is read)
};

}  // namespace

Status ParseRecordingLog(const std::string& bytes, const std::string& name,
                         std::vector<FsOp>* ops) {
  return LogParser(name, bytes).Parse(ops);
}

std::string EncodeRecordingRecord(const FsOp& op) {
  std::string out;
  auto put = [&out](auto value) {
    char raw[sizeof(value)];
    std::memcpy(raw, &value, sizeof(value));
    out.append(raw, sizeof(value));
  };
  put(uint32_t{CKPTSPEC_FSREC_RECORD_MAGIC});
  put(uint32_t{0});  // the size, set below
  put(op.seq);
  put(op.pid);
  put(static_cast<uint32_t>(static_cast<uint32_t>(op.kind) | (op.injected ? 1u << 8 : 0u)));
  put(static_cast<int32_t>(op.err));
  put(uint32_t{0});
  for (const FileId* id : {&op.file, &op.dir, &op.dir2, &op.replaced}) {
    put(id->dev);
    put(id->ino);
  }
  put(op.offset);
  put(op.length);
  for (const std::string* s : {&op.name, &op.name2, &op.path, &op.path2, &op.detail, &op.data}) {
    put(static_cast<uint32_t>(s->size()));
    out += *s;
  }
  const uint32_t size = static_cast<uint32_t>(out.size());
  std::memcpy(&out[4], &size, sizeof(size));
  return out;
}

}  // namespace ckptspec
