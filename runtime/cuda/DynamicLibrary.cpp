#include "runtime/cuda/DynamicLibrary.h"

#include <dlfcn.h>

#include "runtime/cuda/CudaError.h"

namespace scanforge::cuda {

DynamicLibrary DynamicLibrary::open(const std::vector<std::string> &candidates, const std::string &what) {
  std::string tried;
  for (const std::string &name : candidates) {
    if (void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return DynamicLibrary(handle, name);
    const char *error = dlerror();
    tried += (tried.empty() ? "" : "; ") + (error ? std::string(error) : name + ": cannot be loaded");
  }
  throw CudaUnavailable("no " + what + " found (" + tried + ")");
}

void *DynamicLibrary::symbol(const char *name) const {
  dlerror();
  void *address = dlsym(handle_, name);
  if (!address) {
    const char *error = dlerror();
    throw CudaUnavailable(path_ + " lacks '" + name + "'" + (error ? std::string(" (") + error + ")" : ""));
  }
  return address;
}

}  // namespace scanforge::cuda
