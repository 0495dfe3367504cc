// cuobjdump and nvdisasm (CUDA binary utilities from PyPI, installed by tools/install-deps.sh into
// .gpu-tools/; development-side only): a cubin's resource usage and its SASS as text.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace scanforge::gpu {

struct BinaryTools {
  std::filesystem::path cuobjdump, nvdisasm;

  // The tools CMake found (SCANFORGE_CUOBJDUMP / SCANFORGE_NVDISASM), or nullopt with `why`
  // naming what is missing and how to install it.
  static std::optional<BinaryTools> find(std::string &why);

  std::string resourceUsage(const std::string &cubin) const;  // cuobjdump -res-usage
  std::string disassemble(const std::string &cubin) const;    // nvdisasm -c -hex -gi (labels, encodings, lines)
};

}  // namespace scanforge::gpu
