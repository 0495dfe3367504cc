#include "tools/scanc/CudaCommands.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "compiler/mlir/Target/Cuda/CudaEmitter.h"
#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Nvrtc.h"
#include "tools/scanc/GoldenVectors.h"

namespace scanforge::tools {

namespace {

constexpr int kOk = 0, kUserError = 1, kInternalError = 2;
constexpr int64_t kDefaultRegisterSize = 16;

bool isCompiled(mlir::ModuleOp module) {
  return llvm::any_of(module.getOps<scan::RecurrenceOp>(), [](scan::RecurrenceOp r) { return r.getAdjointOf().has_value(); });
}

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

int printPtx(const std::vector<cuda::RecurrenceKernels> &recurrences, const std::string &path, const CudaOptions &options) {
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
    for (const cuda::RecurrenceKernels &rec : recurrences) {
      std::vector<std::string> defines;
      std::string sizes;
      for (auto &[macro, dim] : rec.defines) {
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

bool writeFile(const std::filesystem::path &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (out) return true;
  std::cerr << "scanc: error: cannot write " << path.string() << "\n";
  return false;
}

}  // namespace

void addCudaOptions(CLI::App &app, CudaOptions &options) {
  app.add_option("--arch", options.arch, "GPU architecture for --dump=ptx (default sm_90)");
  app.add_option("--dim", options.dims, "NAME=SIZE: size of a register dimension for --dump=ptx (default 16); repeatable")
      ->allow_extra_args(false);
  app.add_option("--emit-package", options.packageDir,
                 "write a CUDA kernel package (sources, manifest.json, goldens/) of FILE... to this directory");
}

int dumpCuda(scan::Session &session, mlir::ModuleOp module, const std::string &path, bool source, bool ptx,
             const CudaOptions &options) {
  if (!isCompiled(module) && mlir::failed(session.compile(module))) {
    std::cerr << "scanc: internal error: the compile pipeline failed on a checked recurrence\n";
    return kInternalError;
  }
  mlir::FailureOr<std::vector<cuda::RecurrenceKernels>> recurrences = cuda::emitCuda(module);
  if (mlir::failed(recurrences)) return kUserError;
  if (source) {
    for (const cuda::RecurrenceKernels &rec : *recurrences)
      std::cout << "// ----- " << path << ": CUDA source " << rec.file << " (scan.recurrence @" << rec.name << ") -----\n"
                << rec.source;
    std::string errors;
    llvm::raw_string_ostream os(errors);
    mlir::FailureOr<nlohmann::json> manifest = cuda::packageManifest(*recurrences, os);
    if (mlir::failed(manifest)) {
      std::cerr << "scanc: " << errors;
      return kUserError;
    }
    std::cout << "// ----- " << path << ": kernel-package manifest -----\n" << manifest->dump(2) << "\n";
  }
  return ptx ? printPtx(*recurrences, path, options) : kOk;
}

int emitPackage(const CudaOptions &options, const std::vector<std::string> &files) {
  std::vector<cuda::RecurrenceKernels> all;
  std::map<std::string, nlohmann::json> goldens;  // file name -> golden
  for (const std::string &path : files) {
    scan::Session session;
    mlir::OwningOpRef<mlir::ModuleOp> module = session.load(path, std::cerr);
    if (!module) return kUserError;
    if (mlir::failed(session.compile(*module))) {
      std::cerr << "scanc: internal error: the compile pipeline failed on " << path << "\n";
      return kInternalError;
    }
    mlir::FailureOr<std::vector<cuda::RecurrenceKernels>> recurrences = cuda::emitCuda(*module);
    if (mlir::failed(recurrences)) return kUserError;
    mlir::SymbolTable symbols(*module);
    for (const cuda::RecurrenceKernels &rec : *recurrences) {
      if (!rec.adjointOf.empty()) continue;
      auto fwd = symbols.lookup<scan::RecurrenceOp>(rec.name);
      auto bwd = rec.backward.empty() ? scan::RecurrenceOp() : symbols.lookup<scan::RecurrenceOp>(rec.backward);
      uint32_t seed = 1;
      for (const cuda::Shape &shape : goldenShapes(rec.channelDims, rec.registerDims)) {
        std::string name = rec.file.substr(0, rec.file.size() - 3) + ".B" + std::to_string(shape.batch) + "_T" +
                           std::to_string(shape.steps) + ".json";
        try {
          goldens[name] = makeGolden(fwd, bwd, shape, seed++);
        } catch (const std::exception &e) {
          std::cerr << "scanc: internal error: the reference interpreter failed on " << rec.name << " at "
                    << shape.describe() << ": " << e.what() << "\n";
          return kInternalError;
        }
      }
    }
    all.insert(all.end(), std::make_move_iterator(recurrences->begin()), std::make_move_iterator(recurrences->end()));
  }
  std::string errors;
  llvm::raw_string_ostream os(errors);
  mlir::FailureOr<nlohmann::json> manifest = cuda::packageManifest(all, os);
  if (mlir::failed(manifest)) {
    std::cerr << "scanc: " << errors;
    return kUserError;
  }
  std::filesystem::path dir(options.packageDir);
  std::error_code error;
  std::filesystem::create_directories(dir / "goldens", error);
  if (error) {
    std::cerr << "scanc: error: cannot create " << (dir / "goldens").string() << ": " << error.message() << "\n";
    return kUserError;
  }
  for (const cuda::RecurrenceKernels &rec : all)
    if (!writeFile(dir / rec.file, rec.source)) return kUserError;
  for (auto &[name, golden] : goldens)
    if (!writeFile(dir / "goldens" / name, golden.dump())) return kUserError;
  if (!writeFile(dir / "manifest.json", manifest->dump(2) + "\n")) return kUserError;
  std::cout << "scanc: wrote " << dir.string() << ": " << all.size() << " kernel sources, manifest.json, " << goldens.size()
            << " golden test vectors\n";
  return kOk;
}

}  // namespace scanforge::tools
