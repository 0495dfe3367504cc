#include "tools/scanc/CudaCommands.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "compiler/api/CompiledModuleImpl.h"
#include "compiler/mlir/Target/Cuda/CudaEmitter.h"
#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Nvrtc.h"

namespace scanforge::tools {

namespace {

constexpr int kOk = 0, kUserError = 1, kInternalError = 2;
constexpr int64_t kDefaultRegisterSize = 16;

// --dim NAME=SIZE values; false (with a message) on a malformed one.
bool parseDims(const std::vector<std::string> &specs, std::map<std::string, int64_t> &dims) {
  for (const std::string &spec : specs) {
    size_t eq = spec.find('=');
    char *end = nullptr;
    long long size = eq == std::string::npos ? 0 : std::strtoll(spec.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || !end || *end || size < 1 || size > 4096) {
      std::cerr << "scanc: error: --dim expects NAME=SIZE with 1 <= SIZE <= 4096, not '" << spec << "'\n";
      return false;
    }
    dims[spec.substr(0, eq)] = size;
  }
  return true;
}

int printPtx(const std::vector<cuda::RecurrenceDesc> &recurrences, const std::string &path, const CudaOptions &options) {
  std::map<std::string, int64_t> dims;
  if (!parseDims(options.dims, dims)) return kUserError;
  try {
    cuda::Nvrtc::checkArch(options.arch);
  } catch (const cuda::CudaError &e) {
    std::cerr << "scanc: error: " << e.what() << "\n";
    return kUserError;
  }
  try {
    const cuda::Nvrtc &nvrtc = cuda::Nvrtc::get();
    for (const cuda::RecurrenceDesc &rec : recurrences) {
      std::vector<std::string> defines;
      std::string sizes;
      for (auto &[macro, dim] : rec.defines) {
        if (dim == cuda::kLanesVariable) {  // whole register dimensions per thread: one lane per channel
          defines.push_back("-D" + macro + "=1");
          sizes += " " + macro + "=1";
          continue;
        }
        if (dim == cuda::kStashVariable) {  // the kernels with their stash
          defines.push_back("-D" + macro + "=1");
          continue;
        }
        if (dim == cuda::kAtomicSumsVariable) {  // the runtime's default: sums over channels in rows
          defines.push_back("-D" + macro + "=0");
          continue;
        }
        bool given = dims.count(dim);
        int64_t size = given ? dims[dim] : kDefaultRegisterSize;
        defines.push_back("-D" + macro + "=" + std::to_string(size));
        sizes += " " + dim + "=" + std::to_string(size) + (given ? "" : " (default; set with --dim " + dim + "=SIZE)");
      }
      std::cout << "// ----- " << path << ": PTX of " << rec.file << " for " << options.arch << ", NVRTC " << nvrtc.version()
                << (sizes.empty() ? "" : ", register dims" + sizes) << " -----\n"
                << nvrtc.compile(rec.source, rec.file, options.arch, defines, cuda::Nvrtc::Output::Ptx) << "\n";
    }
  } catch (const cuda::CudaUnavailable &e) {
    std::cerr << "scanc: error: --dump=ptx needs NVRTC: " << e.what() << "\n";
    return kUserError;
  } catch (const cuda::CudaError &e) {
    std::cerr << "scanc: internal error: NVRTC rejected generated code: " << e.what() << "\n";
    return kInternalError;
  }
  return kOk;
}

}  // namespace

void addCudaOptions(CLI::App &app, CudaOptions &options) {
  app.add_option("--arch", options.arch, "GPU architecture for --dump=ptx (default sm_90)");
  app.add_option("--dim", options.dims, "NAME=SIZE: size of a register dimension for --dump=ptx (default 16); repeatable")
      ->allow_extra_args(false);
  app.add_option("--emit-package", options.packageDir,
                 "write a CUDA kernel package (sources, manifest.json, goldens/) of FILE... to this directory");
}

int dumpCuda(const CompiledModule &module, bool source, bool ptx, const CudaOptions &options) {
  const std::vector<cuda::RecurrenceDesc> &recurrences = module.impl().cudaKernels();
  const std::string &path = module.path();
  if (source) {
    for (const cuda::RecurrenceDesc &rec : recurrences)
      std::cout << "// ----- " << path << ": CUDA source " << rec.file << " (scan.recurrence @" << rec.name << ") -----\n"
                << rec.source;
    std::string errors;
    llvm::raw_string_ostream os(errors);
    mlir::FailureOr<nlohmann::json> manifest = cuda::packageManifest(recurrences, os);
    if (mlir::failed(manifest)) {
      std::cerr << "scanc: error: " << errors << "\n";
      return kUserError;
    }
    std::cout << "// ----- " << path << ": kernel-package manifest -----\n" << manifest->dump(2) << "\n";
  }
  return ptx ? printPtx(recurrences, path, options) : kOk;
}

int emitPackage(const CudaOptions &options, const std::vector<std::string> &files, const CompileOptions &compile) {
  std::vector<CompiledModule> modules;
  for (const std::string &path : files) modules.push_back(compileModule(path, compile));
  try {
    std::cout << "scanc: " << writeKernelPackage(options.packageDir, modules) << "\n";
  } catch (const PackageError &e) {
    std::cerr << "scanc: error: " << e.what() << "\n";
    return kUserError;
  }
  return kOk;
}

}  // namespace scanforge::tools
