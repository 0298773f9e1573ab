#include "runner/plugin.h"

#include <dlfcn.h>

#include <map>

#include "runner/elf_section.h"
#include "base/env.h"

namespace ckptspec {
namespace {

// A plugin file larger than this is refused before it is read for its stamp.
constexpr uint64_t kMaxPluginBytes = uint64_t{1} << 30;

class VectorRegistrar : public TargetRegistrar {
 public:
  VectorRegistrar(std::string where, std::vector<PluginTarget>* out)
      : where_(std::move(where)), out_(out) {}
  void Add(TargetFactory factory, PluginExpectation expectation) override {
    PluginTarget target;
    target.factory = std::move(factory);
    target.factory.expect_killed = expectation.kind == PluginExpectation::Kind::kKilled;
    target.expected = expectation.kind;
    if (expectation.kind == PluginExpectation::Kind::kListed) {
      const std::string source = where_ + ", target '" + target.factory.name + "'";
      Status s = ParseExpectations(expectation.expectations_json, source, &target.listed);
      if (s.ok() && !target.listed.extends.empty()) {
        s = Status::InvalidArgument(source + ": a declared expectation cannot extend a file");
      }
      if (!s.ok() && status_.ok()) status_ = s;
    }
    out_->push_back(std::move(target));
    ++added_;
  }
  int added() const { return added_; }
  const Status& status() const { return status_; }

 private:
  std::string where_;
  std::vector<PluginTarget>* out_;
  int added_ = 0;
  Status status_;
};

// "field value; field value" as field -> value (the field is the text before the first space).
std::map<std::string, std::string> StampFields(const std::string& stamp) {
  std::map<std::string, std::string> fields;
  size_t begin = 0;
  while (begin < stamp.size()) {
    size_t end = stamp.find("; ", begin);
    if (end == std::string::npos) end = stamp.size();
    const std::string part = stamp.substr(begin, end - begin);
    const size_t space = part.find(' ');
    fields[part.substr(0, space)] = space == std::string::npos ? "" : part.substr(space + 1);
    begin = end + 2;
  }
  return fields;
}

Status ReadPluginStamp(const std::string& file, const std::string& where, std::string* stamp) {
  std::string image;
  Status s = ReadFileToString(Env::Posix(), file, kMaxPluginBytes, &image);
  if (!s.ok()) return Status::InvalidArgument(where + ": cannot read: " + s.message());
  std::string section;
  s = ElfSectionContents(image, CKPTSPEC_STAMP_SECTION, &section);
  if (s.code() == Status::Code::kNotFound) {
    return Status::InvalidArgument(where + ": has no compatibility stamp (ELF section " +
                                   CKPTSPEC_STAMP_SECTION +
                                   "): define the plugin with CKPTSPEC_PLUGIN "
                                   "(runner/plugin.h) and build it with "
                                   "ckptspec_add_plugin (docs/PLUGINS.md)");
  }
  if (!s.ok()) return Status::InvalidArgument(where + ": " + s.message());
  *stamp = section.substr(0, section.find('\0'));
  return Status::OK();
}

}  // namespace

const char* ExecutableBuildStamp() { return CKPTSPEC_BUILD_STAMP; }

std::string StampDifferences(const std::string& plugin, const std::string& executable) {
  const std::map<std::string, std::string> mine = StampFields(executable);
  const std::map<std::string, std::string> theirs = StampFields(plugin);
  std::string differences;
  auto add = [&](const std::string& field, const std::string& plugin_value,
                 const std::string& own_value) {
    if (!differences.empty()) differences += "; ";
    differences += field + " " + plugin_value + " (this ckptspec: " + own_value + ")";
  };
  for (const auto& [field, value] : mine) {
    auto it = theirs.find(field);
    if (it == theirs.end()) {
      add(field, "missing", value);
    } else if (it->second != value) {
      add(field, it->second, value);
    }
  }
  for (const auto& [field, value] : theirs) {
    if (!mine.count(field)) add(field, value, "missing");
  }
  return differences;
}

Status LoadTargetPlugin(const std::string& path, std::vector<PluginTarget>* out) {
  const std::string where = "plugin '" + path + "'";
  // A path without '/' would make dlopen search the library path; a plugin is a file.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  std::string stamp;
  CKPTSPEC_RETURN_IF_ERROR(ReadPluginStamp(file, where, &stamp));
  const std::string differences = StampDifferences(stamp, ExecutableBuildStamp());
  if (!differences.empty()) {
    return Status::InvalidArgument(where +
                                   " was built incompatibly with this ckptspec (rebuild it "
                                   "against this ckptspec's installed package with the same "
                                   "compiler; docs/PLUGINS.md): " +
                                   differences);
  }
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    return Status::InvalidArgument(where + ": cannot load: " + (e ? e : "unknown error"));
  }
  dlerror();
  void* symbol = dlsym(handle, kPluginEntryPoint);
  if (!symbol) {
    dlclose(handle);
    return Status::InvalidArgument(where + ": does not export " + std::string(kPluginEntryPoint) +
                                   " (define it with CKPTSPEC_PLUGIN; see runner/plugin.h)");
  }
  std::vector<PluginTarget> registered;
  VectorRegistrar registrar(where, &registered);
  reinterpret_cast<RegisterTargetsFunction>(symbol)(&registrar);
  CKPTSPEC_RETURN_IF_ERROR(registrar.status());
  if (registrar.added() == 0) return Status::InvalidArgument(where + ": registered no target");
  for (PluginTarget& t : registered) out->push_back(std::move(t));
  return Status::OK();  // never unloaded: the factories' code lives in it
}

}  // namespace ckptspec
