#include "runner/elf_section.h"

#include <elf.h>

#include <cstring>

namespace ckptspec {
namespace {

// [offset, offset + size) inside an image of `total` bytes, overflow-safe.
bool Inside(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

}  // namespace

Status ElfSectionContents(const std::string& image, const std::string& name, std::string* out) {
  Elf64_Ehdr header;
  if (image.size() < sizeof(header)) return Status::InvalidArgument("not an ELF file: too short");
  std::memcpy(&header, image.data(), sizeof(header));
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    return Status::InvalidArgument("not an ELF file: no ELF magic");
  }
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB) {
    return Status::InvalidArgument("not a 64-bit little-endian ELF file");
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr)) {
    return Status::InvalidArgument("ELF section headers of " + std::to_string(header.e_shentsize) +
                                   " bytes, not " + std::to_string(sizeof(Elf64_Shdr)));
  }
  const uint64_t count = header.e_shnum;
  if (!Inside(header.e_shoff, count * sizeof(Elf64_Shdr), image.size())) {
    return Status::InvalidArgument("the ELF section table lies outside the file");
  }
  if (header.e_shstrndx >= count) {
    return Status::InvalidArgument("the ELF section-name table index is out of range");
  }
  auto section = [&](uint64_t i) {
    Elf64_Shdr s;
    std::memcpy(&s, image.data() + header.e_shoff + i * sizeof(Elf64_Shdr), sizeof(s));
    return s;
  };
  const Elf64_Shdr names = section(header.e_shstrndx);
  if (names.sh_type == SHT_NOBITS || !Inside(names.sh_offset, names.sh_size, image.size())) {
    return Status::InvalidArgument("the ELF section-name table lies outside the file");
  }
  for (uint64_t i = 0; i < count; ++i) {
    const Elf64_Shdr s = section(i);
    if (s.sh_name >= names.sh_size) continue;
    const char* begin = image.data() + names.sh_offset + s.sh_name;
    const size_t room = static_cast<size_t>(names.sh_size - s.sh_name);
    if (strnlen(begin, room) != name.size() || name.compare(0, name.size(), begin, name.size())) {
      continue;
    }
    if (s.sh_type == SHT_NOBITS || !Inside(s.sh_offset, s.sh_size, image.size())) {
      return Status::InvalidArgument("ELF section '" + name + "' lies outside the file");
    }
    out->assign(image.data() + s.sh_offset, static_cast<size_t>(s.sh_size));
    return Status::OK();
  }
  return Status::NotFound("no ELF section '" + name + "'");
}

}  // namespace ckptspec
