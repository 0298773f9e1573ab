#include "formats/pickle_dump.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/pickle_reader.h"

namespace ckptspec {
namespace {

using namespace std::string_literals;

std::string DumpOf(const std::string& pickle) {
  PickleDocument doc;
  const Status s = ReadPickle(pickle, PickleOptions(), &doc);
  return s.ok() ? DumpPickleValue(doc, doc.root()) : s.ToString();
}

TEST(DumpPickleValue, PrintsEachKindCanonically) {
  const std::string p4 = "\x80\x04";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {p4 + "(N\x88\x89J\xfe\xff\xff\xff"
            "G?\xf0\0\0\0\0\0\0t."s,
       "(None, True, False, -2, float:3ff0000000000000)"},
      {p4 + "(\x8c\x03"
            "a'\\C\x02\x00\xff\x96\x01\0\0\0\0\0\0\0zt."s,
       "('a\\x27\\x5c', b'\\x00\\xff', bytearray(b'z'))"},
      {p4 + "()K\x01\x85K\x01K\x02\x86t.", "((), (1,), (1, 2))"},
      {p4 + "(]}\x8f(\x91t.", "([], {}, set(), frozenset())"},
      // A set's elements in the order of their text, whatever the order they came in.
      {p4 + "\x8f(K\x02\x8c\x01"
            "bK\x01\x90.",
       "{'b', 1, 2}"},
      {p4 + "ctorch\nfloat32\n.", "global:torch.float32"},
  };
  for (const auto& [pickle, want] : cases) EXPECT_EQ(DumpOf(pickle), want);
}

TEST(DumpPickleValue, LabelsWhatIsSharedAndCycles) {
  // x = []; (x, x, []): the shared list is labelled, the other not.
  EXPECT_EQ(DumpOf("\x80\x04(]\x94h\0]t."s), "(#1=[], #1, [])");
  // x = []; x.append(x): a cycle.
  EXPECT_EQ(DumpOf("\x80\x04]\x94h\0a."s), "#1=[#1]");
  // A shared str is not labelled (it has no identity Python keeps).
  EXPECT_EQ(DumpOf("\x80\x04(\x8c\x01"
                   "a\x94h\0t."s),
            "('a', 'a')");
}

TEST(DumpPickleValue, CutsDeepNesting) {
  std::string pickle = "\x80\x04";
  for (int i = 0; i < 70; ++i) pickle += "]";
  for (int i = 0; i < 69; ++i) pickle += "a";
  pickle += ".";
  const std::string text = DumpOf(pickle);
  EXPECT_NE(text.find(std::string(65, '[') + "...]"), std::string::npos) << text;
}

}  // namespace
}  // namespace ckptspec
