// A shared library opened with dlopen, so that binaries link neither libcuda nor libnvrtc and run
// on machines without them. It stays loaded for the life of the process: the driver and NVRTC keep
// process-wide state (and NVRTC its own C++ runtime) that must outlive every user.
#pragma once

#include <string>
#include <vector>

namespace scanforge::cuda {

class DynamicLibrary {
 public:
  // Opens the first of `candidates` that loads. Throws CudaUnavailable "no <what> found (<each
  // candidate>: <dlerror>; ...)" when none does.
  static DynamicLibrary open(const std::vector<std::string> &candidates, const std::string &what);

  const std::string &path() const { return path_; }
  // Resolves a function; throws CudaUnavailable naming the library when it lacks the symbol.
  template <typename F>
  void resolve(F &function, const char *name) const {
    function = reinterpret_cast<F>(symbol(name));
  }

 private:
  DynamicLibrary(void *handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void *symbol(const char *name) const;

  void *handle_;
  std::string path_;
};

}  // namespace scanforge::cuda
