#include "base/in_memory_env.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace ckptspec {

// A file's content as a list of blocks, so that an append copies its bytes once and the file
// never moves what it already holds (a std::string would copy everything again each time it
// grows). Small appends fill the last block's spare room (up to kSmallBlock bytes); a larger one
// gets a block of its own size.
struct InMemoryEnv::FileNode {
  static constexpr size_t kSmallBlock = 64 << 10;
  std::vector<std::string> blocks;
  std::vector<uint64_t> starts;  // the offset of each block's first byte
  uint64_t size = 0;
  uint64_t synced = 0;  // bytes that survive a power loss

  void Append(const char* bytes, size_t n) {
    if (n == 0) return;
    if (!blocks.empty() && blocks.back().capacity() - blocks.back().size() >= n) {
      blocks.back().append(bytes, n);
    } else {
      starts.push_back(size);
      blocks.emplace_back();
      // Room for more small appends, without making a one-line file a 64 KiB one.
      blocks.back().reserve(
          n >= kSmallBlock ? n : std::min(kSmallBlock, std::max<size_t>(4 * n, 4096)));
      blocks.back().append(bytes, n);
    }
    size += n;
  }
  // The block holding byte `offset` (< size).
  size_t BlockOf(uint64_t offset) const {
    return static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), offset) -
                               starts.begin() - 1);
  }
  // Copies [offset, offset + n) (inside the file) to out.
  void CopyOut(uint64_t offset, size_t n, void* out) const {
    char* to = static_cast<char*>(out);
    for (size_t b = n > 0 ? BlockOf(offset) : 0; n > 0; ++b) {
      const size_t in = static_cast<size_t>(offset - starts[b]);
      const size_t take = std::min(n, blocks[b].size() - in);
      std::memcpy(to, blocks[b].data() + in, take);
      to += take;
      offset += take;
      n -= take;
    }
  }
  char& At(uint64_t offset) {
    const size_t b = BlockOf(offset);
    return blocks[b][static_cast<size_t>(offset - starts[b])];
  }
  // Keeps the first n bytes (n <= size).
  void Truncate(uint64_t n) {
    while (!blocks.empty() && starts.back() >= n) {
      blocks.pop_back();
      starts.pop_back();
    }
    if (!blocks.empty()) blocks.back().resize(static_cast<size_t>(n - starts.back()));
    size = n;
  }
};

class InMemoryEnv::MemWritableFile : public WritableFile {
 public:
  MemWritableFile(InMemoryEnv* env, std::string path, std::shared_ptr<FileNode> file, int64_t gen)
      : env_(env), path_(std::move(path)), file_(std::move(file)), generation_(gen) {}

  Status Append(const void* data, size_t size) override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    CKPTSPEC_RETURN_IF_ERROR(Alive());
    file_->Append(static_cast<const char*>(data), size);
    return Status::OK();
  }
  Status Sync() override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    CKPTSPEC_RETURN_IF_ERROR(Alive());
    file_->synced = file_->size;
    return Status::OK();
  }
  Status Close() override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    if (closed_) return Status::OK();
    closed_ = true;
    if (generation_ != env_->generation_) return Status::IOError(path_ + ": file died in a crash");
    return Status::OK();
  }

 private:
  Status Alive() const {
    if (closed_) return Status::FailedPrecondition(path_ + ": use after close");
    if (generation_ != env_->generation_) return Status::IOError(path_ + ": file died in a crash");
    return Status::OK();
  }
  InMemoryEnv* env_;
  std::string path_;
  std::shared_ptr<FileNode> file_;
  int64_t generation_;
  bool closed_ = false;
};

class InMemoryEnv::MemRandomAccessFile : public RandomAccessFile {
 public:
  MemRandomAccessFile(InMemoryEnv* env, std::shared_ptr<FileNode> file)
      : env_(env), file_(std::move(file)) {}
  Status Read(uint64_t offset, size_t size, void* out, size_t* bytes_read) const override {
    std::lock_guard<std::mutex> lock(env_->mu_);
    size_t n = 0;
    if (offset < file_->size)
      n = static_cast<size_t>(std::min<uint64_t>(size, file_->size - offset));
    file_->CopyOut(offset, n, out);
    *bytes_read = n;
    return Status::OK();
  }

 private:
  InMemoryEnv* env_;
  std::shared_ptr<FileNode> file_;
};

InMemoryEnv::InMemoryEnv() { dirs_[0] = DirNode(); }
InMemoryEnv::~InMemoryEnv() = default;

Status InMemoryEnv::SplitPath(const std::string& path, std::vector<std::string_view>* parts) {
  parts->clear();
  parts->reserve(8);  // deeper paths grow it
  if (path.empty() || path[0] != '/') {
    return Status::InvalidArgument("MemEnv path '" + path + "' is not absolute");
  }
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    if (i >= path.size()) break;
    const size_t j = path.find('/', i);
    const std::string_view part =
        std::string_view(path).substr(i, j == std::string::npos ? std::string::npos : j - i);
    if (part == "." || part == "..") {
      return Status::InvalidArgument("MemEnv path '" + path + "' contains '" + std::string(part) +
                                     "'");
    }
    parts->push_back(part);
    if (j == std::string::npos) break;
    i = j;
  }
  return Status::OK();
}

Status InMemoryEnv::ResolveParent(const std::string& path, int64_t* dir_id, std::string* name) {
  std::vector<std::string_view> parts;
  CKPTSPEC_RETURN_IF_ERROR(SplitPath(path, &parts));
  if (parts.empty()) return Status::InvalidArgument("MemEnv: '" + path + "' names the root");
  int64_t dir = 0;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const auto& live = dirs_[dir].live;
    auto it = live.find(parts[i]);
    if (it == live.end()) {
      return Status::NotFound(path + ": no such directory '" + std::string(parts[i]) + "'");
    }
    if (!it->second.is_dir) {
      return Status::IOError(path + ": '" + std::string(parts[i]) + "' is not a directory");
    }
    dir = it->second.id;
  }
  *dir_id = dir;
  name->assign(parts.back());
  return Status::OK();
}

Status InMemoryEnv::Resolve(const std::string& path, Entry* entry) {
  std::vector<std::string_view> parts;
  CKPTSPEC_RETURN_IF_ERROR(SplitPath(path, &parts));
  if (parts.empty()) {
    *entry = Entry{true, 0};
    return Status::OK();
  }
  int64_t dir;
  std::string name;
  CKPTSPEC_RETURN_IF_ERROR(ResolveParent(path, &dir, &name));
  const auto& live = dirs_[dir].live;
  auto it = live.find(name);
  if (it == live.end()) return Status::NotFound(path + ": no such file or directory");
  *entry = it->second;
  return Status::OK();
}

void InMemoryEnv::CollectGarbage() {
  std::unordered_map<int64_t, bool> seen_dirs, seen_files;
  std::function<void(int64_t)> mark = [&](int64_t dir) {
    if (seen_dirs[dir]) return;
    seen_dirs[dir] = true;
    for (const auto* table : {&dirs_[dir].live, &dirs_[dir].durable}) {
      for (const auto& [name, e] : *table) {
        if (e.is_dir) {
          mark(e.id);
        } else {
          seen_files[e.id] = true;
        }
      }
    }
  };
  mark(0);
  for (auto it = files_.begin(); it != files_.end();) {
    it = seen_files.count(it->first) ? std::next(it) : files_.erase(it);
  }
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    it = seen_dirs.count(it->first) ? std::next(it) : dirs_.erase(it);
  }
}

Status InMemoryEnv::NewWritableFile(const std::string& path, std::unique_ptr<WritableFile>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t dir;
  std::string name;
  CKPTSPEC_RETURN_IF_ERROR(ResolveParent(path, &dir, &name));
  auto& live = dirs_[dir].live;
  auto it = live.find(name);
  if (it != live.end() && it->second.is_dir) return Status::IOError(path + ": is a directory");
  const int64_t id = next_id_++;
  auto node = std::make_shared<FileNode>();
  files_[id] = node;
  live[name] = Entry{false, id};
  CollectGarbage();
  out->reset(new MemWritableFile(this, path, node, generation_));
  return Status::OK();
}

Status InMemoryEnv::NewRandomAccessFile(const std::string& path,
                                        std::unique_ptr<RandomAccessFile>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  CKPTSPEC_RETURN_IF_ERROR(Resolve(path, &e));
  if (e.is_dir) return Status::IOError(path + ": is a directory");
  out->reset(new MemRandomAccessFile(this, files_[e.id]));
  return Status::OK();
}

Status InMemoryEnv::GetFileSize(const std::string& path, uint64_t* size) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  CKPTSPEC_RETURN_IF_ERROR(Resolve(path, &e));
  if (e.is_dir) return Status::IOError(path + ": is a directory");
  *size = files_[e.id]->size;
  return Status::OK();
}

Status InMemoryEnv::FileExists(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  return Resolve(path, &e);
}

Status InMemoryEnv::IsDirectory(const std::string& path, bool* is_dir) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  CKPTSPEC_RETURN_IF_ERROR(Resolve(path, &e));
  *is_dir = e.is_dir;
  return Status::OK();
}

Status InMemoryEnv::GetChildren(const std::string& dir, std::vector<std::string>* names) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  CKPTSPEC_RETURN_IF_ERROR(Resolve(dir, &e));
  if (!e.is_dir) return Status::IOError(dir + ": not a directory");
  names->clear();
  for (const auto& [name, entry] : dirs_[e.id].live) names->push_back(name);
  return Status::OK();
}

Status InMemoryEnv::CreateDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t parent;
  std::string name;
  CKPTSPEC_RETURN_IF_ERROR(ResolveParent(dir, &parent, &name));
  auto& live = dirs_[parent].live;
  auto it = live.find(name);
  if (it != live.end()) {
    if (it->second.is_dir) return Status::OK();
    return Status::IOError(dir + ": exists and is not a directory");
  }
  const int64_t id = next_id_++;
  dirs_[id] = DirNode();
  dirs_[parent].live[name] = Entry{true, id};
  return Status::OK();
}

Status InMemoryEnv::RemoveFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t dir;
  std::string name;
  CKPTSPEC_RETURN_IF_ERROR(ResolveParent(path, &dir, &name));
  auto& live = dirs_[dir].live;
  auto it = live.find(name);
  if (it == live.end()) return Status::NotFound(path + ": no such file");
  if (it->second.is_dir) return Status::IOError(path + ": is a directory");
  live.erase(it);
  CollectGarbage();
  return Status::OK();
}

Status InMemoryEnv::RemoveDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t parent;
  std::string name;
  CKPTSPEC_RETURN_IF_ERROR(ResolveParent(dir, &parent, &name));
  auto& live = dirs_[parent].live;
  auto it = live.find(name);
  if (it == live.end()) return Status::NotFound(dir + ": no such directory");
  if (!it->second.is_dir) return Status::IOError(dir + ": not a directory");
  if (!dirs_[it->second.id].live.empty()) return Status::IOError(dir + ": directory not empty");
  live.erase(it);
  CollectGarbage();
  return Status::OK();
}

Status InMemoryEnv::RenameFile(const std::string& src, const std::string& dst) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t src_dir, dst_dir;
  std::string src_name, dst_name;
  CKPTSPEC_RETURN_IF_ERROR(ResolveParent(src, &src_dir, &src_name));
  CKPTSPEC_RETURN_IF_ERROR(ResolveParent(dst, &dst_dir, &dst_name));
  auto& src_live = dirs_[src_dir].live;
  auto it = src_live.find(src_name);
  if (it == src_live.end()) return Status::NotFound(src + ": no such file or directory");
  const Entry moving = it->second;
  auto& dst_live = dirs_[dst_dir].live;
  auto existing = dst_live.find(dst_name);
  if (existing != dst_live.end()) {
    if (existing->second == moving) return Status::OK();
    if (existing->second.is_dir != moving.is_dir) {
      return Status::IOError(src + " -> " + dst + ": cannot replace a file by a directory or back");
    }
    if (existing->second.is_dir && !dirs_[existing->second.id].live.empty()) {
      return Status::IOError(dst + ": directory not empty");
    }
  }
  if (moving.is_dir) {
    // A directory may not move under itself.
    std::vector<std::string_view> s, d;
    CKPTSPEC_RETURN_IF_ERROR(SplitPath(src, &s));
    CKPTSPEC_RETURN_IF_ERROR(SplitPath(dst, &d));
    if (d.size() > s.size() && std::equal(s.begin(), s.end(), d.begin())) {
      return Status::InvalidArgument(src + " -> " + dst + ": moves a directory under itself");
    }
  }
  src_live.erase(it);
  dirs_[dst_dir].live[dst_name] = moving;
  CollectGarbage();
  return Status::OK();
}

Status InMemoryEnv::SyncDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  CKPTSPEC_RETURN_IF_ERROR(Resolve(dir, &e));
  if (!e.is_dir) return Status::IOError(dir + ": not a directory");
  DirNode& node = dirs_[e.id];
  node.durable = node.live;
  CollectGarbage();
  return Status::OK();
}

void InMemoryEnv::SimulatePowerLoss() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, dir] : dirs_) dir.live = dir.durable;
  for (auto& [id, file] : files_) file->Truncate(file->synced);
  ++generation_;
  CollectGarbage();
}

Status InMemoryEnv::CorruptStoredByte(const std::string& path, uint64_t offset, uint8_t xor_mask) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  CKPTSPEC_RETURN_IF_ERROR(Resolve(path, &e));
  if (e.is_dir) return Status::IOError(path + ": is a directory");
  FileNode& f = *files_[e.id];
  if (offset >= f.size) return Status::InvalidArgument(path + ": offset past the end");
  f.At(offset) = static_cast<char>(f.At(offset) ^ xor_mask);
  return Status::OK();
}

Status InMemoryEnv::TruncateStored(const std::string& path, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  CKPTSPEC_RETURN_IF_ERROR(Resolve(path, &e));
  if (e.is_dir) return Status::IOError(path + ": is a directory");
  FileNode& f = *files_[e.id];
  if (size < f.size) f.Truncate(size);
  f.synced = std::min(f.synced, f.size);
  return Status::OK();
}

uint64_t InMemoryEnv::LiveBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t total = 0;
  std::function<void(int64_t)> walk = [&](int64_t dir) {
    for (const auto& [name, e] : dirs_.at(dir).live) {
      if (e.is_dir) {
        walk(e.id);
      } else {
        total += files_.at(e.id)->size;
      }
    }
  };
  walk(0);
  return total;
}

}  // namespace ckptspec
