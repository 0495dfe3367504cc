// A kernel package: the generated CUDA sources of some recurrences and the manifest that says how
// to launch them (written by `scanc --emit-package`; format in PackageFormat.h and docs/cuda.md).
// Reading one needs neither MLIR nor the compiler.
#pragma once

#include <filesystem>

#include "runtime/cuda/PackageFormat.h"

namespace scanforge::cuda {

class KernelPackage {
 public:
  // Reads <dir>/manifest.json and the sources it names. Throws CudaError naming the file and what
  // is wrong with it.
  static KernelPackage load(const std::filesystem::path &dir);
  // A package already in memory: the manifest and its sources by file name.
  static KernelPackage fromJson(const nlohmann::json &manifest, const std::map<std::string, std::string> &sources,
                                const std::string &where = "kernel package");

  const std::vector<RecurrenceDesc> &recurrences() const { return recurrences_; }
  // Throws CudaError listing the package's recurrences when there is no `name`.
  const RecurrenceDesc &recurrence(const std::string &name) const;

 private:
  std::vector<RecurrenceDesc> recurrences_;
};

}  // namespace scanforge::cuda
