#include "compiler/mlir/Target/Cuda/CudaEmitter.h"

#include <set>

#include "compiler/mlir/Target/Cuda/KernelPrinter.h"
#include "compiler/mlir/Target/Cuda/ThreadLayout.h"

namespace scanforge::cuda {

mlir::FailureOr<std::vector<RecurrenceKernels>> emitCuda(mlir::ModuleOp module) {
  std::vector<RecurrenceKernels> out;
  for (scan::RecurrenceOp fwd : module.getOps<scan::RecurrenceOp>()) {
    if (fwd.getAdjointOf()) {
      if (!mlir::SymbolTable::lookupSymbolIn(module, *fwd.getAdjointOf()))
        return fwd.emitError() << "is the backward of '" << *fwd.getAdjointOf() << "', which the module lacks";
      continue;
    }
    scan::RecurrenceOp bwd;
    for (scan::RecurrenceOp rec : module.getOps<scan::RecurrenceOp>())
      if (rec.getAdjointOf() == fwd.getSymName()) bwd = rec;
    mlir::FailureOr<ThreadLayout> layout = ThreadLayout::choose(fwd, bwd);
    if (mlir::failed(layout)) return mlir::failure();
    mlir::FailureOr<RecurrenceKernels> forward = printKernels(fwd, nullptr, *layout);
    if (mlir::failed(forward)) return mlir::failure();
    if (bwd) {
      mlir::FailureOr<RecurrenceKernels> backward = printKernels(bwd, fwd, *layout);
      if (mlir::failed(backward)) return mlir::failure();
      forward->backward = backward->name;
      out.push_back(std::move(*forward));
      out.push_back(std::move(*backward));
    } else {
      out.push_back(std::move(*forward));
    }
  }
  return out;
}

namespace {

nlohmann::json launchJson(const Launch &launch) {
  nlohmann::json params = nlohmann::json::array();
  for (const LaunchParam &p : launch.params) {
    const char *key = p.kind == LaunchParam::Kind::Buffer ? "buffer" : p.kind == LaunchParam::Kind::Int32 ? "i32" : "i64";
    params.push_back({{key, p.value}});
  }
  return {{"kernel", launch.kernel},
          {"grid", launch.grid},
          {"block", launch.block},
          {"shared_bytes", launch.sharedBytes},
          {"params", params}};
}

nlohmann::json launchesJson(const std::vector<Launch> &launches) {
  nlohmann::json out = nlohmann::json::array();
  for (const Launch &l : launches) out.push_back(launchJson(l));
  return out;
}

}  // namespace

mlir::FailureOr<nlohmann::json> packageManifest(const std::vector<RecurrenceKernels> &recurrences,
                                                llvm::raw_ostream &errors) {
  std::map<std::string, std::string> files;  // source file -> recurrence
  std::set<std::string> readByBackward;      // "<forward>/<checkpoint buffer>"
  for (const RecurrenceKernels &rec : recurrences) {
    auto [it, fresh] = files.emplace(rec.file, rec.name);
    if (!fresh) {
      errors << "error: recurrences '" << it->second << "' and '" << rec.name << "' would share the kernel file '"
             << rec.file << "'; rename one of them\n";
      return mlir::failure();
    }
    for (const BufferSpec &b : rec.buffers)
      if (!rec.adjointOf.empty() && b.role == "checkpoint") readByBackward.insert(rec.adjointOf + "/" + b.name);
  }
  nlohmann::json list = nlohmann::json::array();
  for (const RecurrenceKernels &rec : recurrences) {
    nlohmann::json buffers = nlohmann::json::array();
    for (const BufferSpec &b : rec.buffers) {
      nlohmann::json entry = {{"name", b.name}, {"role", b.role}, {"dtype", b.dtype}, {"shape", b.shape}, {"optional", b.optional}};
      if (b.role == "checkpoint" && rec.adjointOf.empty()) entry["for_backward"] = readByBackward.count(rec.name + "/" + b.name) > 0;
      buffers.push_back(entry);
    }
    nlohmann::json entry = {
        {"name", rec.name},
        {"direction", rec.descending ? "reverse" : "forward"},
        {"source", rec.file},
        {"defines", rec.defines},
        {"layout", {{"channel_dims", rec.channelDims}, {"register_dims", rec.registerDims}, {"note", rec.layoutNote}}},
        {"channels", rec.channels},
        {"recompute_bytes_per_step", rec.recomputeBytesPerStep},
        {"buffers", buffers},
        {"zero_init", rec.zeroInit},
        {"strategies", {{"sequential", launchesJson(rec.sequential)}, {"chunked", launchesJson(rec.chunked)}}},
    };
    if (!rec.adjointOf.empty()) entry["adjoint_of"] = rec.adjointOf;
    if (!rec.backward.empty()) entry["backward"] = rec.backward;
    list.push_back(entry);
  }
  return nlohmann::json{{"format", "scanforge-cuda-package"}, {"version", 1}, {"recurrences", list}};
}

}  // namespace scanforge::cuda
