#include "tools/gpu/sass/Disassembler.h"

#include <unistd.h>

#include <fstream>

#include "runtime/cuda/CudaError.h"
#include "tools/common/RunCommand.h"

namespace scanforge::gpu {

namespace {

// Writes the cubin to a private temporary file, runs `tool args FILE` and removes the file.
std::string runOnCubin(const std::filesystem::path &tool, const std::string &args, const std::string &cubin) {
  std::string path = (std::filesystem::temp_directory_path() / "scanforge-sass-XXXXXX").string();
  int fd = mkstemp(path.data());
  if (fd < 0) throw cuda::CudaError("cannot create a temporary file for " + tool.filename().string());
  close(fd);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  }
  int status = 0;
  std::string command = "'" + tool.string() + "' " + args + " '" + path + "'";
  std::string text = tools::runCommand(command, status);
  std::filesystem::remove(path);
  if (status != 0) throw cuda::CudaError(command + " failed (status " + std::to_string(status) + "):\n" + text);
  return text;
}

}  // namespace

std::optional<BinaryTools> BinaryTools::find(std::string &why) {
  BinaryTools tools{SCANFORGE_CUOBJDUMP, SCANFORGE_NVDISASM};
  for (const std::filesystem::path &p : {tools.cuobjdump, tools.nvdisasm})
    if (p.empty() || access(p.c_str(), X_OK) != 0) {
      why = "cuobjdump and nvdisasm are needed (found: '" + tools.cuobjdump.string() + "', '" + tools.nvdisasm.string() +
            "'); tools/install-deps.sh installs them from PyPI into .gpu-tools/";
      return std::nullopt;
    }
  return tools;
}

std::string BinaryTools::resourceUsage(const std::string &cubin) const { return runOnCubin(cuobjdump, "-res-usage", cubin); }

std::string BinaryTools::disassemble(const std::string &cubin) const { return runOnCubin(nvdisasm, "-c -hex -gi", cubin); }

}  // namespace scanforge::gpu
