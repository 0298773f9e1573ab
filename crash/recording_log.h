// One recorded process's log (crash/fs_control.h states the record format) read into operations:
// the parser behind FsRecorder::ReadRecording (crash/fs_recorder.h), a function of bytes alone.
//
// Contracts:
//  - The log is untrusted (a hostile or buggy process writes it): any bytes give OK or a
//    Corruption naming `name`, the byte offset of the record and what is wrong (no record magic, a
//    size below the smallest record or past the end of the bytes, a kind that is no operation, an
//    injected flag other than 0 or 1, a string running past its record, fields that do not end at
//    the record's size, an entry name that is not one path component: empty for no entry, else
//    no '/', no NUL, not "." or "..", since a crash state writes it out under the root).
//  - Reads are bounded by the bytes: nothing is allocated for a length the bytes do not hold, so
//    the operations cost a small multiple of the log's size.
//  - The records are appended to `ops` in the log's order (not sorted by seq; sequence numbers are
//    not checked here: a recording's logs are checked together by ReadRecording). On an error the
//    records before the bad one have been appended.
#pragma once

#include <string>
#include <vector>

#include "crash/fs_op.h"
#include "model/status.h"

namespace ckptspec {

Status ParseRecordingLog(const std::string& bytes, const std::string& name, std::vector<FsOp>* ops);

// One record of `op` in the format the interposer writes (for tests and seed corpora; the
// interposer, in C, writes the same bytes): ParseRecordingLog reads it back as `op`.
std::string EncodeRecordingRecord(const FsOp& op);

}  // namespace ckptspec
