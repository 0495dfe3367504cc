// A kernel package: the generated CUDA sources of some recurrences and the manifest that says how
// to launch them (written by `scanc --emit-package`; format in docs/cuda.md). Reading one needs
// neither MLIR nor the compiler.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace scanforge::cuda {

struct BufferDesc {
  std::string name, role, dtype;   // dtype: f32 or bf16
  std::vector<std::string> shape;  // formulas
  bool optional = false;
  bool forBackward = false;        // a forward checkpoint the backward reads
};

struct ParamDesc {
  enum class Kind { Buffer, Int32, Int64 } kind;
  std::string value;  // buffer name or formula
};

struct LaunchDesc {
  std::string kernel;
  std::array<std::string, 3> grid;
  int block = 0;
  std::string sharedBytes;
  std::vector<ParamDesc> params;
};

struct RecurrenceDesc {
  std::string name, adjointOf, backward;
  bool reverse = false;
  std::string file, source;
  std::map<std::string, std::string> defines;  // macro -> formula
  std::vector<std::string> channelDims, registerDims;
  std::string layoutNote;
  std::string channels, recomputeBytesPerStep;
  std::vector<BufferDesc> buffers;
  std::vector<std::string> zeroInit;
  std::vector<LaunchDesc> sequential, chunked;

  const BufferDesc *buffer(const std::string &name) const;
};

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
