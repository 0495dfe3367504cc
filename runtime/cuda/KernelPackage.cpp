#include "runtime/cuda/KernelPackage.h"

#include <fstream>
#include <sstream>

#include "runtime/cuda/CudaError.h"

namespace scanforge::cuda {

namespace {

std::string readFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CudaError("cannot read " + path.string());
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

}  // namespace

KernelPackage KernelPackage::fromJson(const nlohmann::json &manifest, const std::map<std::string, std::string> &sources,
                                      const std::string &where) {
  KernelPackage package;
  try {
    package.recurrences_ = fromManifest(manifest, sources);
  } catch (const nlohmann::json::exception &e) {
    throw CudaError(where + ": malformed manifest: " + e.what());
  } catch (const CudaError &e) {
    throw CudaError(where + ": " + e.what());
  }
  return package;
}

KernelPackage KernelPackage::load(const std::filesystem::path &dir) {
  std::filesystem::path manifestPath = dir / "manifest.json";
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(readFile(manifestPath));
  } catch (const nlohmann::json::exception &e) {
    throw CudaError(manifestPath.string() + ": not valid JSON: " + e.what());
  }
  std::map<std::string, std::string> sources;
  if (manifest.contains("recurrences") && manifest["recurrences"].is_array())
    for (const nlohmann::json &r : manifest["recurrences"])
      if (r.contains("source") && r["source"].is_string()) {
        std::string file = r["source"].get<std::string>();
        if (file.find('/') != std::string::npos || file.find("..") != std::string::npos)
          throw CudaError(manifestPath.string() + ": source '" + file + "' must be a file in the package directory");
        sources[file] = readFile(dir / file);
      }
  return fromJson(manifest, sources, manifestPath.string());
}

const RecurrenceDesc &KernelPackage::recurrence(const std::string &name) const {
  std::string known;
  for (const RecurrenceDesc &r : recurrences_) {
    if (r.name == name) return r;
    known += (known.empty() ? "" : ", ") + r.name;
  }
  throw CudaError("the kernel package has no recurrence '" + name + "' (it has: " + known + ")");
}

}  // namespace scanforge::cuda
