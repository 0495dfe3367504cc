#include "runtime/cuda/Nvrtc.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/DynamicLibrary.h"

namespace scanforge::cuda {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;

struct Nvrtc::Api {
  std::unique_ptr<DynamicLibrary> library;
  const char *(*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int *, int *);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                    const char *const *);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t *);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char *);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t *);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char *);
  nvrtcResult (*nvrtcAddNameExpression)(nvrtcProgram, const char *);
  nvrtcResult (*nvrtcGetLoweredName)(nvrtcProgram, const char *, const char **);
};

namespace {

std::vector<std::string> candidates() {
  if (const char *path = std::getenv("SCANFORGE_NVRTC"); path && *path) return {path};
  return {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"};
}

struct Loaded {
  std::unique_ptr<Nvrtc::Api> api;
  std::string version, error;
};

}  // namespace

const Nvrtc &Nvrtc::get() {
  static const Loaded loaded = [] {
    Loaded l;
    try {
      auto api = std::make_unique<Api>();
      api->library = std::make_unique<DynamicLibrary>(DynamicLibrary::open(candidates(), "NVRTC"));
      const DynamicLibrary &lib = *api->library;
      lib.resolve(api->nvrtcGetErrorString, "nvrtcGetErrorString");
      lib.resolve(api->nvrtcVersion, "nvrtcVersion");
      lib.resolve(api->nvrtcCreateProgram, "nvrtcCreateProgram");
      lib.resolve(api->nvrtcDestroyProgram, "nvrtcDestroyProgram");
      lib.resolve(api->nvrtcCompileProgram, "nvrtcCompileProgram");
      lib.resolve(api->nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
      lib.resolve(api->nvrtcGetProgramLog, "nvrtcGetProgramLog");
      lib.resolve(api->nvrtcGetPTXSize, "nvrtcGetPTXSize");
      lib.resolve(api->nvrtcGetPTX, "nvrtcGetPTX");
      lib.resolve(api->nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
      lib.resolve(api->nvrtcGetCUBIN, "nvrtcGetCUBIN");
      lib.resolve(api->nvrtcAddNameExpression, "nvrtcAddNameExpression");
      lib.resolve(api->nvrtcGetLoweredName, "nvrtcGetLoweredName");
      int major = 0, minor = 0;
      api->nvrtcVersion(&major, &minor);
      l.version = std::to_string(major) + "." + std::to_string(minor);
      l.api = std::move(api);
    } catch (const CudaUnavailable &e) {
      l.error = e.what();
    }
    return l;
  }();
  if (!loaded.api) throw CudaUnavailable(loaded.error);
  static const Nvrtc nvrtc(loaded.api.get(), loaded.version);
  return nvrtc;
}

void Nvrtc::checkArch(const std::string &arch) {
  bool ok = arch.size() > 3 && arch.compare(0, 3, "sm_") == 0 &&
            std::all_of(arch.begin() + 3, arch.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (!ok) throw CudaError("invalid GPU architecture '" + arch + "' (expected sm_<compute capability>, e.g. sm_90)");
}

std::string Nvrtc::compile(const std::string &source, const std::string &name, const std::string &arch,
                           const std::vector<std::string> &options, Output output) const {
  return compileProgram(source, name, arch, options, output, {}).binary;
}

Nvrtc::Program Nvrtc::compileProgram(const std::string &source, const std::string &name, const std::string &arch,
                                     const std::vector<std::string> &options, Output output,
                                     const std::vector<std::string> &nameExpressions) const {
  checkArch(arch);
  std::vector<std::string> all = {"--gpu-architecture=" + (output == Output::Ptx ? "compute_" + arch.substr(3) : arch)};
  all.insert(all.end(), options.begin(), options.end());
  std::string described;
  for (const std::string &o : options) described += (described.empty() ? "" : " ") + o;
  std::string what = "NVRTC " + version_ + " compiling " + name + " for " + arch +
                     (described.empty() ? "" : " (options: " + described + ")");

  nvrtcProgram program = nullptr;
  if (nvrtcResult r = api_->nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr))
    throw CudaError(what + ": " + api_->nvrtcGetErrorString(r));
  for (const std::string &e : nameExpressions)
    if (nvrtcResult r = api_->nvrtcAddNameExpression(program, e.c_str())) {
      api_->nvrtcDestroyProgram(&program);
      throw CudaError(what + ": name expression '" + e + "': " + api_->nvrtcGetErrorString(r));
    }
  std::vector<const char *> argv;
  for (const std::string &o : all) argv.push_back(o.c_str());
  nvrtcResult compiled = api_->nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  size_t logSize = 0;
  api_->nvrtcGetProgramLogSize(program, &logSize);
  std::string log(logSize, '\0');
  if (logSize) api_->nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();

  Program result;
  nvrtcResult got = compiled;
  if (compiled == 0) {
    size_t size = 0;
    got = output == Output::Ptx ? api_->nvrtcGetPTXSize(program, &size) : api_->nvrtcGetCUBINSize(program, &size);
    if (got == 0) {
      result.binary.resize(size);
      got = output == Output::Ptx ? api_->nvrtcGetPTX(program, result.binary.data())
                                  : api_->nvrtcGetCUBIN(program, result.binary.data());
    }
    for (const std::string &e : nameExpressions) {
      const char *lowered = nullptr;
      if (got == 0) got = api_->nvrtcGetLoweredName(program, e.c_str(), &lowered);
      if (got == 0) result.lowered[e] = lowered;
    }
  }
  api_->nvrtcDestroyProgram(&program);
  if (got != 0) throw CudaError(what + " failed: " + api_->nvrtcGetErrorString(got) + (log.empty() ? "" : "\n" + log));
  if (output == Output::Ptx)
    while (!result.binary.empty() && result.binary.back() == '\0') result.binary.pop_back();
  result.log = std::move(log);
  return result;
}

}  // namespace scanforge::cuda
