#include "formats/pickle_reader.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "formats/pickle_globals.h"
#include "formats/pickle_keys.h"
#include "formats/pickle_memo.h"
#include "formats/pickle_text.h"
#include "formats/quoted_name.h"
#include "model/beside_thread.h"

namespace ckptspec {
namespace {

using Kind = PyValue::Kind;

// Opcodes (CPython's Lib/pickle.py names).
enum Opcode : uint8_t {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kFloatText = 'F',
  kIntText = 'I',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kLongText = 'L',
  kBinInt2 = 'M',
  kNone = 'N',
  kPersId = 'P',
  kBinPersId = 'Q',
  kReduce = 'R',
  kStringText = 'S',
  kBinString = 'T',
  kShortBinString = 'U',
  kUnicodeText = 'V',
  kBinUnicode = 'X',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kEmptyDict = '}',
  kAppends = 'e',
  kGet = 'g',
  kBinGet = 'h',
  kInst = 'i',
  kLongBinGet = 'j',
  kList = 'l',
  kEmptyList = ']',
  kObj = 'o',
  kPut = 'p',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kEmptyTuple = ')',
  kSetItems = 'u',
  kBinFloat = 'G',
  kProto = 0x80,
  kNewObj = 0x81,
  kExt1 = 0x82,
  kExt2 = 0x83,
  kExt4 = 0x84,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  kBinBytes = 'B',
  kShortBinBytes = 'C',
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kEmptySet = 0x8f,
  kAddItems = 0x90,
  kFrozenSet = 0x91,
  kNewObjEx = 0x92,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
  kByteArray8 = 0x96,
  kNextBuffer = 0x97,
  kReadonlyBuffer = 0x98,
};

// One decoded opcode: its argument is an integer (`number`), bytes (`text`), or both lines of
// GLOBAL (`text` and `text2`).
struct Op {
  uint8_t code = 0;
  size_t pos = 0;  // of the opcode byte
  uint64_t number = 0;
  std::string_view text, text2;
};

std::string At(size_t pos) { return "pickle byte " + std::to_string(pos) + ": "; }

uint64_t LittleEndian(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

// What follows each opcode: nothing, a little-endian number of 1, 2, 4 or 8 bytes (the low
// nibble), bytes counted by such a number (kCounted), or one or two newline-terminated lines.
enum ArgumentForm : uint8_t {
  kNoArgument = 0,
  kCounted = 0x10,
  kLine = 0x20,
  kTwoLines = 0x21,
};

struct ArgumentForms {
  uint8_t form[256];
};

constexpr ArgumentForms MakeArgumentForms() {
  ArgumentForms t{};
  for (uint8_t c : {kProto, kBinInt1, kBinGet, kBinPut, kExt1}) t.form[c] = 1;
  for (uint8_t c : {kBinInt2, kExt2}) t.form[c] = 2;
  for (uint8_t c : {kBinInt, kLongBinGet, kLongBinPut, kExt4}) t.form[c] = 4;
  for (uint8_t c : {kFrame, kBinFloat}) t.form[c] = 8;
  for (uint8_t c : {kShortBinUnicode, kShortBinBytes, kShortBinString, kLong1}) {
    t.form[c] = kCounted | 1;
  }
  for (uint8_t c : {kBinUnicode, kBinBytes, kBinString, kLong4}) t.form[c] = kCounted | 4;
  for (uint8_t c : {kBinUnicode8, kBinBytes8, kByteArray8}) t.form[c] = kCounted | 8;
  for (uint8_t c :
       {kIntText, kLongText, kFloatText, kStringText, kUnicodeText, kGet, kPut, kPersId}) {
    t.form[c] = kLine;
  }
  for (uint8_t c : {kGlobal, kInst}) t.form[c] = kTwoLines;
  return t;
}

constexpr ArgumentForms kArgumentForms = MakeArgumentForms();

// Whether `code` is an opcode of some protocol (0 to 5): the others are no pickle at all.
bool IsOpcode(uint8_t code) {
  static const std::string_view kOpcodes =
      "(.012FIJKLMNPQRSTUVXabcd}eghijl]opqrstuG"
      "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95"
      "\x96\x97\x98"
      "BC)";
  return kOpcodes.find(static_cast<char>(code)) != std::string_view::npos;
}

}  // namespace

// Named, not anonymous: PickleMachine holds a Decoder and has external linkage (the document names
// it as its friend). A field of an anonymous-namespace type in such a class draws GCC's
// -Wsubobject-linkage once the unity build compiles this file inside another.
namespace pickle_reader_internal {

// Decodes the opcode at `pos` into `op`, setting `*next` past it. Only checks that the argument
// lies inside the input (and parses text-protocol numbers); meaning is the machine's.
class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}

  // False when the opcode's argument runs past the end of the input (Truncated says so).
  __attribute__((always_inline)) inline bool Next(size_t pos, Op* op, size_t* next) const {
    op->pos = pos;
    op->code = static_cast<uint8_t>(in_[pos]);
    const size_t p = pos + 1;
    const uint8_t form = kArgumentForms.form[op->code];
    switch (form) {
      case kNoArgument:
        *next = p;
        return true;
      case kLine:
        return Line(p, &op->text, next);
      case kTwoLines: {
        size_t second = 0;
        return Line(p, &op->text, &second) && Line(second, &op->text2, next);
      }
      default: {
        const size_t n = form & 0xF;  // width of the number
        if (in_.size() - p < n) return false;
        const uint64_t number = LittleEndian(in_.data() + p, n);
        if (form & kCounted) {
          if (number > in_.size() - p - n) return false;
          op->number = number;
          op->text = std::string_view(in_.data() + p + n, number);
          *next = p + n + number;
        } else {
          op->number = number;
          op->text = std::string_view(in_.data() + p, n);
          *next = p + n;
        }
        return true;
      }
    }
  }

  Status Truncated(const Op* op) const {
    return Status::Corruption(At(op->pos) + "opcode 0x" + Hex(op->code) +
                              " runs past the end of the input (" + std::to_string(in_.size()) +
                              " bytes)");
  }

 private:
  static std::string Hex(uint8_t c) {
    const char* digits = "0123456789abcdef";
    return std::string{digits[c >> 4], digits[c & 15]};
  }
  bool Line(size_t p, std::string_view* out, size_t* next) const {
    const size_t end = in_.find('\n', p);
    if (end == std::string_view::npos) return false;
    *out = std::string_view(in_.data() + p, end - p);
    *next = end + 1;
    return true;
  }

  std::string_view in_;
};

}  // namespace pickle_reader_internal

namespace {

bool ParseDecimal(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

// The pickle virtual machine: builds a PickleDocument (it is the document's friend).
class PickleMachine {
 public:
  // The document takes `bytes` and refers to them.
  PickleMachine(std::string bytes, const PickleOptions& options, PickleDocument* doc)
      : in_(Adopt(std::move(bytes), doc)),
        options_(options),
        doc_(doc),
        decoder_(in_),
        keys_(*doc) {}

  static std::string_view Adopt(std::string bytes, PickleDocument* doc) {
    *doc = PickleDocument();
    doc->bytes_ = std::make_unique<const std::string>(std::move(bytes));
    return *doc->bytes_;
  }

  Status Run() {
    doc_->input_ = in_;
    // Nothing is reserved for the input's size: the arenas grow (geometrically) with the values
    // built, so a large pickle of few values (one long bytes) costs no more than they do.
    FindMemoReads();
    size_t pos = 0;
    Op op;
    while (pos < in_.size()) {
      size_t next = 0;
      if (!decoder_.Next(pos, &op, &next)) return decoder_.Truncated(&op);
      if (__builtin_expect(next > frame_end_, 0)) CKPTSPEC_RETURN_IF_ERROR(LeaveFrame(op));
      if (op.code == kStop) {
        PyValue root;
        CKPTSPEC_RETURN_IF_ERROR(Pop(op, &root));
        doc_->root_ = root;
        return Status::OK();
      }
      CKPTSPEC_RETURN_IF_ERROR(Execute(op));
      if (!Charge(0)) return OverBudget(op);
      pos = next;
    }
    return Status::Corruption(At(in_.size()) + "the input ends without STOP");
  }

 private:
  // Pass 1: which memo keys are ever read back (GET), so that the values stored at the others
  // need not be kept and those only they refer to can be released when consumed. A pickle in
  // frames (protocol 4 and later) is scanned in two halves on two threads, split at a frame
  // boundary; when the first half's opcodes do not end at the split (a frame that lies about its
  // length), the rest is scanned again from where they end, so that the keys found are those of
  // the opcodes pass 2 runs, whatever the frames say.
  void FindMemoReads() {
    const size_t split = HalfwayFrameBoundary();
    MemoReadSet second_reads;
    size_t first_end = 0;
    const auto first = [&] { first_end = ScanReads(0, split > 0 ? split : in_.size(), &reads_); };
    if (split > 0) {  // an allocation that fails on the other thread reaches the caller
      RunBeside([&] { ScanReads(split, in_.size(), &second_reads); }, first);
    } else {
      first();
    }
    if (split > 0 && first_end == split) {
      reads_.Merge(second_reads);
    } else if (first_end < in_.size()) {
      ScanReads(first_end, in_.size(), &reads_);
    }
    reads_.Finish();
    memo_.assign(reads_.size(), PyValue());
  }

  // The position of a frame (or unframed opcode) boundary near the middle of the input, found by
  // walking the frames from the start; 0 when the pickle has no frames or is too small to split.
  size_t HalfwayFrameBoundary() const {
    constexpr size_t kMinimumToSplit = size_t{1} << 20;
    if (in_.size() < kMinimumToSplit) return 0;
    Op op;
    size_t pos = 0, next = 0;
    if (!decoder_.Next(pos, &op, &next) || op.code != kProto) return 0;
    pos = next;
    bool framed = false;
    while (pos < in_.size() / 2) {
      if (!decoder_.Next(pos, &op, &next)) return 0;
      if (op.code == kFrame) {
        framed = true;
        if (op.number > in_.size() - next) return 0;
        next += op.number;  // the frame's opcodes
      } else if (!framed) {
        return 0;  // not a framed pickle: scan it in one piece
      }
      pos = next;
    }
    return pos < in_.size() ? pos : 0;
  }

  // Records, in `reads`, the memo keys that the opcodes from `begin` on read, up to the first
  // opcode boundary at or past `end`, which it returns; in_.size() when it meets STOP or an
  // opcode cut short (pass 2 runs nothing after either). A GET whose key does not parse records
  // nothing (pass 2 refuses it).
  size_t ScanReads(size_t begin, size_t end, MemoReadSet* reads) const {
    size_t pos = begin;
    Op op;
    while (pos < end) {
      size_t next = 0;
      if (!decoder_.Next(pos, &op, &next) || op.code == kStop) return in_.size();
      uint64_t key = 0;
      if (op.code == kBinGet || op.code == kLongBinGet) {
        reads->Add(op.number, op.pos);
      } else if (op.code == kGet && ParseMemoKeyText(op.text, &key)) {
        reads->Add(key, op.pos);
      }
      pos = next;
    }
    return pos;
  }

  // An opcode that ends past the frame's end: the first after the frame (which leaves it), or one
  // across its end. CPython's unpickler reads a frame into a buffer; an opcode across its end is
  // then read from the bytes after it (or from the buffer and on, when the file can peek): what
  // Python builds depends on the file, so the reader builds nothing.
  __attribute__((noinline)) Status LeaveFrame(const Op& op) {
    if (op.pos != frame_end_) return PastFrame(op);
    frame_end_ = kNoFrame;
    return Status::OK();
  }
  Status PastFrame(const Op& op) const {
    return Status::NotSupported(At(op.pos) + "an opcode that runs past the end of its frame " +
                                "(frame ending at byte " + std::to_string(frame_end_) + ")");
  }

  Status BadNumber(const Op& op) const {
    return Status::Corruption(At(op.pos) + "malformed number '" +
                              std::string(op.text.substr(0, 32)) + "'");
  }

  // Inlined into Run's loop (the stack machine's hot path), whatever its size; so are the cases
  // it hands to the methods below it.
  __attribute__((always_inline)) inline Status Execute(const Op& op) {
    switch (op.code) {
      case kProto:
        return CheckProtocol(op);
      case kFrame:
        return EnterFrame(op);
      case kMark:
        marks_.push_back(stack_.size());
        return Status::OK();
      case kPop:
        return PopTop(op);
      case kPopMark:
        return PopToMark(op);
      case kDup:
        return Dup(op);
      case kNone:
        return Push(PyValue());
      case kNewTrue:
      case kNewFalse:
        return Push(PyValue::Make(Kind::kBool, op.code == kNewTrue ? 1 : 0));
      case kBinInt1:
      case kBinInt2:
        return Push(MakeInt(static_cast<int64_t>(op.number)));
      case kBinInt:
        return Push(MakeInt(static_cast<int32_t>(static_cast<uint32_t>(op.number))));
      case kLong1:
      case kLong4:
        return PushLong(op);
      case kIntText:
        return PushIntText(op);
      case kBinFloat:
        return PushBinFloat(op);
      case kShortBinUnicode:
      case kBinUnicode:
      case kBinUnicode8:
        return PushUnicode(op);
      case kShortBinString:
      case kBinString:
        return PushPython2String(op);
      case kShortBinBytes:
      case kBinBytes:
      case kBinBytes8:
        return Push(MakeString(Kind::kBytes, op.text));
      case kByteArray8:
        return Push(MakeString(Kind::kByteArray, op.text));
      case kEmptyTuple:
        return Push(MakeTuple(nullptr, 0));
      case kTuple1:
      case kTuple2:
      case kTuple3:
        return PushSmallTuple(op);
      case kTuple:
      case kFrozenSet:
      case kList:
      case kDict:
        return PushFromMark(op);
      case kEmptyList:
        return Push(NewContainer(Kind::kList));
      case kEmptyDict:
        return Push(NewContainer(Kind::kDict));
      case kEmptySet:
        return Push(NewContainer(Kind::kSet));
      case kAppend:
      case kSetItem:
        return AddItems(op, op.code == kAppend ? 1 : 2, false);
      case kAppends:
      case kSetItems:
      case kAddItems:
        return AddItems(op, op.code == kSetItems ? 2 : 1, true);
      case kMemoize:
        return Store(op, stored_keys_.size());
      case kBinPut:
      case kLongBinPut:
        return Store(op, op.number);
      case kPut: {
        uint64_t key = 0;
        if (!ParseMemoKeyText(op.text, &key)) return BadMemoKey(op);
        return Store(op, key);
      }
      case kBinGet:
      case kLongBinGet:
        return Get(op, op.number);
      case kGet: {
        uint64_t key = 0;
        if (!ParseMemoKeyText(op.text, &key)) return BadMemoKey(op);
        return Get(op, key);
      }
      case kGlobal:
        return PushGlobal(op, op.text, op.text2);
      case kStackGlobal:
        return PushStackGlobal(op);
      case kReduce:
        return PopAndCall(op, /*is_new=*/false);
      case kNewObj:
        return PopAndCall(op, /*is_new=*/true);
      case kNewObjEx:
        return NewObjEx(op);
      case kBuild:
        return Build(op);
      case kBinPersId:
        return PushBinPersId(op);
      case kPersId:
        return PushPersIdText(op);
      default:
        return Unreadable(op);
    }
  }

  // ---- Execute's cases

  // PROTO: OK for protocols 0 to 5, NotSupported for a later one.
  __attribute__((always_inline)) inline Status CheckProtocol(const Op& op) const {
    if (op.number > 5) {
      return Status::NotSupported(At(op.pos) + "pickle protocol " + std::to_string(op.number) +
                                  " (0 to 5 are read)");
    }
    return Status::OK();
  }

  // FRAME: starts a frame inside the input; a frame nested past its enclosing frame's end errs.
  __attribute__((always_inline)) inline Status EnterFrame(const Op& op) {
    if (op.number > in_.size() - op.pos - 9) {
      return Status::Corruption(At(op.pos) + "frame of " + std::to_string(op.number) +
                                " bytes runs past the end of the input");
    }
    if (frame_end_ == kNoFrame) {
      frame_end_ = op.pos + 9 + op.number;
    } else if (op.pos + 9 + op.number > frame_end_) {
      return PastFrame(op);  // a frame in a frame, past its end
    }
    return Status::OK();
  }

  // POP: drops the top value, or (as CPython) the last MARK when nothing lies above it.
  __attribute__((always_inline)) inline Status PopTop(const Op& op) {
    // As in CPython, POP with nothing above the last MARK removes the MARK.
    if (!marks_.empty() && stack_.size() == marks_.back()) {
      marks_.pop_back();
      return Status::OK();
    }
    PyValue v;
    return Pop(op, &v);
  }

  // POP_MARK: drops the values above the last MARK, and the MARK.
  __attribute__((always_inline)) inline Status PopToMark(const Op& op) {
    size_t mark = 0;
    CKPTSPEC_RETURN_IF_ERROR(PopMark(op, &mark));
    stack_.resize(mark);
    return Status::OK();
  }

  // DUP: pushes the top value again (pinned: it now has two consumers).
  __attribute__((always_inline)) inline Status Dup(const Op& op) {
    if (stack_.size() <= Floor()) return Underflow(op);
    Pin(stack_.back());
    Charge(8);
    stack_.push_back(stack_.back());
    return Status::OK();
  }

  // BINFLOAT: pushes the big-endian IEEE double of its argument.
  __attribute__((always_inline)) inline Status PushBinFloat(const Op& op) {
    uint64_t bits = 0;
    for (size_t i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(op.text[i]);
    double d;
    std::memcpy(&d, &bits, 8);
    doc_->floats_.push_back(d);
    return Push(PyValue::Make(Kind::kFloat, doc_->floats_.size() - 1));
  }

  // A counted str: pushed when its bytes are UTF-8 as Python takes it, else Corruption.
  __attribute__((always_inline)) inline Status PushUnicode(const Op& op) {
    if (!IsPythonUtf8(op.text)) {
      return Status::Corruption(At(op.pos) + "a str whose bytes are not UTF-8");
    }
    return Push(MakeString(Kind::kStr, op.text));
  }

  // A counted Python 2 str: pushed as a str when ASCII, else NotSupported.
  __attribute__((always_inline)) inline Status PushPython2String(const Op& op) {
    // Python 2's str: pickle.load decodes it as ASCII, torch.load as UTF-8.
    if (!IsAscii(op.text)) {
      return Status::NotSupported(At(op.pos) + "a Python 2 str of bytes beyond ASCII " +
                                  "(what it reads as depends on the unpickler's encoding)");
    }
    return Push(MakeString(Kind::kStr, op.text));
  }

  // TUPLE1 to TUPLE3: replaces the top 1 to 3 values with their tuple.
  __attribute__((always_inline)) inline Status PushSmallTuple(const Op& op) {
    const size_t n = op.code - kTuple1 + 1;
    if (stack_.size() < n + Floor()) return Underflow(op);
    const PyValue t = MakeTuple(stack_.data() + stack_.size() - n, n);
    stack_.resize(stack_.size() - n);
    return Push(t);
  }

  // TUPLE, LIST, DICT, FROZENSET: replaces the values above the last MARK with their container.
  __attribute__((always_inline)) inline Status PushFromMark(const Op& op) {
    size_t mark = 0;
    CKPTSPEC_RETURN_IF_ERROR(PopMark(op, &mark));
    const size_t n = stack_.size() - mark;
    PyValue v;
    if (op.code == kTuple) {
      v = MakeTuple(stack_.data() + mark, n);
    } else if (op.code == kList) {
      v = NewContainer(Kind::kList);
      Charge(8 * n);
      doc_->containers_[v.payload()].assign(stack_.begin() + static_cast<std::ptrdiff_t>(mark),
                                            stack_.end());
    } else {
      if (op.code == kDict && n % 2 != 0) return OddItems(op);
      v = NewContainer(op.code == kDict ? Kind::kDict : Kind::kFrozenSet);
      CKPTSPEC_RETURN_IF_ERROR(PutKeys(op, v, stack_.data() + mark, n));
    }
    stack_.resize(mark);
    return Push(v);
  }

  // STACK_GLOBAL: pops the module and name (both str) and pushes the global they name.
  __attribute__((always_inline)) inline Status PushStackGlobal(const Op& op) {
    PyValue module, name;
    CKPTSPEC_RETURN_IF_ERROR(Pop(op, &name));
    CKPTSPEC_RETURN_IF_ERROR(Pop(op, &module));
    if (!module.is(Kind::kStr) || !name.is(Kind::kStr)) {
      return WrongKind(op, "STACK_GLOBAL's module and name", "str", name);
    }
    return PushGlobal(op, doc_->Str(module), doc_->Str(name));
  }

  // REDUCE (is_new false) or NEWOBJ (true): pops the arguments and the callable, and calls it.
  __attribute__((always_inline)) inline Status PopAndCall(const Op& op, bool is_new) {
    PyValue callable, args;
    CKPTSPEC_RETURN_IF_ERROR(Pop(op, &args));
    CKPTSPEC_RETURN_IF_ERROR(Pop(op, &callable));
    return Call(op, callable, args, PyValue(), is_new);
  }

  // NEWOBJ_EX: pops the keywords (a dict), the arguments and the class, and calls it.
  __attribute__((always_inline)) inline Status NewObjEx(const Op& op) {
    PyValue cls, args, kwargs;
    CKPTSPEC_RETURN_IF_ERROR(Pop(op, &kwargs));
    CKPTSPEC_RETURN_IF_ERROR(Pop(op, &args));
    CKPTSPEC_RETURN_IF_ERROR(Pop(op, &cls));
    if (!kwargs.is(Kind::kDict)) return WrongKind(op, "NEWOBJ_EX's keywords", "dict", kwargs);
    return Call(op, cls, args, kwargs, /*is_new=*/true);
  }

  // BINPERSID: pops the persistent id (pinned: the document keeps it) and pushes a reference.
  __attribute__((always_inline)) inline Status PushBinPersId(const Op& op) {
    PyValue pid;
    CKPTSPEC_RETURN_IF_ERROR(Pop(op, &pid));
    Pin(pid);
    doc_->persistent_ids_.push_back(pid);
    return Push(PyValue::Make(Kind::kPersistentId, doc_->persistent_ids_.size() - 1));
  }

  // PERSID: pushes a reference to its text persistent id, which must be ASCII.
  __attribute__((always_inline)) inline Status PushPersIdText(const Op& op) {
    if (!IsAscii(op.text)) {
      return Status::Corruption(At(op.pos) + "a text persistent id beyond ASCII");
    }
    doc_->persistent_ids_.push_back(MakeString(Kind::kStr, op.text));
    return Push(PyValue::Make(Kind::kPersistentId, doc_->persistent_ids_.size() - 1));
  }

  // Corruption for a byte that is no opcode; NotSupported for an opcode outside the data subset.
  Status Unreadable(const Op& op) const {
    if (!IsOpcode(op.code)) {
      return Status::Corruption(At(op.pos) + "byte 0x" + OpName(op.code).substr(2) +
                                " is no pickle opcode");
    }
    return Status::NotSupported(At(op.pos) + "opcode " + OpName(op.code) + " is not read" +
                                " (the reader takes the data subset of pickle)");
  }

  static std::string OpName(uint8_t code) {
    switch (code) {
      case kNewObj:
        return "NEWOBJ";
      case kNewObjEx:
        return "NEWOBJ_EX";
      case kAppend:
        return "APPEND";
      case kAppends:
        return "APPENDS";
      case kSetItem:
        return "SETITEM";
      case kSetItems:
        return "SETITEMS";
      case kAddItems:
        return "ADDITEMS";
      case kInst:
        return "INST";
      case kObj:
        return "OBJ";
      case kExt1:
      case kExt2:
      case kExt4:
        return "EXT (the extension registry)";
      case kNextBuffer:
        return "NEXT_BUFFER (out-of-band buffers)";
      case kReadonlyBuffer:
        return "READONLY_BUFFER (out-of-band buffers)";
      case kLongText:
        return "LONG (text)";
      case kFloatText:
        return "FLOAT (text)";
      case kStringText:
        return "STRING (text)";
      case kUnicodeText:
        return "UNICODE (text)";
      default: {
        const char* digits = "0123456789abcdef";
        return std::string("0x") + digits[code >> 4] + digits[code & 15];
      }
    }
  }

  // ---- the memory budget: what the values built may occupy, a fixed multiple of the input (a
  // real DCP .metadata needs about 1.5 times its size), so that no input, however it reuses the
  // memo, makes the reader allocate more (a path joined from one large string many times over,
  // objects of many fields built from a few bytes each).
  static constexpr uint64_t kBudgetPerInputByte = 8;
  static constexpr uint64_t kBudgetFloor = uint64_t{1} << 20;

  bool Charge(uint64_t bytes) {
    charged_ += bytes;
    return charged_ <= kBudgetPerInputByte * in_.size() + kBudgetFloor;
  }
  Status OverBudget(const Op& op) const {
    return Status::NotSupported(At(op.pos) + "the values built exceed " +
                                std::to_string(kBudgetPerInputByte) + " times the pickle's " +
                                std::to_string(in_.size()) + " bytes (a pickle that expands " +
                                "like this is refused)");
  }

  // ---- the stack

  size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Status Push(PyValue v) {
    stack_.push_back(v);
    return Status::OK();
  }
  Status Underflow(const Op& op) const {
    return Status::Corruption(At(op.pos) + "opcode " + OpName(op.code) +
                              " needs more values than the stack holds");
  }
  Status Pop(const Op& op, PyValue* out) {
    if (stack_.size() <= Floor()) return Underflow(op);
    *out = stack_.back();
    stack_.pop_back();
    return Status::OK();
  }
  Status PopMark(const Op& op, size_t* mark) {
    if (marks_.empty()) {
      return Status::Corruption(At(op.pos) + "opcode " + OpName(op.code) + " without a MARK");
    }
    *mark = marks_.back();
    marks_.pop_back();
    return Status::OK();
  }
  Status OddItems(const Op& op) const {
    return Status::Corruption(At(op.pos) + "a dict built from an odd number of values");
  }
  Status WrongKind(const Op& op, const std::string& what, const char* expected, PyValue got) const {
    return Status::Corruption(At(op.pos) + what + " must be " + expected + ", not " +
                              PyKindName(got.kind()));
  }

  // ---- values

  PyValue MakeInt(int64_t v) {
    if (v >= 0 && v < (int64_t{1} << 59))
      return PyValue::Make(Kind::kInt, static_cast<uint64_t>(v));
    doc_->big_ints_.push_back(v);
    return PyValue::Make(Kind::kInt, (uint64_t{1} << 59) | (doc_->big_ints_.size() - 1));
  }

  Status PushLong(const Op& op) {
    const std::string_view b = op.text;
    if (b.size() > 8) {
      // Python writes the shortest two's complement: more than 8 bytes is beyond int64.
      return Status::NotSupported(At(op.pos) + "an int of " + std::to_string(b.size()) +
                                  " bytes (beyond 64 bits)");
    }
    uint64_t v = LittleEndian(b.data(), b.size());
    if (!b.empty() && b.size() < 8 && (static_cast<uint8_t>(b.back()) & 0x80)) {
      v |= ~uint64_t{0} << (8 * b.size());  // sign-extend
    }
    return Push(MakeInt(static_cast<int64_t>(v)));
  }

  // INT's text as Python writes it: "00" (False), "01" (True), or an int in plain decimal. CPython
  // reads more (C's strtol with base 0: "010" is 8, "-0" is False): that is refused, not guessed.
  Status PushIntText(const Op& op) {
    std::string_view s = op.text;
    if (s == "00" || s == "01") return Push(PyValue::Make(Kind::kBool, s == "01" ? 1 : 0));
    const bool negative = !s.empty() && s[0] == '-';
    if (negative) s.remove_prefix(1);
    uint64_t v = 0;
    const bool plain = !s.empty() && (s[0] != '0' || (s.size() == 1 && !negative));
    if (!plain || !ParseDecimal(s, &v) || v > (uint64_t{1} << 63) - (negative ? 0 : 1)) {
      return Status::NotSupported(At(op.pos) + "INT text " + QuotedName(op.text) +
                                  " (only plain decimal is read)");
    }
    return Push(MakeInt(negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v)));
  }

  PyValue MakeString(Kind kind, std::string_view text) {
    Charge(sizeof(PickleDocument::Span64));
    doc_->strings_.push_back({static_cast<uint64_t>(text.data() - in_.data()), text.size()});
    return PyValue::Make(kind, doc_->strings_.size() - 1);
  }

  PyValue MakeOwnedString(const std::string& text) {
    Charge(sizeof(PickleDocument::Span64) + text.size());
    doc_->strings_.push_back({(uint64_t{1} << 63) | doc_->owned_.size(), text.size()});
    doc_->owned_ += text;
    return PyValue::Make(Kind::kStr, doc_->strings_.size() - 1);
  }

  PyValue MakeTuple(const PyValue* items, size_t n) {
    if (n == 0 && empty_tuple_.is(Kind::kTuple)) return empty_tuple_;
    const size_t start = doc_->tuples_.size();
    Charge(8 * (n + 1));
    doc_->tuples_.push_back(PyValue::Make(Kind::kInt, (uint64_t{n} << 1) | (n == 0 ? 1 : 0)));
    doc_->tuples_.append(items, n);
    const PyValue t = PyValue::Make(Kind::kTuple, start);
    if (n == 0) empty_tuple_ = t;
    return t;
  }

  PyValue NewContainer(Kind kind) {
    size_t index;
    if (!free_containers_.empty()) {
      index = free_containers_.back();
      free_containers_.pop_back();
      container_pinned_[index] = false;
    } else {
      index = doc_->containers_.size();
      doc_->containers_.emplace_back();
      container_pinned_.push_back(false);
    }
    return PyValue::Make(kind, index);
  }

  // A value that something besides its one consumer refers to (the memo, a DUP) is never released;
  // an object so referred to is shared (it may meet a dict twice).
  void Pin(PyValue v) {
    if (v.is(Kind::kTuple) || v.is(Kind::kObject)) {
      PyValue& slot = v.is(Kind::kTuple) ? doc_->tuples_[v.payload()] : doc_->objects_[v.payload()];
      slot = PyValue::Make(Kind::kInt, slot.payload() | 1);
    }
    if (IsContainer(v)) container_pinned_[v.payload()] = true;
  }

  static bool IsContainer(PyValue v) {
    return v.is(Kind::kList) || v.is(Kind::kDict) || v.is(Kind::kSet) || v.is(Kind::kFrozenSet);
  }

  // Releases a value its consumer used up (a reduce's arguments, an object's state), unless
  // pinned. Tuples are released only from the end of the tuple arena.
  void Release(PyValue v) {
    if (v.is(Kind::kTuple)) {
      const size_t start = v.payload();
      const PyValue slot = doc_->tuples_[start];
      const size_t n = PickleDocument::TupleLength(slot);
      if ((slot.payload() & 1) || start + 1 + n != doc_->tuples_.size()) return;
      doc_->tuples_.resize(start);
    } else if (IsContainer(v)) {
      const size_t i = v.payload();
      if (container_pinned_[i]) return;
      std::vector<PyValue>& items = doc_->containers_[i];
      if (items.size() >= kSearchedOneByOne) key_tables_.erase(i);  // only such have a table
      // A small container keeps its buffer for the next one (an object's state dict is built and
      // consumed once per object); a large one gives its memory back.
      if (items.capacity() > 16) {
        std::vector<PyValue>().swap(items);
      } else {
        items.clear();
      }
      container_pinned_[i] = true;  // never released twice
      free_containers_.push_back(i);
    }
  }

  // APPEND(S) to a list, SETITEM(S) to a dict, ADDITEMS to a set. As in CPython, a batch of no
  // items does nothing to whatever lies under its MARK.
  Status AddItems(const Op& op, size_t arity, bool batch) {
    size_t start = 0;
    if (batch) {
      CKPTSPEC_RETURN_IF_ERROR(PopMark(op, &start));
    } else {
      if (stack_.size() < arity + 1 + Floor()) return Underflow(op);
      start = stack_.size() - arity;
    }
    if (start <= Floor()) return Underflow(op);
    const PyValue target = stack_[start - 1];
    const size_t n = stack_.size() - start;
    if (n == 0) return Status::OK();
    const Kind want = arity == 2 ? Kind::kDict : op.code == kAddItems ? Kind::kSet : Kind::kList;
    if (!target.is(want)) {
      // Python appends to a bytearray, and assigns items of a list or bytearray by index.
      if (target.is(Kind::kByteArray) || (arity == 2 && target.is(Kind::kList))) {
        return Status::NotSupported(At(op.pos) + OpName(op.code) + " on a " +
                                    PyKindName(target.kind()) + " is not read");
      }
      return WrongKind(op, "the target of " + OpName(op.code), PyKindName(want), target);
    }
    if (n % arity != 0) return OddItems(op);
    if (want == Kind::kList) {
      std::vector<PyValue>& c = doc_->containers_[target.payload()];
      Charge(8 * n);
      c.insert(c.end(), stack_.begin() + static_cast<std::ptrdiff_t>(start), stack_.end());
    } else {
      CKPTSPEC_RETURN_IF_ERROR(PutKeys(op, target, stack_.data() + start, n));
    }
    stack_.resize(start);
    return Status::OK();
  }

  // ---- dict keys and set elements (pickle_keys.h)

  // A container holding fewer keys is searched one by one; a larger one through a table.
  static constexpr size_t kSearchedOneByOne = 8;

  // Adds `n` values at `values` to the dict (as key, value, key, value...) or set `container`.
  Status PutKeys(const Op& op, PyValue container, const PyValue* values, size_t n) {
    const bool dict = container.is(Kind::kDict);
    std::vector<PyValue>& items = doc_->containers_[container.payload()];
    if (items.capacity() < items.size() + n) {
      items.reserve(std::max(items.size() + n, 2 * items.capacity()));
    }
    Charge(8 * n);
    const size_t stride = dict ? 2 : 1;
    for (size_t i = 0; i < n; i += stride) {
      // The usual case inline: a str key (equal to str keys only) of a dict of a few keys.
      const PyValue key = values[i];
      if (dict && key.is(Kind::kStr) && items.size() < 2 * kSearchedOneByOne) {
        size_t at = 0;
        while (at < items.size() && !(items[at].is(Kind::kStr) && SameStr(items[at], key))) at += 2;
        if (at < items.size()) {
          items[at + 1] = values[i + 1];
        } else {
          items.push_back(key);
          items.push_back(values[i + 1]);
        }
        continue;
      }
      CKPTSPEC_RETURN_IF_ERROR(PutKey(op, container, key, dict ? &values[i + 1] : nullptr));
    }
    return Status::OK();
  }

  bool SameStr(PyValue a, PyValue b) const {
    if (a == b) return true;
    if (doc_->strings_[a.payload()].size != doc_->strings_[b.payload()].size) return false;
    return doc_->Str(a) == doc_->Str(b);
  }

  // Adds `key` (with `*value` for a dict) to the dict or set `container` as Python's d[key] =
  // value or s.add(key) does.
  Status PutKey(const Op& op, PyValue container, PyValue key, const PyValue* value) {
    std::vector<PyValue>& items = doc_->containers_[container.payload()];
    // An object the pickle refers to once only (not shared: see Pin) equals no key held.
    const bool once = key.is(Kind::kObject) && !(doc_->objects_[key.payload()].payload() & 1);
    int64_t found = -1;
    if (!once) CKPTSPEC_RETURN_IF_ERROR(FindKey(op, container, key, &found));
    if (found >= 0) {
      if (value != nullptr) items[static_cast<size_t>(found) * 2 + 1] = *value;
      return Status::OK();
    }
    items.push_back(key);
    if (value != nullptr) items.push_back(*value);
    return Status::OK();
  }

  // Sets `*found` to the position of the key of `container` equal to `key`, or -1 (when the key is
  // then added, it is added to the container's table here). A container of a few keys is searched
  // one by one; a larger one through a table of its keys by hash.
  Status FindKey(const Op& op, PyValue container, PyValue key, int64_t* found) {
    const std::vector<PyValue>& items = doc_->containers_[container.payload()];
    const size_t stride = container.is(Kind::kDict) ? 2 : 1;
    const uint64_t held = stride == 2 ? items.size() / 2 : items.size();
    // A table is made once a container holds kSearchedOneByOne keys (and they never get fewer).
    auto table =
        held < kSearchedOneByOne ? key_tables_.end() : key_tables_.find(container.payload());
    if (table == key_tables_.end() && held < kSearchedOneByOne) {
      if (!key.is(Kind::kStr)) {
        const KeyAnswer hashable = keys_.Hashable(key);
        if (hashable != KeyAnswer::kYes) return BadKey(op, container, key, hashable);
      }
      for (uint64_t i = 0; i < held; ++i) {
        const KeyAnswer equal = SameKey(items[i * stride], key);
        if (equal == KeyAnswer::kTooCostly) return BadKey(op, container, key, equal);
        if (equal == KeyAnswer::kYes) {
          *found = static_cast<int64_t>(i);
          return Status::OK();
        }
      }
      return Status::OK();
    }
    uint64_t hash = 0;
    const KeyAnswer hashable = keys_.Hash(key, &hash);
    if (hashable != KeyAnswer::kYes) return BadKey(op, container, key, hashable);
    if (table == key_tables_.end()) {
      table = key_tables_.emplace(container.payload(), PyKeyTable()).first;
      for (uint64_t i = 0; i < held; ++i) {
        uint64_t held_hash = 0;
        const KeyAnswer a = keys_.Hash(items[i * stride], &held_hash);
        if (a != KeyAnswer::kYes) return BadKey(op, container, items[i * stride], a);
        table->second.Add(held_hash, i);
      }
      Charge(table->second.MemoryBytes());
    }
    bool too_costly = false;
    *found = table->second.Find(
        hash, [&](uint64_t i) { return SameKey(items[i * stride], key); }, &too_costly);
    if (too_costly) return BadKey(op, container, key, KeyAnswer::kTooCostly);
    if (*found < 0) {
      if (held >= PyKeyTable::kMaxKeys) {
        return Status::NotSupported(At(op.pos) + "a " + PyKindName(container.kind()) +
                                    " of more than " + std::to_string(PyKeyTable::kMaxKeys) +
                                    " keys");
      }
      table->second.Add(hash, held);
      Charge(24);
    }
    return Status::OK();
  }

  // keys_.Equal, answering the usual questions (the same value; str keys) without the call.
  KeyAnswer SameKey(PyValue held, PyValue key) const {
    if (held == key) return KeyAnswer::kYes;
    if (held.is(Kind::kStr) && key.is(Kind::kStr)) {
      return SameStr(held, key) ? KeyAnswer::kYes : KeyAnswer::kNo;
    }
    if (key.is(Kind::kObject) || key.is(Kind::kGlobal) || key.is(Kind::kPersistentId)) {
      return KeyAnswer::kNo;  // equal only to itself
    }
    return keys_.Equal(held, key);
  }

  Status BadKey(const Op& op, PyValue container, PyValue key, KeyAnswer answer) const {
    const std::string what = container.is(Kind::kDict) ? "a dict key" : "a set element";
    if (answer == KeyAnswer::kTooCostly) {
      return Status::NotSupported(At(op.pos) + what + " too costly to compare (tuples nested " +
                                  "or shared beyond what is read)");
    }
    return Status::Corruption(At(op.pos) + what + " must be hashable, not " +
                              (key.is(Kind::kTuple) ? "a tuple holding a list, dict, set or "
                                                      "bytearray"
                                                    : std::string("a ") + PyKindName(key.kind())));
  }

  // ---- the memo (pickle_memo.h)

  // Stores the stack's top at `key`; its value is kept only when some GET reads the key. (Store
  // and Get stay calls, so that Execute's switch stays compact.)
  __attribute__((noinline)) Status Store(const Op& op, uint64_t key) {
    if (stack_.size() <= Floor()) return Underflow(op);
    if (stored_keys_.Insert(key) == MemoKeySet::Insertion::kNewFar &&
        !Charge(MemoKeySet::kFarKeyBytes)) {
      return OverBudget(op);
    }
    const int64_t slot = reads_.Slot(key);
    if (slot < 0) return Status::OK();
    Pin(stack_.back());
    memo_[static_cast<size_t>(slot)] = stack_.back();
    return Status::OK();
  }

  __attribute__((noinline)) Status Get(const Op& op, uint64_t key) {
    const int64_t slot = reads_.Slot(key);
    if (slot < 0 || !stored_keys_.Contains(key)) {
      return Status::Corruption(At(op.pos) + "memo slot " + std::to_string(key) +
                                " is read before it is stored");
    }
    return Push(memo_[static_cast<size_t>(slot)]);
  }

  Status BadMemoKey(const Op& op) const {
    return Status::Corruption(At(op.pos) + "memo key " + QuotedName(op.text) +
                              " is not an integer from 0 to 2^63 - 1");
  }

  // ---- globals and objects

  Status PushGlobal(const Op& op, std::string_view module, std::string_view name) {
    const PickleClass* c = FindPickleGlobal(module, name);
    if (c == nullptr) {
      if (!options_.permissive) {
        return Status::NotSupported(
            At(op.pos) + "global " + QuotedName(std::string(module) + "." + std::string(name)) +
            " is not allowed (not a class of the " + "checkpoint formats this reader knows)");
      }
      c = OpaqueClass(module, name);
    }
    return Push(PyValue::Make(Kind::kGlobal, ClassId(c)));
  }

  const PickleClass* OpaqueClass(std::string_view module, std::string_view name) {
    const std::string full = std::string(module) + "\n" + std::string(name);
    const auto it = opaque_by_name_.find(full);
    if (it != opaque_by_name_.end()) return it->second;
    auto module_name = std::make_unique<std::string>(module);
    auto class_name = std::make_unique<std::string>(name);
    auto c = std::make_unique<PickleClass>(PickleClass{module_name->c_str(),
                                                       class_name->c_str(),
                                                       GlobalRole::kOpaque,
                                                       2,
                                                       {"__args__", "__state__"},
                                                       true,
                                                       nullptr});
    const PickleClass* raw = c.get();
    doc_->opaque_names_.push_back(std::move(module_name));
    doc_->opaque_names_.push_back(std::move(class_name));
    doc_->opaque_classes_.push_back(std::move(c));
    opaque_by_name_[full] = raw;
    return raw;
  }

  uint64_t ClassId(const PickleClass* c) {
    const auto it = class_ids_.find(c);
    if (it != class_ids_.end()) return it->second;
    doc_->classes_.push_back(c);
    class_ids_[c] = doc_->classes_.size() - 1;
    return doc_->classes_.size() - 1;
  }

  PyValue NewObject(const PickleClass* c) {
    const size_t start = doc_->objects_.size();
    doc_->objects_.push_back(PyValue::Make(Kind::kInt, ClassId(c) << 1));
    Charge(8 * (1 + c->field_count));
    doc_->objects_.resize(start + 1 + c->field_count);
    return PyValue::Make(Kind::kObject, start);
  }

  PyValue& FieldSlot(PyValue object, size_t index) {
    return doc_->objects_[object.payload() + 1 + index];
  }

  // Sets attribute `name` of `object` (a field, or an extra attribute where the class takes them).
  Status SetAttribute(const Op& op, PyValue object, PyValue name, PyValue value) {
    const PickleClass* c = doc_->ClassOf(object);
    if (!name.is(Kind::kStr)) return WrongKind(op, "an attribute name", "str", name);
    const std::string_view key = doc_->Str(name);
    for (size_t i = 0; i < c->field_count; ++i) {
      if (key == c->fields[i]) {
        FieldSlot(object, i) = value;
        return Status::OK();
      }
    }
    if (!c->accepts_extra_attributes) {
      return Status::Corruption(At(op.pos) + std::string(c->module) + "." + c->name +
                                " has no attribute " + QuotedName(key));
    }
    PyValue& extras = doc_->extras_[object.payload()];
    if (!extras.is(Kind::kDict)) {
      const PyValue d = NewContainer(Kind::kDict);
      container_pinned_[d.payload()] = true;
      doc_->extras_[object.payload()] = d;
    }
    Charge(16);
    return PutKey(op, doc_->extras_[object.payload()], name, &value);
  }

  Status SetPositional(const Op& op, PyValue object, PySpan args) {
    const PickleClass* c = doc_->ClassOf(object);
    if (args.size > c->field_count) {
      return Status::Corruption(At(op.pos) + std::string(c->module) + "." + c->name + " takes " +
                                std::to_string(c->field_count) + " fields, given " +
                                std::to_string(args.size));
    }
    for (size_t i = 0; i < args.size; ++i) FieldSlot(object, i) = args[i];
    return Status::OK();
  }

  Status SetFromDict(const Op& op, PyValue object, PyValue dict) {
    const PySpan items = doc_->Items(dict);
    for (size_t i = 0; i + 1 < items.size; i += 2) {
      CKPTSPEC_RETURN_IF_ERROR(SetAttribute(op, object, items[i], items[i + 1]));
    }
    return Status::OK();
  }

  // REDUCE, NEWOBJ and NEWOBJ_EX: `callable` applied to `args` (and `kwargs`, NEWOBJ_EX's).
  // `is_new`: NEWOBJ or NEWOBJ_EX, which Python applies to classes only (cls.__new__).
  Status Call(const Op& op, PyValue callable, PyValue args, PyValue kwargs, bool is_new) {
    if (!callable.is(Kind::kGlobal))
      return WrongKind(op, "what REDUCE calls", "a global", callable);
    if (!args.is(Kind::kTuple)) return WrongKind(op, "REDUCE's arguments", "tuple", args);
    const PickleClass* c = doc_->ClassOf(callable);
    const PySpan a = doc_->Items(args);
    const auto name = [c] { return std::string(c->module) + "." + c->name; };  // for errors
    const bool function = c->role == GlobalRole::kLayout || c->role == GlobalRole::kGetattr ||
                          c->role == GlobalRole::kRebuildTensor ||
                          c->role == GlobalRole::kRebuildParameter;
    if (is_new && function) {
      return Status::Corruption(At(op.pos) + OpName(op.code) + " needs a class, and " + name() +
                                " is a function");
    }
    const bool fields = c->role == GlobalRole::kDataclass || c->role == GlobalRole::kStateTuple;
    if (doc_->Len(kwargs) > 0 && !fields) {
      return Status::NotSupported(At(op.pos) + "keyword arguments to " + name() + " are not read");
    }
    PyValue result;
    switch (c->role) {
      case GlobalRole::kDataclass:
      case GlobalRole::kStateTuple:
        result = NewObject(c);
        CKPTSPEC_RETURN_IF_ERROR(SetPositional(op, result, a));
        if (kwargs.is(Kind::kDict)) CKPTSPEC_RETURN_IF_ERROR(SetFromDict(op, result, kwargs));
        break;
      case GlobalRole::kOpaque:
        result = NewObject(c);
        Pin(args);
        FieldSlot(result, 0) = args;
        Push(result).IgnoreError();  // Push cannot fail
        return Status::OK();
      case GlobalRole::kEnum:
        if (a.size != 1) return Arity(op, name(), "1", a.size);
        result = NewObject(c);
        FieldSlot(result, 0) = a[0];
        break;
      case GlobalRole::kGetattr: {
        if (a.size != 2) return Arity(op, name(), "2", a.size);
        const PickleClass* owner = doc_->ClassOf(a[0]);
        if (!a[0].is(Kind::kGlobal) || owner->role != GlobalRole::kEnum || !a[1].is(Kind::kStr)) {
          return Status::NotSupported(At(op.pos) +
                                      "builtins.getattr is allowed only for an enum member "
                                      "of a whitelisted enum");
        }
        result = NewObject(owner);
        FieldSlot(result, 0) = a[1];
        break;
      }
      case GlobalRole::kTorchSize:
        if (a.size != 1 || !(a[0].is(Kind::kTuple) || a[0].is(Kind::kList))) {
          return Status::Corruption(At(op.pos) + "torch.Size takes one tuple of ints");
        }
        for (const PyValue& d : doc_->Items(a[0])) {
          if (!d.is(Kind::kInt)) return WrongKind(op, "a torch.Size dimension", "int", d);
        }
        result = a[0].is(Kind::kTuple) ? a[0] : MakeTuple(doc_->Items(a[0]).data, doc_->Len(a[0]));
        break;
      case GlobalRole::kLayout:
        if (a.size != 1 || !a[0].is(Kind::kStr)) {
          return Status::Corruption(At(op.pos) + name() + " takes one str");
        }
        result = a[0];
        break;
      case GlobalRole::kOrderedDict:
        if (a.size != 0) return Arity(op, name(), "0", a.size);
        result = NewContainer(Kind::kDict);
        break;
      case GlobalRole::kPath: {
        std::string joined;
        for (const PyValue& part : a) {
          if (!part.is(Kind::kStr)) return WrongKind(op, "a path part", "str", part);
          if (!Charge(doc_->Str(part).size() + 1)) return OverBudget(op);
          if (!joined.empty() && joined.back() != '/') joined += '/';
          joined += doc_->Str(part);
        }
        result = MakeOwnedString(joined);
        break;
      }
      case GlobalRole::kRebuildTensor: {
        if (a.size < 6 || a.size > 7) return Arity(op, name(), "6 or 7", a.size);
        result = NewObject(&TensorClass());
        const bool v3 = std::string_view(c->name) == "_rebuild_tensor_v3";
        for (size_t i = 0; i < a.size; ++i) {
          if (i == 6 && !v3) break;  // v2's 7th argument is metadata, not a dtype
          FieldSlot(result, i) = a[i];
        }
        break;
      }
      case GlobalRole::kRebuildParameter:
        if (a.size < 1) return Arity(op, name(), "at least 1", a.size);
        result = a[0];
        Pin(result);  // met again whenever these arguments are (a shared tuple)
        break;
      case GlobalRole::kDType:
      case GlobalRole::kStorageClass:
        return Status::NotSupported(At(op.pos) + name() + " is not callable here");
    }
    Release(args);
    return Push(result);
  }

  Status Arity(const Op& op, const std::string& name, const char* want, size_t got) const {
    return Status::Corruption(At(op.pos) + name + " takes " + want + " arguments, given " +
                              std::to_string(got));
  }

  Status Build(const Op& op) {
    PyValue state;
    CKPTSPEC_RETURN_IF_ERROR(Pop(op, &state));
    if (stack_.size() <= Floor()) return Underflow(op);
    const PyValue object = stack_.back();
    if (!object.is(Kind::kObject)) {
      // Python sets no state from None, whatever the target; a state for anything but an object
      // of a whitelisted class is outside what is read.
      if (state.is(Kind::kNone)) return Status::OK();
      return Status::NotSupported(At(op.pos) + "BUILD on a " + PyKindName(object.kind()) +
                                  " (only objects of whitelisted classes take a state)");
    }
    const PickleClass* c = doc_->ClassOf(object);
    if (c->role == GlobalRole::kOpaque) {
      Pin(state);
      FieldSlot(object, 1) = state;
      return Status::OK();
    }
    if (state.is(Kind::kDict)) {
      CKPTSPEC_RETURN_IF_ERROR(SetFromDict(op, object, state));
    } else if (state.is(Kind::kTuple) && c->role == GlobalRole::kStateTuple) {
      CKPTSPEC_RETURN_IF_ERROR(SetPositional(op, object, doc_->Items(state)));
    } else if (state.is(Kind::kTuple) && doc_->Len(state) == 2) {
      // (instance dict or None, slot dict): an object with __slots__.
      for (const PyValue& part : doc_->Items(state)) {
        if (part.is(Kind::kDict)) {
          CKPTSPEC_RETURN_IF_ERROR(SetFromDict(op, object, part));
        } else if (!part.is(Kind::kNone)) {
          return WrongKind(op, "a part of BUILD's state", "dict or None", part);
        }
      }
    } else if (!state.is(Kind::kNone)) {
      return WrongKind(op, "BUILD's state of " + std::string(c->module) + "." + c->name, "dict",
                       state);
    }
    Release(state);
    return Status::OK();
  }

  std::string_view in_;
  uint64_t charged_ = 0;  // bytes of values built so far (Charge)
  PickleOptions options_;
  PickleDocument* doc_;
  pickle_reader_internal::Decoder decoder_;
  PyKeys keys_;
  // By container: the table of its keys, once it holds more than a few (PutKey).
  std::unordered_map<size_t, PyKeyTable> key_tables_;

  std::vector<PyValue> stack_;
  std::vector<size_t> marks_;
  // The end of the frame the opcodes are read from; kNoFrame outside frames.
  static constexpr size_t kNoFrame = SIZE_MAX;
  size_t frame_end_ = kNoFrame;
  // The memo: the keys stored so far, and the values of those some GET reads (by their slot).
  MemoReadSet reads_;
  MemoKeySet stored_keys_;
  std::vector<PyValue> memo_;
  std::vector<bool> container_pinned_;
  std::vector<size_t> free_containers_;
  PyValue empty_tuple_;
  std::unordered_map<const PickleClass*, uint64_t> class_ids_;
  std::unordered_map<std::string, const PickleClass*> opaque_by_name_;
};

Status ReadPickle(std::string bytes, const PickleOptions& options, PickleDocument* doc) {
  return PickleMachine(std::move(bytes), options, doc).Run();
}

}  // namespace ckptspec
