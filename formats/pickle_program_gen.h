// A RapidCheck generator of pickle programs over the reader's whitelist (pickle_reader.h,
// pickle_globals.h), for the differential test against CPython: pickles of protocol 2 to 5 (the
// text PUT and GET of protocol 0 among their memo opcodes) building values as Python's pickler
// and torch write them - ints, floats, str and bytes in every encoding, tuples, lists, dicts,
// sets and frozensets (batched or not), the DCP classes by NEWOBJ + BUILD, REDUCE or NEWOBJ_EX,
// enum members, torch.Size, dtypes, layouts, paths, OrderedDicts, tensors with their persistent
// ids - with the memo used at random: MEMOIZE, BINPUT, LONG_BINPUT and PUT at keys Python would
// choose and at others, GETs of keys stored and not; then, for some programs, noise at opcode
// boundaries (an opcode inserted, dropped or repeated) and frames, some of which lie about their
// length. Keys and strings come from small pools, so that dict keys repeat and shared values
// meet.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <string>
#include <vector>

#include "formats/pickle_globals.h"

namespace ckptspec {
namespace pickle_program_gen {

// The opcodes of a program, each with its argument.
class Ops {
 public:
  void Add(std::string op) { ops_.push_back(std::move(op)); }
  void Byte(int b) { Add(std::string(1, static_cast<char>(b))); }
  static std::string Le(uint64_t v, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
    return s;
  }
  std::vector<std::string>& ops() { return ops_; }

 private:
  std::vector<std::string> ops_;
};

inline const std::vector<std::string>& StrPool() {
  static const std::vector<std::string> kPool = {"",
                                                 "a",
                                                 "offsets",
                                                 "sizes",
                                                 "fqn",
                                                 "w",
                                                 "model.layer.0.weight",
                                                 "torch.strided",
                                                 "TENSOR",
                                                 "name",
                                                 "storage",
                                                 "cpu",
                                                 "\xc3\xa9t\xc3\xa9",
                                                 "\xed\xa0\x80",
                                                 "\xff",
                                                 "x\ny",
                                                 "1",
                                                 "__0_0.distcp"};
  return kPool;
}

class Writer {
 public:
  explicit Writer(int protocol) : protocol_(protocol) {}
  Ops& ops() { return ops_; }

  void Int(int64_t v) {
    const int form = *rc::gen::inRange(0, 4);
    if (form == 0 && v >= 0 && v < 256) return Add("K" + Ops::Le(static_cast<uint64_t>(v), 1));
    if (form == 1 && v >= 0 && v < 65536) return Add("M" + Ops::Le(static_cast<uint64_t>(v), 2));
    if (form <= 2 && v >= INT32_MIN && v <= INT32_MAX) {
      return Add("J" + Ops::Le(static_cast<uint32_t>(static_cast<int32_t>(v)), 4));
    }
    // LONG1, shortest two's complement or padded to 8 bytes.
    int n = 8;
    if (*rc::gen::arbitrary<bool>()) {
      n = 0;
      while (n < 8) {
        const int64_t lo = n == 0 ? 0 : -(int64_t{1} << (8 * n - 1));
        const int64_t hi = n == 0 ? 0 : (int64_t{1} << (8 * n - 1)) - 1;
        if (v >= lo && v <= hi) break;
        ++n;
      }
    }
    Add("\x8a" + std::string(1, static_cast<char>(n)) + Ops::Le(static_cast<uint64_t>(v), n));
  }

  void Str(const std::string& s) {
    switch (*rc::gen::inRange(0, 5)) {
      case 0:
        if (s.size() < 256) return Add("\x8c" + std::string(1, static_cast<char>(s.size())) + s);
        [[fallthrough]];
      case 1:
        return Add("X" + Ops::Le(s.size(), 4) + s);
      case 2:
        return Add("\x8d" + Ops::Le(s.size(), 8) + s);
      case 3:  // Python 2's str
        if (s.size() < 256) return Add("U" + std::string(1, static_cast<char>(s.size())) + s);
        [[fallthrough]];
      default:
        return Add("T" + Ops::Le(s.size(), 4) + s);
    }
  }

  void Bytes(const std::string& s) {
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        if (s.size() < 256) return Add("C" + std::string(1, static_cast<char>(s.size())) + s);
        [[fallthrough]];
      case 1:
        return Add("B" + Ops::Le(s.size(), 4) + s);
      case 2:
        return Add("\x8e" + Ops::Le(s.size(), 8) + s);
      default:
        return Add("\x96" + Ops::Le(s.size(), 8) + s);  // bytearray
    }
  }

  void Global(const PickleClass& c) {
    if (*rc::gen::inRange(0, 4) == 0) {
      Add("c" + std::string(c.module) + "\n" + c.name + "\n");
    } else {
      Str(c.module);
      MaybeStore();
      Str(c.name);
      MaybeStore();
      Byte(0x93);
    }
    MaybeStore();
  }

  // A store to the memo, half of the time: MEMOIZE (from protocol 4), or BINPUT, LONG_BINPUT or
  // PUT at len(memo) as Python writes, at a small key, at a key stored or at a large one.
  void MaybeStore() {
    if (*rc::gen::arbitrary<bool>()) return;
    const int form = *rc::gen::inRange(protocol_ >= 4 ? 0 : 4, 10);
    if (form < 4) {
      Byte(0x94);
      Stored(stored_.size());
      return;
    }
    uint64_t key = stored_.size();
    const int choice = *rc::gen::inRange(0, 20);
    if (choice >= 7 && choice < 14) key = *rc::gen::inRange<uint64_t>(0, 8);
    if (choice >= 14 && choice < 18 && !stored_.empty()) key = *rc::gen::elementOf(stored_);
    if (choice >= 18) key = *rc::gen::inRange<uint64_t>(0, 100000);
    if (form < 7 && key < 256) {
      Add("q" + Ops::Le(key, 1));
    } else if (form < 9) {
      Add("r" + Ops::Le(key, 4));
    } else {
      Add("p" + std::to_string(key) + "\n");
    }
    Stored(key);
  }

  void Stored(uint64_t key) {
    for (uint64_t k : stored_) {
      if (k == key) return;
    }
    stored_.push_back(key);
  }

  // A GET of a key stored (or, at times, of one that is not).
  bool Get() {
    uint64_t key = *rc::gen::inRange<uint64_t>(0, 10);
    if (!stored_.empty() && *rc::gen::inRange(0, 8) != 0) key = *rc::gen::elementOf(stored_);
    const int form = *rc::gen::inRange(0, 3);
    if (form == 0 && key < 256) {
      Add("h" + Ops::Le(key, 1));
    } else if (form == 1) {
      Add("g" + std::to_string(key) + "\n");
    } else {
      Add("j" + Ops::Le(key, 4));
    }
    return true;
  }

  void Add(std::string op) { ops_.Add(std::move(op)); }
  void Byte(int b) { ops_.Byte(b); }
  int protocol() const { return protocol_; }
  size_t stores() const { return stored_.size(); }

 private:
  int protocol_;
  Ops ops_;
  std::vector<uint64_t> stored_;  // the keys stored, in order (the generator's guess)
};

inline const PickleClass* FindGlobal(const char* module, const char* name) {
  return FindPickleGlobal(module, name);
}

inline const PickleClass& AnyGlobalOfRole(GlobalRole role) {
  size_t count = 0;
  const PickleClass* all = PickleGlobals(&count);
  std::vector<const PickleClass*> of_role;
  for (size_t i = 0; i < count; ++i) {
    if (all[i].role == role) of_role.push_back(&all[i]);
  }
  return **rc::gen::elementOf(of_role);
}

void Value(Writer* w, int depth);

// A value fit to be a dict key or set element (most of the time).
inline void Key(Writer* w, int depth) {
  switch (*rc::gen::inRange(0, 8)) {
    case 0:
    case 1:
    case 2:
      w->Str(*rc::gen::elementOf(StrPool()));
      break;
    case 3:
      w->Int(*rc::gen::inRange<int64_t>(-2, 3));
      break;
    case 4:
      w->Byte(*rc::gen::arbitrary<bool>() ? 0x88 : 0x89);
      break;
    case 5:
      w->Add("G" + std::string("\x3f\xf0\x00\x00\x00\x00\x00\x00", 8));  // 1.0
      break;
    case 6:  // a tuple of keys
      Key(w, depth - 1);
      Key(w, depth - 1);
      w->Byte(0x86);
      break;
    default:
      Value(w, depth - 1);  // anything, unhashable at times
      break;
  }
  w->MaybeStore();
}

inline void Items(Writer* w, int depth, int arity, int open, int batch_op, int one_op) {
  w->Byte(open);
  w->MaybeStore();
  const int n = *rc::gen::inRange(0, 5);
  const bool batch = one_op == 0 || *rc::gen::arbitrary<bool>();  // ADDITEMS comes in batches only
  if (batch) w->Byte('(');
  for (int i = 0; i < n; ++i) {
    if (arity == 2 || open == 0x8f) {
      Key(w, depth);
    } else {
      Value(w, depth - 1);
    }
    if (arity == 2) Value(w, depth - 1);
    if (!batch && one_op != 0) w->Byte(one_op);
  }
  if (batch) w->Byte(batch_op);
}

// A whitelisted object, as torch's classes pickle.
inline void Object(Writer* w, int depth) {
  const GlobalRole role =
      *rc::gen::elementOf(std::vector<GlobalRole>{GlobalRole::kDataclass, GlobalRole::kStateTuple});
  const PickleClass& c = AnyGlobalOfRole(role);
  w->Global(c);
  const int form = *rc::gen::inRange(0, 4);
  if (form <= 1) {  // NEWOBJ(), then BUILD
    w->Byte(')');
    w->Byte(0x81);
    w->MaybeStore();
    if (role == GlobalRole::kStateTuple && form == 0) {
      w->Byte('(');
      for (size_t i = 0; i < c.field_count; ++i) Value(w, depth - 1);
      w->Byte('t');
    } else {
      w->Byte('}');
      w->Byte('(');
      const int n = *rc::gen::inRange(0, static_cast<int>(c.field_count) + 2);
      for (int i = 0; i < n; ++i) {
        const bool known = c.field_count > 0 && *rc::gen::inRange(0, 6) != 0;
        w->Str(known ? std::string(*rc::gen::elementOf(
                           std::vector<std::string_view>(c.fields, c.fields + c.field_count)))
                     : *rc::gen::elementOf(StrPool()));
        w->MaybeStore();
        Value(w, depth - 1);
      }
      w->Byte('u');
    }
    w->Byte('b');
  } else {  // REDUCE or NEWOBJ_EX with positional fields
    w->Byte('(');
    const int n = *rc::gen::inRange(0, static_cast<int>(c.field_count) + 2);
    for (int i = 0; i < n; ++i) Value(w, depth - 1);
    w->Byte('t');
    if (form == 2) {
      w->Byte('R');
    } else {
      w->Byte('}');
      if (*rc::gen::arbitrary<bool>() && c.field_count > 0) {
        w->Str(std::string(c.fields[c.field_count - 1]));
        Value(w, depth - 1);
        w->Byte('s');
      }
      w->Byte(0x92);
    }
  }
}

inline void Tensor(Writer* w, int depth) {
  w->Global(*FindGlobal("torch._utils",
                        *rc::gen::arbitrary<bool>() ? "_rebuild_tensor_v2" : "_rebuild_tensor_v3"));
  w->Byte('(');
  w->Byte('(');  // the persistent id: ('storage', storage class, key, location, numel)
  w->Str("storage");
  w->Global(AnyGlobalOfRole(GlobalRole::kStorageClass));
  w->Str(*rc::gen::elementOf(std::vector<std::string>{"0", "1", "data/0"}));
  w->Str("cpu");
  w->Int(*rc::gen::inRange<int64_t>(0, 64));
  w->Byte('t');
  w->Byte('Q');
  w->MaybeStore();
  const int args = *rc::gen::inRange(5, 8);
  for (int i = 0; i < args; ++i) Value(w, depth - 1);
  w->Byte('t');
  w->Byte('R');
}

inline void Value(Writer* w, int depth) {
  if (w->stores() > 0 && *rc::gen::inRange(0, 4) == 0) {  // a value met before
    w->Get();
    w->MaybeStore();
    return;
  }
  const int kinds = depth > 0 ? 24 : 8;
  switch (*rc::gen::inRange(0, kinds)) {
    case 0:
      w->Byte('N');
      break;
    case 1:
      w->Byte(*rc::gen::arbitrary<bool>() ? 0x88 : 0x89);
      break;
    case 2:
      w->Int(*rc::gen::oneOf(rc::gen::inRange<int64_t>(-3, 300), rc::gen::arbitrary<int64_t>()));
      break;
    case 3: {
      const uint64_t bits = *rc::gen::oneOf(
          rc::gen::arbitrary<uint64_t>(),
          rc::gen::elementOf(std::vector<uint64_t>{0, 0x8000000000000000ULL, 0x3ff0000000000000ULL,
                                                   0x7ff8000000000000ULL, 0x7ff0000000000000ULL}));
      std::string be;
      for (int i = 7; i >= 0; --i) be += static_cast<char>((bits >> (8 * i)) & 0xFF);
      w->Add("G" + be);
      break;
    }
    case 4:
    case 5:
      w->Str(*rc::gen::elementOf(StrPool()));
      break;
    case 6:
      w->Bytes(*rc::gen::elementOf(StrPool()));
      break;
    case 7:
      w->Get();
      break;
    case 8: {  // tuples: () and TUPLE1-3, or MARK ... TUPLE
      const int n = *rc::gen::inRange(0, 5);
      const bool marked = n > 3 || *rc::gen::arbitrary<bool>();
      if (marked) w->Byte('(');
      for (int i = 0; i < n; ++i) Value(w, depth - 1);
      w->Byte(marked ? 't' : n == 0 ? ')' : 0x84 + n);
      break;
    }
    case 9:
      Items(w, depth, 1, ']', 'e', 'a');
      break;
    case 10:
      Items(w, depth, 2, '}', 'u', 's');
      break;
    case 11:
      Items(w, depth, 1, 0x8f, 0x90, 0);  // set
      break;
    case 12: {  // MARK ... LIST / DICT / FROZENSET
      const int op = *rc::gen::elementOf(std::vector<int>{'l', 'd', 0x91});
      w->Byte('(');
      const int n = *rc::gen::inRange(0, 4);
      for (int i = 0; i < n; ++i) {
        if (op == 'l') {
          Value(w, depth - 1);
        } else {
          Key(w, depth);
          if (op == 'd') Value(w, depth - 1);
        }
      }
      w->Byte(op);
      break;
    }
    case 13:
    case 14:
      Object(w, depth);
      break;
    case 15: {  // an enum member: getattr(cls, "NAME") or cls(value)
      const PickleClass& e = AnyGlobalOfRole(GlobalRole::kEnum);
      if (*rc::gen::inRange(0, 3) != 0) {
        w->Global(*FindGlobal("builtins", "getattr"));
        w->Global(e);
        w->Str(*rc::gen::elementOf(std::vector<std::string>{"TENSOR", "BYTE_IO", "SHARD",
                                                            "TORCH_CONTIGUOUS_FORMAT", "x"}));
        w->Byte(0x86);
      } else {
        w->Global(e);
        Value(w, 0);
        w->Byte(0x85);
      }
      w->Byte('R');
      break;
    }
    case 16: {  // torch.Size((ints))
      w->Global(*FindGlobal("torch", "Size"));
      const int n = *rc::gen::inRange(0, 4);
      w->Byte('(');
      for (int i = 0; i < n; ++i) w->Int(*rc::gen::inRange<int64_t>(0, 9));
      w->Byte('t');
      w->Byte(0x85);
      w->Byte('R');
      break;
    }
    case 17:
      w->Global(AnyGlobalOfRole(GlobalRole::kDType));
      break;
    case 18:
      w->Global(*FindGlobal("torch.serialization", "_get_layout"));
      w->Str("torch.strided");
      w->Byte(0x85);
      w->Byte('R');
      break;
    case 19:
      w->Global(*FindGlobal("collections", "OrderedDict"));
      w->Byte(')');
      w->Byte(*rc::gen::arbitrary<bool>() ? 'R' : 0x81);
      break;
    case 20: {
      w->Global(AnyGlobalOfRole(GlobalRole::kPath));
      w->Byte('(');
      const int n = *rc::gen::inRange(0, 3);
      for (int i = 0; i < n; ++i) w->Str(*rc::gen::elementOf(StrPool()));
      w->Byte('t');
      w->Byte(*rc::gen::arbitrary<bool>() ? 'R' : 0x81);
      break;
    }
    case 21:
      Tensor(w, depth);
      break;
    case 22:
      w->Global(*FindGlobal("torch._utils", "_rebuild_parameter"));
      Value(w, depth - 1);
      w->Byte(0x88);
      w->Byte('}');
      w->Byte(0x87);
      w->Byte('R');
      break;
    default:
      w->Get();
      break;
  }
  w->MaybeStore();
}

// An opcode that the noise inserts: one that moves the stack or the memo.
inline std::string NoiseOp() {
  return *rc::gen::elementOf(std::vector<std::string>{"0",
                                                      "1",
                                                      "2",
                                                      "(",
                                                      "N",
                                                      ")",
                                                      "]",
                                                      "}",
                                                      "a",
                                                      "e",
                                                      "s",
                                                      "u",
                                                      "t",
                                                      "l",
                                                      "d",
                                                      "b",
                                                      "R",
                                                      "\x81",
                                                      "\x85",
                                                      "\x86",
                                                      "\x8f",
                                                      "\x90",
                                                      "\x91",
                                                      "\x94",
                                                      std::string("q\x00", 2),
                                                      "q\x01",
                                                      std::string("h\x00", 2),
                                                      "h\x01",
                                                      "h\x05",
                                                      "p3\n",
                                                      "g3\n",
                                                      "K\x01",
                                                      "\x8c\x01"
                                                      "a",
                                                      "."});
}

// A whole program, as bytes.
inline rc::Gen<std::string> PickleProgram() {
  return rc::gen::exec([] {
    Writer w(*rc::gen::inRange(2, 6));
    std::vector<std::string>& ops = w.ops().ops();
    if (*rc::gen::inRange(0, 4) == 0) {
      Value(&w, *rc::gen::inRange(1, 5));
    } else {  // a tuple of values, for the memo to share among them
      w.Byte('(');
      const int n = *rc::gen::inRange(1, 9);
      for (int i = 0; i < n; ++i) Value(&w, *rc::gen::inRange(0, 4));
      w.Byte('t');
    }
    w.Byte('.');
    if (*rc::gen::inRange(0, 3) == 0) {  // noise
      const int edits = *rc::gen::inRange(1, 4);
      for (int e = 0; e < edits; ++e) {
        const size_t at = *rc::gen::inRange<size_t>(0, ops.size());
        switch (*rc::gen::inRange(0, 3)) {
          case 0:
            ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(at), NoiseOp());
            break;
          case 1:
            if (ops.size() > 1) ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(at));
            break;
          default:
            ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(at), ops[at]);
            break;
        }
      }
    }
    std::string body;
    if (w.protocol() >= 4 && *rc::gen::arbitrary<bool>()) {  // frames at opcode boundaries
      for (size_t i = 0; i < ops.size();) {
        const size_t n = *rc::gen::inRange<size_t>(1, 6);
        std::string frame;
        for (size_t j = i; j < ops.size() && j < i + n; ++j) frame += ops[j];
        i += n;
        int64_t declared = static_cast<int64_t>(frame.size());
        if (*rc::gen::inRange(0, 8) == 0) declared += *rc::gen::inRange<int64_t>(-2, 3);  // a lie
        body += "\x95" + Ops::Le(static_cast<uint64_t>(std::max<int64_t>(declared, 0)), 8) + frame;
      }
    } else {
      for (const std::string& op : ops) body += op;
    }
    return "\x80" + std::string(1, static_cast<char>(w.protocol())) + body;
  });
}

}  // namespace pickle_program_gen
}  // namespace ckptspec
