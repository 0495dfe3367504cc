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

LaunchDesc launchFrom(const nlohmann::json &j) {
  LaunchDesc l;
  l.kernel = j.at("kernel").get<std::string>();
  for (size_t i = 0; i < 3; ++i) l.grid[i] = j.at("grid").at(i).get<std::string>();
  l.block = j.at("block").get<int>();
  l.sharedBytes = j.at("shared_bytes").get<std::string>();
  for (const nlohmann::json &p : j.at("params")) {
    if (p.contains("buffer")) l.params.push_back({ParamDesc::Kind::Buffer, p.at("buffer").get<std::string>()});
    else if (p.contains("i32")) l.params.push_back({ParamDesc::Kind::Int32, p.at("i32").get<std::string>()});
    else l.params.push_back({ParamDesc::Kind::Int64, p.at("i64").get<std::string>()});
  }
  return l;
}

RecurrenceDesc recurrenceFrom(const nlohmann::json &j, const std::map<std::string, std::string> &sources) {
  RecurrenceDesc r;
  r.name = j.at("name").get<std::string>();
  r.adjointOf = j.value("adjoint_of", "");
  r.backward = j.value("backward", "");
  r.reverse = j.at("direction").get<std::string>() == "reverse";
  r.file = j.at("source").get<std::string>();
  auto source = sources.find(r.file);
  if (source == sources.end()) throw CudaError("recurrence '" + r.name + "' names the source '" + r.file + "', which is missing");
  r.source = source->second;
  r.defines = j.at("defines").get<std::map<std::string, std::string>>();
  r.channelDims = j.at("layout").at("channel_dims").get<std::vector<std::string>>();
  r.registerDims = j.at("layout").at("register_dims").get<std::vector<std::string>>();
  r.layoutNote = j.at("layout").at("note").get<std::string>();
  r.channels = j.at("channels").get<std::string>();
  r.recomputeBytesPerStep = j.at("recompute_bytes_per_step").get<std::string>();
  for (const nlohmann::json &b : j.at("buffers"))
    r.buffers.push_back({b.at("name").get<std::string>(), b.at("role").get<std::string>(), b.at("dtype").get<std::string>(),
                         b.at("shape").get<std::vector<std::string>>(), b.at("optional").get<bool>(),
                         b.value("for_backward", false)});
  r.zeroInit = j.at("zero_init").get<std::vector<std::string>>();
  for (const nlohmann::json &l : j.at("strategies").at("sequential")) r.sequential.push_back(launchFrom(l));
  for (const nlohmann::json &l : j.at("strategies").at("chunked")) r.chunked.push_back(launchFrom(l));
  return r;
}

}  // namespace

const BufferDesc *RecurrenceDesc::buffer(const std::string &name) const {
  for (const BufferDesc &b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}

KernelPackage KernelPackage::fromJson(const nlohmann::json &manifest, const std::map<std::string, std::string> &sources,
                                      const std::string &where) {
  KernelPackage package;
  try {
    if (manifest.at("format").get<std::string>() != "scanforge-cuda-package")
      throw CudaError("it is not a scanforge CUDA package manifest (format '" + manifest.at("format").get<std::string>() + "')");
    if (manifest.at("version").get<int>() != 1)
      throw CudaError("it has version " + std::to_string(manifest.at("version").get<int>()) + "; this runtime reads version 1");
    for (const nlohmann::json &r : manifest.at("recurrences")) package.recurrences_.push_back(recurrenceFrom(r, sources));
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
