#include "fuzz/bundle.h"

#include <cstring>

namespace ckptspec {
namespace {

uint32_t ReadLe(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void AppendLe(std::string* out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

bool ParseBundle(const uint8_t* data, size_t size, Bundle* out) {
  if (size < kBundleHeaderSize || std::memcmp(data, kBundleMagic, 4) != 0) return false;
  Bundle bundle;
  bundle.options = data[4];
  bundle.run = data[5];
  size_t pos = kBundleHeaderSize;
  while (pos < size) {
    if (bundle.files.size() == kMaxBundleFiles || size - pos < 2) return false;
    const size_t path_size = ReadLe(data + pos, 2);
    pos += 2;
    if (path_size == 0 || size - pos < path_size + 4) return false;
    std::string path(reinterpret_cast<const char*>(data + pos), path_size);
    pos += path_size;
    const size_t content_size = ReadLe(data + pos, 4);
    pos += 4;
    if (size - pos < content_size) return false;
    const auto [it, inserted] = bundle.files.emplace(std::move(path), std::string());
    if (!inserted) return false;
    it->second.assign(reinterpret_cast<const char*>(data + pos), content_size);
    pos += content_size;
  }
  *out = std::move(bundle);
  return true;
}

std::string SerializeBundle(const Bundle& bundle) {
  std::string out(kBundleMagic, 4);
  out.push_back(static_cast<char>(bundle.options));
  out.push_back(static_cast<char>(bundle.run));
  for (const auto& [path, content] : bundle.files) {
    AppendLe(&out, static_cast<uint32_t>(path.size()), 2);
    out += path;
    AppendLe(&out, static_cast<uint32_t>(content.size()), 4);
    out += content;
  }
  return out;
}

Status MaterializeBundle(const Bundle& bundle, Env* env, const std::string& root) {
  CKPTSPEC_RETURN_IF_ERROR(CreateDirs(env, root));
  return WriteTree(env, root, bundle.files);
}

Status CollectBundle(Env* env, const std::string& root, uint8_t options, uint8_t run, Bundle* out) {
  Bundle bundle;
  bundle.options = options;
  bundle.run = run;
  CKPTSPEC_RETURN_IF_ERROR(ReadTree(env, root, &bundle.files));
  *out = std::move(bundle);
  return Status::OK();
}

}  // namespace ckptspec
