#include "formats/torch_save_archive.h"

#include <algorithm>
#include <utility>

namespace ckptspec {
namespace {

bool NameLess(const ZipEntry& a, const ZipEntry& b) { return a.name < b.name; }

// `text` quoted, with bytes outside printable ASCII as \xNN (an entry's bytes in a message).
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += "0123456789abcdef"[c >> 4];
      out += "0123456789abcdef"[c & 0xF];
    }
  }
  return out + "\"";
}

// The prefix of `entries` (the first entry's top-level directory), all entries under it.
Status TopLevelDirectory(const std::string& source_name, const std::vector<ZipEntry>& entries,
                         std::string* prefix) {
  if (entries.empty()) return Status::Corruption(source_name + ": the archive holds no entries");
  const std::string& first = entries.front().name;
  *prefix = first.substr(0, first.find('/'));
  const std::string directory = *prefix + "/";
  for (const ZipEntry& entry : entries) {
    if (entry.name.size() <= directory.size() ||
        entry.name.compare(0, directory.size(), directory) != 0) {
      return Status::Corruption(source_name + ": " + entry.name +
                                " lies outside the archive's top-level directory " + directory);
    }
  }
  return Status::OK();
}

Status CheckByteOrder(const ByteSource& source, const ZipEntry& entry) {
  std::string order;
  CKPTSPEC_RETURN_IF_ERROR(ReadSmallEntry(source, entry, kTorchSaveSmallEntryMaxBytes, &order));
  if (order == "little") return Status::OK();
  if (order == "big") {
    return Status::NotSupported(source.name() + ": " + entry.name +
                                " says big: big-endian archives are not supported");
  }
  return Status::Corruption(source.name() + ": " + entry.name + " says " + Quoted(order) +
                            ", neither little nor big");
}

Status ReadVersion(const ByteSource& source, const ZipEntry& entry, std::string* version) {
  std::string text;
  CKPTSPEC_RETURN_IF_ERROR(ReadSmallEntry(source, entry, kTorchSaveSmallEntryMaxBytes, &text));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    return Status::Corruption(source.name() + ": " + entry.name + " says " + Quoted(text) +
                              ", not a version number");
  }
  *version = std::move(text);
  return Status::OK();
}

Status Open(const ByteSource& source, const ZipLimits& limits, TorchSaveArchive* archive) {
  CKPTSPEC_RETURN_IF_ERROR(ReadZipDirectory(source, limits, &archive->entries));
  CKPTSPEC_RETURN_IF_ERROR(TopLevelDirectory(source.name(), archive->entries, &archive->prefix));
  std::sort(archive->entries.begin(), archive->entries.end(), NameLess);
  if (archive->Find("data.pkl") == nullptr) {
    return Status::Corruption(source.name() + ": the archive has no " + archive->prefix +
                              "/data.pkl");
  }
  if (const ZipEntry* byteorder = archive->Find("byteorder")) {
    CKPTSPEC_RETURN_IF_ERROR(CheckByteOrder(source, *byteorder));
  }
  if (const ZipEntry* version = archive->Find("version")) {
    CKPTSPEC_RETURN_IF_ERROR(ReadVersion(source, *version, &archive->version));
  }
  return Status::OK();
}

}  // namespace

const ZipEntry* TorchSaveArchive::Find(std::string_view relative_name) const {
  ZipEntry key;
  key.name.reserve(prefix.size() + 1 + relative_name.size());
  key.name.append(prefix).append("/").append(relative_name);
  const auto it = std::lower_bound(entries.begin(), entries.end(), key, NameLess);
  return it != entries.end() && it->name == key.name ? &*it : nullptr;
}

Status OpenTorchSaveArchive(const ByteSource& source, const ZipLimits& limits,
                            TorchSaveArchive* archive) {
  *archive = TorchSaveArchive();
  Status status = Open(source, limits, archive);
  if (!status.ok()) *archive = TorchSaveArchive();
  return status;
}

}  // namespace ckptspec
