#include "crash/persistence_model.h"

namespace ckptspec {

const char* PersistenceModelName(PersistenceModel model) {
  switch (model) {
    case PersistenceModel::kOrdered:
      return "ordered";
    case PersistenceModel::kPosixWeak:
      return "posix-weak";
  }
  return "?";
}

const char* PersistenceModelDescription(PersistenceModel model) {
  switch (model) {
    case PersistenceModel::kOrdered:
      return "ordered: every operation that completed before the crash persisted, in order, each "
             "atomically; the crash state after k operations is the replay of the first k (a file "
             "system that journals data and metadata in order).";
    case PersistenceModel::kPosixWeak:
      return "posix-weak: only what was made durable before the crash surely persisted (a write or "
             "truncate of a file by a later fsync or fdatasync of it, an entry operation in a "
             "directory by a later fsync of that directory, everything by sync); any other "
             "completed operation may be lost, independently, except that one file's writes and "
             "truncates persist in order and a write may persist torn (its first bytes kept, the "
             "rest of its range zeros beyond the old size); a file whose data was lost is empty "
             "or zero-filled, and an entry whose directory's creation was lost is absent.";
  }
  return "?";
}

}  // namespace ckptspec
