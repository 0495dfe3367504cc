// scanc's CUDA commands: --dump=cuda and --dump=ptx (the generated kernels, and their PTX from
// NVRTC for --arch), and --emit-package DIR (kernel sources, manifest and golden test vectors that
// a GPU machine without MLIR runs with scan-package-run).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "compiler/api/CompiledModule.h"

namespace scanforge::tools {

struct CudaOptions {
  std::string arch = "sm_90";
  std::vector<std::string> dims;  // NAME=SIZE: register-dimension sizes for --dump=ptx
  std::string packageDir;         // --emit-package
};

void addCudaOptions(CLI::App &app, CudaOptions &options);

// Prints the CUDA source (`source`) and/or PTX (`ptx`) of a compiled module. Returns scanc's exit
// code (0, 1 for a user error, 2 for a bug).
int dumpCuda(const CompiledModule &module, bool source, bool ptx, const CudaOptions &options);

// Compiles `files` and writes their kernel package to options.packageDir.
int emitPackage(const CudaOptions &options, const std::vector<std::string> &files, const CompileOptions &compile);

}  // namespace scanforge::tools
