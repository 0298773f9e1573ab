#include "formats/pickle_reader.h"

#include "formats/pickle_dump.h"
#include "model/address_limit_test_util.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>
#include <vector>

namespace ckptspec {
namespace {

using Kind = PyValue::Kind;
using namespace std::string_literals;

// Pickle bytes written opcode by opcode (CPython's encodings).
class PickleBytes {
 public:
  PickleBytes& Proto(int v) { return Byte(0x80).Byte(v); }
  PickleBytes& Op(char c) { return Byte(static_cast<uint8_t>(c)); }
  PickleBytes& Byte(int b) {
    s_ += static_cast<char>(b);
    return *this;
  }
  PickleBytes& Int(int64_t v) {
    if (v >= 0 && v < 256) return Op('K').Byte(static_cast<int>(v));
    if (v >= INT32_MIN && v <= INT32_MAX) return Op('J').Le(static_cast<uint32_t>(v), 4);
    return Byte(0x8a).Byte(8).Le(static_cast<uint64_t>(v), 8);
  }
  PickleBytes& Str(const std::string& text) {
    Byte(0x8c).Byte(static_cast<int>(text.size()));
    s_ += text;
    return *this;
  }
  PickleBytes& Global(const std::string& module, const std::string& name) {
    return Str(module).Str(name).Byte(0x93);
  }
  PickleBytes& Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) Byte(static_cast<int>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  std::string Stop() { return s_ + '.'; }
  const std::string& bytes() const { return s_; }

 private:
  std::string s_;
};

// Bytes as a C string literal would spell them, for failure messages.
std::string QuotedForTest(const std::string& bytes) {
  std::string out;
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else {
      const char* digits = "0123456789abcdef";
      out += std::string("\\x") + digits[u >> 4] + digits[u & 15];
    }
  }
  return out;
}

Status Read(const std::string& bytes, PickleDocument* doc, bool permissive = false) {
  PickleOptions options;
  options.permissive = permissive;
  return ReadPickle(bytes, options, doc);
}

TEST(PickleReader, ReadsScalarsAndContainers) {
  // {"a": (1, -2, 2**40), "b": [None, True, "x"], "c": {1, 2}}
  PickleBytes p;
  p.Proto(4).Op('}').Op('(');
  p.Str("a").Int(1).Int(-2).Int(int64_t{1} << 40).Byte(0x87);
  p.Str("b").Op(']').Op('(').Op('N').Byte(0x88).Str("x").Op('e');
  p.Str("c").Byte(0x8f).Op('(').Int(1).Int(2).Byte(0x90);
  p.Op('u');
  PickleDocument doc;
  ASSERT_TRUE(Read(p.Stop(), &doc).ok());
  const PyValue root = doc.root();
  ASSERT_TRUE(root.is(Kind::kDict));
  EXPECT_EQ(doc.Len(root), 3u);
  const PySpan a = doc.Items(doc.DictGet(root, "a"));
  ASSERT_EQ(a.size, 3u);
  EXPECT_EQ(doc.Int(a[0]), 1);
  EXPECT_EQ(doc.Int(a[1]), -2);
  EXPECT_EQ(doc.Int(a[2]), int64_t{1} << 40);
  const PySpan b = doc.Items(doc.DictGet(root, "b"));
  ASSERT_EQ(b.size, 3u);
  EXPECT_TRUE(b[0].is(Kind::kNone));
  EXPECT_TRUE(doc.Bool(b[1]));
  EXPECT_EQ(doc.Str(b[2]), "x");
  EXPECT_EQ(doc.Len(doc.DictGet(root, "c")), 2u);
}

TEST(PickleReader, MemoAndFramesAndDup) {
  // x = "shared"; (x, x, [x]) with MEMOIZE/BINGET, inside a frame.
  PickleBytes body;
  body.Str("shared").Byte(0x94).Op('h').Byte(0).Op(']').Op('h').Byte(0).Op('a').Op('2').Op('0');
  body.Byte(0x87);
  const std::string inner = body.Stop();
  PickleBytes p;
  p.Proto(4).Byte(0x95).Le(inner.size(), 8);
  PickleDocument doc;
  ASSERT_TRUE(Read(p.bytes() + inner, &doc).ok());
  const PySpan t = doc.Items(doc.root());
  ASSERT_EQ(t.size, 3u);
  EXPECT_EQ(doc.Str(t[0]), "shared");
  EXPECT_EQ(doc.Str(t[1]), "shared");
  EXPECT_EQ(doc.Str(doc.Items(t[2])[0]), "shared");
}

// The memo numbers MEMOIZE as CPython does: the number of distinct keys stored so far
// (len(memo)), whatever PUT, BINPUT and LONG_BINPUT stored, not a count of MEMOIZE opcodes.
TEST(PickleReader, MemoizeStoresAtTheNumberOfKeysStored) {
  struct Case {
    const char* what;
    std::string bytes;      // a tuple of ints, built with the memo
    std::vector<int> want;  // what pickle.loads returns
  };
  const std::vector<Case> cases = {
      // BINPUT 5, then MEMOIZE: len(memo) is 1, so MEMOIZE stores at 1.
      {"MEMOIZE after BINPUT 5",
       std::string("\x80\x04(K\x07q\x05K\x08\x94h\x05h\x01t.", 16),
       {7, 8, 7, 8}},
      // BINPUT 1, then MEMOIZE: len(memo) is 1, so MEMOIZE replaces key 1; key 0 stays unset.
      {"MEMOIZE onto the key BINPUT took",
       std::string("\x80\x04(K\x01q\x01K\x02\x94h\x01t."),
       {1, 2, 2}},
      // PUT to key 0 twice keeps one key: the MEMOIZE after it stores at 1.
      {"BINPUT twice to one key",
       std::string("\x80\x04(K\x01q\x00K\x02q\x00K\x03\x94h\x00h\x01t.", 20),
       {1, 2, 3, 2, 3}},
      // MEMOIZE (key 0), BINPUT 1, MEMOIZE (key 2, not 1).
      {"MEMOIZE, BINPUT, MEMOIZE",
       std::string("\x80\x04(K\x01\x94K\x02q\x01K\x03\x94h\x01h\x02t."),
       {1, 2, 3, 2, 3}},
      // LONG_BINPUT and text PUT count as keys too.
      {"LONG_BINPUT and PUT, then MEMOIZE",
       std::string("\x80\x04(K\x01r\x09\x00\x00\x00K\x02p4\nK\x03\x94h\x02t.", 24),
       {1, 2, 3, 3}},
  };
  for (const Case& c : cases) {
    PickleDocument doc;
    const Status s = Read(c.bytes, &doc);
    ASSERT_TRUE(s.ok()) << c.what << ": " << s.ToString();
    const PySpan items = doc.Items(doc.root());
    std::vector<int> got;
    for (const PyValue& v : items) got.push_back(static_cast<int>(doc.Int(v)));
    EXPECT_EQ(got, c.want) << c.what;
  }
}

// Text PUT and GET keys read as Python's int() reads them; a key is any integer from 0 to
// 2^63 - 1, not bounded by the input's size.
TEST(PickleReader, MemoKeysAsPythonReadsThem) {
  const std::vector<std::string> accepted = {
      "p 1 \n0g1\n",
      "p+1\n0g01\n",
      "p1_0\n0g10\n",
      "p007\n0g7\n",
      std::string("p1\0z\n0g1\n", 9),
      "p-0\n0g0\n",
      "p\v1\f\n0g1\n",
      "p100000\n0g100000\n",
  };
  for (const std::string& memo : accepted) {
    PickleDocument doc;
    const std::string bytes = "\x80\x02K\x07" + memo + ".";
    const Status s = Read(bytes, &doc);
    ASSERT_TRUE(s.ok()) << QuotedForTest(memo) << ": " << s.ToString();
    EXPECT_EQ(doc.Int(doc.root()), 7) << QuotedForTest(memo);
  }
  const std::vector<std::pair<std::string, const char*>> refused = {
      {"p-1\n", "memo key '-1' is not an integer"},
      {"p1__0\n", "memo key '1__0'"},
      {"p_1\n", "memo key '_1'"},
      {"p1_\n", "memo key '1_'"},
      {"p\x1c"
       "1\n",
       "memo key"},
      {"p9223372036854775808\n", "memo key '9223372036854775808'"},
      {"p" + std::string(4300, '0') + "1\n", "memo key"},
      {"p1\n0g-1\n", "memo key '-1'"},
      {"p1\n0g2\n", "memo slot 2 is read before it is stored"},
  };
  for (const auto& [memo, message] : refused) {
    PickleDocument doc;
    const Status s = Read("\x80\x02K\x07" + memo + ".", &doc);
    EXPECT_FALSE(s.ok()) << QuotedForTest(memo);
    EXPECT_NE(s.message().find(message), std::string::npos) << s.ToString();
  }
  // 4300 digits are the most Python converts; leading zeros count.
  PickleDocument doc;
  EXPECT_TRUE(Read("\x80\x02K\x07p" + std::string(4299, '0') + "1\n.", &doc).ok());
}

// A store needs a value above the last MARK, as a GET's value is pushed above it.
TEST(PickleReader, MemoStoresBelowAMarkAreRefused) {
  for (const std::string& store : {std::string("\x94"), std::string("q\x00", 2),
                                   std::string("r\x00\x00\x00\x00", 5), std::string("p0\n")}) {
    PickleDocument doc;
    const Status s = Read("\x80\x04N(" + store + "t.", &doc);
    EXPECT_FALSE(s.ok()) << QuotedForTest(store);
    EXPECT_NE(s.message().find("needs more values than the stack holds"), std::string::npos)
        << s.ToString();
  }
}

// A frame that lies about its length, so that an opcode runs past its end: CPython reads the rest
// of that opcode from the bytes after the frame or from the frame's buffer on, by the kind of file
// it reads, so the reader refuses it as outside what it reads - for a large pickle too, whose
// first pass (the keys read back) is split in two at that frame's end, which hides no GET from
// it (it once made the reader refuse the GET instead).
TEST(PickleReader, AnOpcodeAcrossTheEndOfItsFrameIsRefused) {
  // PROTO 4, FRAME (its length ends inside the BINBYTES8 below), BININT1 7, MEMOIZE, BINBYTES8 of
  // 1.5 MiB whose tail, read from inside, is SHORT_BINBYTES of 5 bytes swallowing the BINGET 0
  // after it; POP; BINGET 0; STOP.
  const size_t payload = (size_t{3} << 19);
  PickleBytes head;
  head.Proto(4).Byte(0x95);
  const size_t frame_start = head.bytes().size() + 8;
  std::string tail = std::string(payload - 2, 'N') + "C\x05";
  PickleBytes rest;
  rest.Op('0').Op('h').Byte(0);
  const std::string after = rest.Stop();
  // The frame ends (and the walk to the middle stops) at the input's middle, inside the bytes.
  const size_t total = frame_start + 3 + 9 + payload + after.size();
  head.Le(total / 2 + 16 - frame_start, 8);
  head.Int(7).Byte(0x94).Byte(0x8e).Le(payload, 8);
  const std::string bytes = head.bytes() + tail + after;
  ASSERT_EQ(bytes.size(), total);
  PickleDocument doc;
  const Status s = Read(bytes, &doc);
  EXPECT_EQ(s.code(), Status::Code::kNotSupported) << s.ToString();
  EXPECT_NE(s.message().find("pickle byte 14: an opcode that runs past the end of its frame"),
            std::string::npos)
      << s.ToString();

  // The same opcodes in a frame that ends where the BINBYTES8 does read as Python reads them.
  PickleBytes honest;
  honest.Proto(4).Byte(0x95).Le(3 + 9 + payload, 8).Int(7).Byte(0x94).Byte(0x8e).Le(payload, 8);
  ASSERT_TRUE(Read(honest.bytes() + tail + after, &doc).ok());
  EXPECT_EQ(doc.Int(doc.root()), 7);
}

// What CPython's unpickler builds or refuses where the reader once differed (found by the
// differential test, pickle_reader_cpython_test.cc): each case's value as pickle_dump.h prints
// it, or the start of the reader's error (Corruption where Python raises, NotSupported where the
// pickle is outside what the reader reads).
TEST(PickleReader, ReadsAsCPythonDoes) {
  struct Case {
    const char* what;
    std::string bytes;
    const char* want;  // the dump, or "error: " / "outside: " and a part of the message
  };
  const std::string p4 = "\x80\x04";
  std::string big_dict = p4 + "}(";
  for (int i = 0; i < 20; ++i) big_dict += "K" + std::string(1, char(i % 10)) + "K" + char(i);
  big_dict += "u.";
  const std::vector<Case> cases = {
      // Dicts and sets hold what Python's do: equal keys meet (the first key stays, the last value
      // wins), and a key must be hashable.
      {"SETITEMS of equal keys", p4 + "}(K\x01K\x02\x88K\x03G?\xf0\0\0\0\0\0\0K\x04u."s, "{1: 4}"},
      {"DICT of equal keys",
       p4 + "(\x8c\x01"
            "aK\x01\x8c\x01"
            "bK\x02\x8c\x01"
            "aK\x03"
            "d.",
       "{'a': 3, 'b': 2}"},
      {"ADDITEMS of equal elements", p4 + "\x8f(K\x01\x88K\x02G@\0\0\0\0\0\0\0\x90."s, "{1, 2}"},
      {"FROZENSET of equal elements", p4 + "(K\x01K\x01\x89K\x00\x91."s, "frozenset({1, False})"},
      {"equal tuple keys", p4 + "}(K\x01K\x02\x86K\x01\x88K\x02\x86K\x02u.", "{(1, 2): 2}"},
      {"20 keys, 10 distinct (a table)", big_dict,
       "{0: 10, 1: 11, 2: 12, 3: 13, 4: 14, 5: 15, 6: 16, 7: 17, 8: 18, 9: 19}"},
      {"str and bytes differ",
       p4 + "}(\x8c\x01"
            "aK\x01"
            "C\x01"
            "aK\x02u.",
       "{'a': 1, b'a': 2}"},
      {"two NaNs differ", p4 + "}(G\x7f\xf8\0\0\0\0\0\0K\x01G\x7f\xf8\0\0\0\0\0\0K\x02u."s,
       "{float:7ff8000000000000: 1, float:7ff8000000000000: 2}"},
      {"one NaN equals itself", p4 + "}(G\x7f\xf8\0\0\0\0\0\0\x94K\x01h\0K\x02u."s,
       "{float:7ff8000000000000: 2}"},
      {"-0.0 equals 0.0", p4 + "}(G\0\0\0\0\0\0\0\0K\x01G\x80\0\0\0\0\0\0\0K\x02u."s,
       "{float:0000000000000000: 2}"},
      {"one object twice, through _rebuild_parameter's shared arguments",
       p4 + "}(ctorch._utils\n_rebuild_parameter\n\x94"
            "ctorch.distributed.checkpoint.metadata\nBytesStorageMetadata\n)\x81\x85\x94RK\x01"
            "h\x00h\x01RK\x02u."s,
       "{torch.distributed.checkpoint.metadata.BytesStorageMetadata(): 2}"},
      {"a frozenset key", p4 + "}((K\x01\x91K\x01(K\x01\x91K\x02u.", "{frozenset({1}): 2}"},
      {"a list key", p4 + "}(]K\x01u.", "error: a dict key must be hashable, not a list"},
      {"a tuple key holding a list", p4 + "}(]\x85K\x01u.", "error: a dict key must be hashable"},
      {"a bytearray key", p4 + "}(\x96\x01\0\0\0\0\0\0\0xK\x01u."s,
       "error: a dict key must be hashable, not a bytearray"},
      {"ADDITEMS to a frozenset", p4 + "(\x91(K\x01\x90.", "error: the target of ADDITEMS"},
      // str as Python decodes it.
      {"a str that is not UTF-8", p4 + "\x8c\x02\xc0\x80.", "error: a str whose bytes are not"},
      {"a lone surrogate", p4 + "\x8c\x03\xed\xa0\x80.", "'\\xed\\xa0\\x80'"},
      {"a Python 2 str beyond ASCII", "\x80\x02U\x01\xe9.", "outside: a Python 2 str"},
      {"a text persistent id beyond ASCII", p4 + "P\xe9\n.", "error: a text persistent id"},
      // The stack and MARK.
      {"DUP of a MARK", p4 + "N(2.", "error: opcode 0x32 needs more values"},
      {"POP of a MARK", p4 + "K\x01(0.", "1"},
      {"APPENDS of nothing to an int", p4 + "K\x01(e.", "1"},
      {"SETITEMS of nothing to None", p4 + "N(u.", "None"},
      {"ADDITEMS of nothing to a str",
       p4 + "\x8c\x01"
            "a(\x90.",
       "'a'"},
      {"SETITEM on a list", p4 + "](Ne(K\x00K\x05u."s, "outside: SETITEMS on a list"},
      {"BUILD of None on a list", p4 + "]Nb.", "[]"},
      {"BUILD of a dict on a list", p4 + "]}b.", "outside: BUILD on a list"},
      {"a byte that is no opcode", p4 + "\0."s, "error: byte 0x00 is no pickle"},
      // INT as Python writes it; CPython reads other text by C's strtol (I010 is 8, I-0 False).
      {"INT 00", "I00\n.", "False"},
      {"INT 01", "I01\n.", "True"},
      {"INT -7", "I-7\n.", "-7"},
      {"INT 010", "I010\n.", "outside: INT text '010'"},
      {"INT -0", "I-0\n.", "outside: INT text '-0'"},
      // NEWOBJ and NEWOBJ_EX take a class and NEWOBJ_EX a dict of keywords.
      {"NEWOBJ_EX with None for keywords", p4 + "ccollections\nOrderedDict\n)N\x92.",
       "error: NEWOBJ_EX's keywords must be dict"},
      {"NEWOBJ of a function", p4 + "ctorch._utils\n_rebuild_parameter\n(K\x01t\x81.",
       "error: NEWOBJ needs a class"},
      {"REDUCE of that function", p4 + "ctorch._utils\n_rebuild_parameter\n(K\x01t\x85R.", "(1,)"},
  };
  for (const Case& c : cases) {
    PickleDocument doc;
    const Status s = Read(c.bytes, &doc);
    const std::string want = c.want;
    if (want.rfind("error: ", 0) == 0 || want.rfind("outside: ", 0) == 0) {
      const bool outside = want[0] == 'o';
      EXPECT_EQ(s.code(), outside ? Status::Code::kNotSupported : Status::Code::kCorruption)
          << c.what << ": " << s.ToString();
      EXPECT_NE(s.message().find(want.substr(outside ? 9 : 7)), std::string::npos)
          << c.what << ": " << s.ToString();
    } else {
      ASSERT_TRUE(s.ok()) << c.what << ": " << s.ToString();
      EXPECT_EQ(DumpPickleValue(doc, doc.root()), want) << c.what;
    }
  }
}

// A dict key that the memo builds from shared tuples (2^60 leaves, 120 levels) would take Python
// forever to hash: the reader refuses it.
TEST(PickleReader, RefusesAKeyTooCostlyToCompare) {
  PickleBytes p;
  p.Proto(4).Op('}').Op('(').Int(1).Byte(0x94);
  for (int i = 0; i < 60; ++i) p.Op('h').Byte(i).Op('h').Byte(i).Byte(0x86).Byte(0x94);
  p.Int(2).Op('u');
  PickleDocument doc;
  const Status s = Read(p.Stop(), &doc);
  EXPECT_EQ(s.code(), Status::Code::kNotSupported) << s.ToString();
  EXPECT_NE(s.message().find("a dict key too costly to compare"), std::string::npos)
      << s.ToString();
}

TEST(PickleReader, BuildsWhitelistedDataclasses) {
  // ChunkStorageMetadata(offsets=torch.Size((0, 4)), sizes=torch.Size((2, 4))), as pickle writes it.
  PickleBytes p;
  p.Proto(4).Global("torch.distributed.checkpoint.metadata", "ChunkStorageMetadata");
  p.Op(')').Byte(0x81).Op('}').Op('(');
  p.Str("offsets").Global("torch", "Size").Int(0).Int(4).Byte(0x86).Byte(0x85).Op('R');
  p.Str("sizes").Global("torch", "Size").Int(2).Int(4).Byte(0x86).Byte(0x85).Op('R');
  p.Op('u').Op('b');
  PickleDocument doc;
  ASSERT_TRUE(Read(p.Stop(), &doc).ok());
  EXPECT_EQ(doc.GlobalName(doc.root()),
            "torch.distributed.checkpoint.metadata.ChunkStorageMetadata");
  const PySpan sizes = doc.Items(doc.Field(doc.root(), "sizes"));
  ASSERT_EQ(sizes.size, 2u);
  EXPECT_EQ(doc.Int(sizes[0]), 2);
  EXPECT_EQ(doc.Int(doc.Items(doc.Field(doc.root(), "offsets"))[1]), 4);
}

TEST(PickleReader, EnumMembersThroughGetattrOnly) {
  PickleBytes p;
  p.Proto(4).Global("builtins", "getattr");
  p.Global("torch.distributed.checkpoint.metadata", "_MEM_FORMAT_ENCODING");
  p.Str("TORCH_CONTIGUOUS_FORMAT").Byte(0x86).Op('R');
  PickleDocument doc;
  ASSERT_TRUE(Read(p.Stop(), &doc).ok());
  EXPECT_EQ(doc.Str(doc.FieldAt(doc.root(), 0)), "TORCH_CONTIGUOUS_FORMAT");

  PickleBytes q;  // getattr(torch.Size, "__call__") is not an enum member
  q.Proto(4).Global("builtins", "getattr").Global("torch", "Size").Str("__call__");
  q.Byte(0x86).Op('R');
  const Status s = Read(q.Stop(), &doc);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("builtins.getattr is allowed only for an enum member"),
            std::string::npos)
      << s.ToString();
}

TEST(PickleReader, RefusesAnUnknownGlobalNamingItAndItsOffset) {
  PickleBytes p;
  p.Proto(2).Op('c');
  PickleBytes args;
  args.Str("id").Byte(0x85).Op('R');
  const std::string bytes = p.bytes() + "os\nsystem\n" + args.Stop();
  PickleDocument doc;
  const Status s = Read(bytes, &doc);
  EXPECT_EQ(s.code(), Status::Code::kNotSupported);
  EXPECT_NE(s.message().find("pickle byte 2: global 'os.system' is not allowed"), std::string::npos)
      << s.ToString();
}

TEST(PickleReader, PermissiveModeKeepsUnknownObjectsAsData) {
  // argparse.Namespace(lr=0.1) as REDUCE + BUILD.
  PickleBytes p;
  p.Proto(4).Global("argparse", "Namespace").Op(')').Op('R').Op('}').Str("lr").Int(7);
  p.Op('s').Op('b');
  PickleDocument doc;
  EXPECT_EQ(Read(p.Stop(), &doc).code(), Status::Code::kNotSupported);
  ASSERT_TRUE(Read(p.Stop(), &doc, /*permissive=*/true).ok());
  EXPECT_EQ(doc.GlobalName(doc.root()), "argparse.Namespace");
  EXPECT_EQ(doc.Int(doc.DictGet(doc.Field(doc.root(), "__state__"), "lr")), 7);
}

TEST(PickleReader, RefusesWhatItDoesNotRead) {
  struct Case {
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {std::string("\x80\x06N."), "pickle protocol 6"},
      {std::string("\x80\x04(i__main__\nX\n."), "opcode INST is not read"},
      {std::string("\x80\x04\x97."), "NEXT_BUFFER"},
      {std::string("\x80\x04\x8a\x09") + std::string(9, '\x01') + ".", "beyond 64 bits"},
      {std::string("\x80\x04h\x00.", 5), "memo slot 0 is read before it is stored"},
      {std::string("\x80\x04j\xff\xff\xff\x7f."), "memo slot 2147483647 is read"},
      {std::string("\x80\x04."), "needs more values than the stack holds"},
      {std::string("\x80\x04N"), "without STOP"},
      {std::string("\x80\x04X\xff\x00\x00\x00ab."), "runs past the end of the input"},
      {std::string("\x80\x04NNa."), "the target of"},
      {std::string("\x80\x04(Nt0u."), "without a MARK"},
      {std::string("\x80\x04}(Nu."), "odd number"},
      {std::string("\x80\x04N)R."), "what REDUCE calls must be a global"},
  };
  for (const Case& c : cases) {
    PickleDocument doc;
    const Status s = Read(c.bytes, &doc);
    EXPECT_FALSE(s.ok()) << c.message;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.ToString();
    EXPECT_EQ(s.message().rfind("pickle byte ", 0), 0u) << s.ToString();
  }
}

TEST(PickleReader, RefusesAPickleThatExpandsBeyondItsBudget) {
  // A 1 KiB string joined into a path 2000 times through the memo: 2 MB from 5 KB.
  PickleBytes p;
  p.Proto(4).Global("pathlib", "PosixPath").Op('(');
  p.Byte('X').Le(1024, 4);
  std::string bytes = p.bytes() + std::string(1024, 'a');
  PickleBytes rest;
  rest.Byte(0x94);
  for (int i = 0; i < 2000; ++i) rest.Op('h').Byte(0);
  rest.Op('t').Op('R');
  bytes += rest.Stop();
  PickleDocument doc;
  const Status s = ReadPickle(bytes, PickleOptions(), &doc);
  EXPECT_EQ(s.code(), Status::Code::kNotSupported);
  EXPECT_NE(s.message().find("the values built exceed 8 times the pickle's"), std::string::npos)
      << s.ToString();
}

// What the reader allocates follows the values it builds, not the input's size: a 256 MiB pickle
// holding one bytes value reads in a child whose address space may grow by 64 MiB past the input.
TEST(PickleReader, ALargePickleOfOneValueReadsInLittleMoreThanItsOwnSize) {
#ifdef CKPTSPEC_NO_ADDRESS_LIMIT
  GTEST_SKIP() << testing_util::kNoAddressLimitReason;
#else
  constexpr size_t kPayload = size_t{256} << 20;
  constexpr uint64_t kAllowance = uint64_t{64} << 20;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    PickleBytes p;
    p.Proto(4).Byte(0x8e).Le(kPayload, 8);
    std::string bytes = p.bytes();
    bytes.resize(bytes.size() + kPayload, '\0');
    bytes += '.';
    const uint64_t limit = testing_util::MappedAddressSpace() + kAllowance;
    const rlimit rl{limit, limit};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
    try {
      PickleDocument doc;
      const Status s = ReadPickle(std::move(bytes), PickleOptions(), &doc);
      const bool one_value =
          s.ok() && doc.root().is(Kind::kBytes) && doc.Str(doc.root()).size() == kPayload;
      _exit(one_value ? 0 : 2);
    } catch (const std::bad_alloc&) {
      _exit(4);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: not read as one bytes value, 3: setrlimit, 4: "
                                    << "std::bad_alloc (memory asked for the input's size)";
#endif
}

// A random value tree, written with the opcodes Python's pickler uses (protocol 4, MEMOIZE after
// every container and string), read back and compared.
struct Tree {
  enum { kInt, kStr, kTuple, kList, kDict } kind = kInt;
  int64_t number = 0;
  std::string text;
  std::vector<Tree> children;  // dict: key (a str tree), value, key, value...
};

Tree RandomTree(int depth) {
  Tree t;
  const int kind = *rc::gen::inRange(0, depth > 0 ? 5 : 2);
  t.kind = static_cast<decltype(t.kind)>(kind);
  if (kind == Tree::kInt) t.number = *rc::gen::arbitrary<int64_t>();
  if (kind == Tree::kStr)
    t.text = *rc::gen::container<std::string>(*rc::gen::inRange(0, 8), rc::gen::inRange('a', 'z'));
  if (kind >= Tree::kTuple) {
    const int n = *rc::gen::inRange(0, 4);
    for (int i = 0; i < n; ++i) {
      if (kind == Tree::kDict) {
        Tree key;
        key.kind = Tree::kStr;
        key.text = "k" + std::to_string(i);
        t.children.push_back(key);
      }
      t.children.push_back(RandomTree(depth - 1));
    }
  }
  return t;
}

void Write(const Tree& t, PickleBytes* p) {
  switch (t.kind) {
    case Tree::kInt:
      p->Int(t.number);
      return;
    case Tree::kStr:
      p->Str(t.text).Byte(0x94);
      return;
    case Tree::kTuple:
      p->Op('(');
      for (const Tree& c : t.children) Write(c, p);
      p->Op('t').Byte(0x94);
      return;
    case Tree::kList:
    case Tree::kDict:
      p->Op(t.kind == Tree::kList ? ']' : '}').Byte(0x94).Op('(');
      for (const Tree& c : t.children) Write(c, p);
      p->Op(t.kind == Tree::kList ? 'e' : 'u');
      return;
  }
}

bool Same(const PickleDocument& doc, PyValue v, const Tree& t) {
  switch (t.kind) {
    case Tree::kInt:
      return v.is(Kind::kInt) && doc.Int(v) == t.number;
    case Tree::kStr:
      return v.is(Kind::kStr) && doc.Str(v) == t.text;
    default: {
      const Kind want = t.kind == Tree::kTuple  ? Kind::kTuple
                        : t.kind == Tree::kList ? Kind::kList
                                                : Kind::kDict;
      const PySpan items = doc.Items(v);
      if (!v.is(want) || items.size != t.children.size()) return false;
      for (size_t i = 0; i < items.size; ++i) {
        if (!Same(doc, items[i], t.children[i])) return false;
      }
      return true;
    }
  }
}

RC_GTEST_PROP(PickleReader, ReadsBackWhatPicklesWrite, ()) {
  const Tree tree = RandomTree(3);
  PickleBytes p;
  p.Proto(4);
  Write(tree, &p);
  const std::string bytes = p.Stop();
  PickleDocument doc;
  const Status s = ReadPickle(bytes, PickleOptions(), &doc);
  RC_ASSERT(s.ok());
  RC_ASSERT(Same(doc, doc.root(), tree));
}

RC_GTEST_PROP(PickleReader, EveryTruncationOrFlippedByteFailsCleanlyOrReads, ()) {
  const Tree tree = RandomTree(3);
  PickleBytes p;
  p.Proto(4);
  Write(tree, &p);
  std::string bytes = p.Stop();
  const size_t cut = *rc::gen::inRange<size_t>(0, bytes.size());
  PickleDocument doc;
  const Status truncated = ReadPickle(bytes.substr(0, cut), PickleOptions(), &doc);
  RC_ASSERT(!truncated.ok());  // STOP is the last byte: nothing shorter is complete
  const size_t at = *rc::gen::inRange<size_t>(0, bytes.size());
  bytes[at] = static_cast<char>(*rc::gen::arbitrary<uint8_t>());
  const Status flipped = ReadPickle(bytes, PickleOptions(), &doc);
  RC_ASSERT(flipped.ok() || flipped.message().rfind("pickle byte ", 0) == 0);
}

}  // namespace
}  // namespace ckptspec
