#include "runner/elf_section.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace ckptspec {
namespace {

// This test's own executable: a real ELF file.
std::string OwnImage() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ElfSection, FindsASectionOfARealExecutable) {
  const std::string image = OwnImage();
  std::string comment;
  ASSERT_TRUE(ElfSectionContents(image, ".shstrtab", &comment).ok());
  EXPECT_NE(comment.find(".text"), std::string::npos);  // the names table names .text
}

TEST(ElfSection, AMissingSectionIsNotFound) {
  std::string out;
  const Status s = ElfSectionContents(OwnImage(), "no_such_section", &out);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_EQ(s.message(), "no ELF section 'no_such_section'");
}

TEST(ElfSection, NamesWhatIsWrongWithAnImage) {
  std::string out;
  EXPECT_EQ(ElfSectionContents("abc", "x", &out).message(), "not an ELF file: too short");
  EXPECT_EQ(ElfSectionContents(std::string(64, 'x'), "x", &out).message(),
            "not an ELF file: no ELF magic");
  std::string image = OwnImage();
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof(header));
  header.e_shoff = image.size() - 8;
  std::memcpy(&image[0], &header, sizeof(header));
  EXPECT_EQ(ElfSectionContents(image, ".text", &out).message(),
            "the ELF section table lies outside the file");
}

// Any image, however damaged, gives a section inside it or an error; nothing is read outside it
// (run under ASan).
RC_GTEST_PROP(ElfSection, DamagedImagesGiveAnErrorOrBytesOfTheImage, ()) {
  static const std::string original = OwnImage();
  std::string image = original.substr(0, *rc::gen::inRange<size_t>(0, 4096));
  const size_t flips = *rc::gen::inRange<size_t>(0, 8);
  for (size_t i = 0; i < flips && !image.empty(); ++i) {
    const size_t at = *rc::gen::inRange<size_t>(0, image.size());
    image[at] = static_cast<char>(*rc::gen::arbitrary<uint8_t>());
  }
  std::string out;
  const Status s = ElfSectionContents(image, ".shstrtab", &out);
  if (s.ok()) RC_ASSERT(out.size() <= image.size());
}

}  // namespace
}  // namespace ckptspec
