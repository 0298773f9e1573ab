// ParseRecordingLog on bytes alone: records written by EncodeRecordingRecord read back as they
// were; every malformed log is a Corruption naming the log, the record's byte and what is wrong.
#include "crash/recording_log.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace ckptspec {
namespace {

FsOp SampleWrite(uint64_t seq) {
  FsOp op;
  op.seq = seq;
  op.pid = 4242;
  op.kind = FsOpKind::kWrite;
  op.file = FileId{7, 12};
  op.offset = 3;
  op.data = "bytes";
  op.path = "dir/file";
  return op;
}

std::string Describe(const FsOp& op) {
  auto id = [](const FileId& f) { return std::to_string(f.dev) + ":" + std::to_string(f.ino); };
  return std::to_string(op.seq) + " " + std::to_string(op.pid) + " " + FsOpKindName(op.kind) + " " +
         id(op.file) + " " + id(op.dir) + " " + id(op.dir2) + " " + id(op.replaced) + " " +
         std::to_string(op.offset) + " " + std::to_string(op.length) + " err " +
         std::to_string(op.err) + (op.injected ? " injected" : "") + " [" + op.name + "|" +
         op.name2 + "|" + op.path + "|" + op.path2 + "|" + op.detail + "|" + op.data + "]";
}

// Parses `bytes` as log "log-7", expecting an error that contains `what`.
void ExpectError(const std::string& bytes, const std::string& what) {
  std::vector<FsOp> ops;
  const Status s = ParseRecordingLog(bytes, "log-7", &ops);
  ASSERT_FALSE(s.ok()) << what;
  EXPECT_EQ(s.code(), Status::Code::kCorruption) << s.ToString();
  EXPECT_NE(s.message().find("log-7: the record at byte"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(what), std::string::npos) << s.ToString();
}

RC_GTEST_PROP(RecordingLog, RecordsReadBackAsWritten, ()) {
  const auto count = *rc::gen::inRange<size_t>(0, 5);
  std::vector<FsOp> written;
  std::string log;
  for (size_t i = 0; i < count; ++i) {
    FsOp op;
    op.seq = *rc::gen::arbitrary<uint64_t>();
    op.pid = *rc::gen::arbitrary<int32_t>();
    op.kind =
        static_cast<FsOpKind>(*rc::gen::inRange<int>(0, static_cast<int>(FsOpKind::kUnseen) + 1));
    op.injected = *rc::gen::arbitrary<bool>();
    op.err = *rc::gen::arbitrary<int>();
    for (FileId* id : {&op.file, &op.dir, &op.dir2, &op.replaced}) {
      id->dev = *rc::gen::arbitrary<uint64_t>();
      id->ino = *rc::gen::arbitrary<uint64_t>();
    }
    op.offset = *rc::gen::arbitrary<uint64_t>();
    op.length = *rc::gen::arbitrary<uint64_t>();
    for (std::string* s : {&op.path, &op.path2, &op.detail, &op.data}) {
      *s = *rc::gen::arbitrary<std::string>();
    }
    // An entry name is one path component (or empty): no '/' or NUL, not "." or "..".
    for (std::string* s : {&op.name, &op.name2}) {
      *s = *rc::gen::suchThat(rc::gen::arbitrary<std::string>(), [](const std::string& name) {
        return name != "." && name != ".." &&
               name.find_first_of(std::string("/\0", 2)) == std::string::npos;
      });
    }
    log += EncodeRecordingRecord(op);
    written.push_back(op);
  }
  std::vector<FsOp> read;
  const Status s = ParseRecordingLog(log, "log", &read);
  RC_ASSERT(s.ok());
  RC_ASSERT(read.size() == written.size());
  for (size_t i = 0; i < read.size(); ++i) RC_ASSERT(Describe(read[i]) == Describe(written[i]));
}

TEST(RecordingLog, EveryCutThatIsNotARecordBoundaryIsAnError) {
  const std::string first = EncodeRecordingRecord(SampleWrite(0));
  const std::string log = first + EncodeRecordingRecord(SampleWrite(1));
  for (size_t cut = 0; cut <= log.size(); ++cut) {
    std::vector<FsOp> ops;
    const Status s = ParseRecordingLog(log.substr(0, cut), "log-7", &ops);
    if (cut == 0 || cut == first.size() || cut == log.size()) {
      EXPECT_TRUE(s.ok()) << cut << ": " << s.ToString();
    } else {
      ASSERT_FALSE(s.ok()) << cut;
      const std::string at =
          cut < first.size() ? "byte 0:" : "byte " + std::to_string(first.size());
      EXPECT_NE(s.message().find("log-7: the record at " + at), std::string::npos) << s.ToString();
    }
  }
}

TEST(RecordingLog, EachMalformedFieldIsNamed) {
  const std::string good = EncodeRecordingRecord(SampleWrite(0));
  auto with = [&](size_t at, const std::string& bytes) {
    std::string changed = good;
    changed.replace(at, bytes.size(), bytes);
    return changed;
  };
  ExpectError(with(0, "FSR2"), "no record magic");
  ExpectError(with(4, std::string("\x10\0\0\0", 4)), "size 16 is below the smallest record (136)");
  ExpectError(with(4, std::string("\xff\xff\xff\x00", 4)), "runs past the end of the file");
  ExpectError(with(20, "\x63"), "kind 99 is not an operation");
  ExpectError(with(21, "\x02"), "injected flag 2");
  ExpectError(with(112, std::string("\x7f\0\0\0", 4)), "a string of 127 bytes runs past its end");
  // A record whose size claims more than its fields hold (the next record's bytes included).
  std::string padded = good + std::string(4, '\0');
  const uint32_t size = static_cast<uint32_t>(padded.size());
  std::memcpy(&padded[4], &size, 4);
  ExpectError(padded, "its fields end at byte " + std::to_string(good.size()));
}

// An entry name is one path component: one that would lead a crash state's file out of the root
// (written out by the property that judges it) is refused.
TEST(RecordingLog, EntryNamesThatAreNotOneComponentAreRefused) {
  for (const std::string& name : {std::string(".."), std::string("."), std::string("a/b"),
                                  std::string("../x"), std::string("a\0b", 3)}) {
    for (bool second : {false, true}) {
      FsOp op = SampleWrite(0);
      op.kind = FsOpKind::kRename;
      op.name = "from";
      op.name2 = "to";
      (second ? op.name2 : op.name) = name;
      ExpectError(EncodeRecordingRecord(op), "is not one path component");
    }
  }
  FsOp fine = SampleWrite(0);
  fine.kind = FsOpKind::kRename;
  fine.name = "..hidden";
  fine.name2 = "a.b";
  std::vector<FsOp> ops;
  EXPECT_TRUE(ParseRecordingLog(EncodeRecordingRecord(fine), "log", &ops).ok());
}

}  // namespace
}  // namespace ckptspec
