#include "compiler/package/PackageWriter.h"

#include <filesystem>
#include <fstream>

#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "compiler/mlir/Target/Cuda/CudaEmitter.h"
#include "compiler/package/GoldenVectors.h"

namespace scanforge::package {

namespace {

void writeFile(const std::filesystem::path &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw PackageError("cannot write " + path.string());
}

// "<kernel file stem>.B2_T37.json"
std::string goldenName(const cuda::RecurrenceDesc &rec, const cuda::Shape &shape) {
  return rec.file.substr(0, rec.file.size() - 3) + ".B" + std::to_string(shape.batch) + "_T" +
         std::to_string(shape.steps) + ".json";
}

}  // namespace

std::string writePackage(const std::string &dir, const std::vector<ModuleKernels> &modules) {
  std::vector<cuda::RecurrenceDesc> all;
  std::map<std::string, nlohmann::json> goldens;  // file name -> golden
  for (const ModuleKernels &m : modules) {
    mlir::SymbolTable symbols(m.module);
    for (const cuda::RecurrenceDesc &rec : *m.kernels) {
      if (!rec.adjointOf.empty()) continue;
      auto fwd = symbols.lookup<scan::RecurrenceOp>(rec.name);
      uint32_t seed = 1;
      for (const cuda::Shape &shape : goldenShapes(rec.channelDims, rec.registerDims)) {
        try {
          goldens[goldenName(rec, shape)] = makeGolden(fwd, scan::backwardOf(fwd), m.analyses, shape, seed++);
        } catch (const std::exception &e) {
          throw std::logic_error("the reference interpreter failed on " + rec.name + " at " + shape.describe() + ": " +
                                 e.what());
        }
      }
    }
    all.insert(all.end(), m.kernels->begin(), m.kernels->end());
  }
  std::string errors;
  llvm::raw_string_ostream os(errors);
  mlir::FailureOr<nlohmann::json> manifest = cuda::packageManifest(all, os);
  if (mlir::failed(manifest)) throw PackageError(os.str());

  std::filesystem::path root(dir);
  std::error_code error;
  std::filesystem::create_directories(root / "goldens", error);
  if (error) throw PackageError("cannot create " + (root / "goldens").string() + ": " + error.message());
  for (const cuda::RecurrenceDesc &rec : all) writeFile(root / rec.file, rec.source);
  for (auto &[name, golden] : goldens) writeFile(root / "goldens" / name, golden.dump());
  writeFile(root / "manifest.json", manifest->dump(2) + "\n");
  return "wrote " + root.string() + ": " + std::to_string(all.size()) + " kernel sources, manifest.json, " +
         std::to_string(goldens.size()) + " golden test vectors";
}

}  // namespace scanforge::package
