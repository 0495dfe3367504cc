// NVRTC, the CUDA run-time compiler, resolved from libnvrtc at run time. It works without a GPU:
// kernels can be compiled (and checked with ptxas) on machines that cannot run them.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace scanforge::cuda {

class Nvrtc {
 public:
  enum class Output { Ptx, Cubin };
  struct Api;  // the resolved entry points (opaque)

  // Loads libnvrtc (or $SCANFORGE_NVRTC) once per process; throws CudaUnavailable
  // "no NVRTC found (...)" when it cannot.
  static const Nvrtc &get();

  std::string version() const { return version_; }  // e.g. "13.0"

  // Compiles `source` for `arch` ("sm_90"): PTX for the virtual architecture compute_90, or a
  // cubin for sm_90. `name` is the file name in messages. Throws CudaError with NVRTC's log.
  std::string compile(const std::string &source, const std::string &name, const std::string &arch,
                      const std::vector<std::string> &options, Output output) const;

  // The same, keeping NVRTC's log (ptxas's resource report under --ptxas-options=-v) and the
  // mangled names of `nameExpressions` (template instances such as "fwd1<16>", which NVRTC
  // instantiates for the asking).
  struct Program {
    std::string binary, log;
    std::map<std::string, std::string> lowered;  // name expression -> mangled symbol
  };
  Program compileProgram(const std::string &source, const std::string &name, const std::string &arch,
                         const std::vector<std::string> &options, Output output,
                         const std::vector<std::string> &nameExpressions) const;

  // Throws CudaError unless `arch` looks like "sm_<digits>".
  static void checkArch(const std::string &arch);

 private:
  explicit Nvrtc(const Api *api, std::string version) : api_(api), version_(std::move(version)) {}
  const Api *api_;
  std::string version_;
};

}  // namespace scanforge::cuda
