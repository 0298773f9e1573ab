#include "properties/plugin.h"

#include <dlfcn.h>

namespace ckptspec {
namespace {

class VectorRegistrar : public TargetRegistrar {
 public:
  explicit VectorRegistrar(std::vector<TargetFactory>* out) : out_(out) {}
  void Add(TargetFactory factory) override {
    out_->push_back(std::move(factory));
    ++added_;
  }
  int added() const { return added_; }

 private:
  std::vector<TargetFactory>* out_;
  int added_ = 0;
};

}  // namespace

Status LoadTargetPlugin(const std::string& path, std::vector<TargetFactory>* out) {
  const std::string where = "plugin '" + path + "'";
  // A path without '/' would make dlopen search the library path; a plugin is a file.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
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
                                   " (declare it extern \"C\"; see properties/plugin.h)");
  }
  VectorRegistrar registrar(out);
  reinterpret_cast<RegisterTargetsFunction>(symbol)(&registrar);
  if (registrar.added() == 0) return Status::InvalidArgument(where + ": registered no target");
  return Status::OK();  // never unloaded: the factories' code lives in it
}

}  // namespace ckptspec
