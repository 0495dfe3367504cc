#include "compiler/mlir/Target/Cuda/CudaEmitter.h"

#include "compiler/mlir/Dialect/Scan/Analysis/ParallelDims.h"
#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "compiler/mlir/Target/Cuda/KernelPrinter.h"

namespace scanforge::cuda {

namespace {

// Marks the forward's checkpoints that its backward reads (the runtime keeps them for it).
void markCheckpointsForBackward(RecurrenceDesc &forward, const RecurrenceDesc &backward) {
  for (BufferDesc &b : forward.buffers) {
    const BufferDesc *read = backward.buffer(b.name);
    b.forBackward = b.role == BufferRole::Checkpoint && read && read->role == BufferRole::Checkpoint;
  }
}

}  // namespace

mlir::FailureOr<std::vector<RecurrenceDesc>> emitCuda(mlir::ModuleOp module, mlir::AnalysisManager analyses) {
  std::vector<RecurrenceDesc> out;
  for (scan::RecurrenceOp fwd : module.getOps<scan::RecurrenceOp>()) {
    if (fwd.getAdjointOf()) {
      if (!scan::forwardOf(fwd))
        return fwd.emitError() << "is the backward of '" << *fwd.getAdjointOf() << "', which the module lacks";
      continue;
    }
    scan::RecurrenceOp bwd = scan::backwardOf(fwd);
    const scan::ParallelDims &layout = analyses.getChildAnalysis<scan::ParallelDims>(fwd);
    if (!layout.valid()) return mlir::failure();
    mlir::FailureOr<RecurrenceDesc> forward = printKernels(fwd, nullptr, layout, analyses);
    if (mlir::failed(forward)) return mlir::failure();
    if (bwd) {
      mlir::FailureOr<RecurrenceDesc> backward = printKernels(bwd, fwd, layout, analyses);
      if (mlir::failed(backward)) return mlir::failure();
      forward->backward = backward->name;
      markCheckpointsForBackward(*forward, *backward);
      out.push_back(std::move(*forward));
      out.push_back(std::move(*backward));
    } else {
      out.push_back(std::move(*forward));
    }
  }
  return out;
}

mlir::FailureOr<nlohmann::json> packageManifest(const std::vector<RecurrenceDesc> &recurrences,
                                                llvm::raw_ostream &errors) {
  std::map<std::string, std::string> files;  // source file -> recurrence
  for (const RecurrenceDesc &rec : recurrences) {
    auto [it, fresh] = files.emplace(rec.file, rec.name);
    if (!fresh) {
      errors << "recurrences '" << it->second << "' and '" << rec.name << "' would share the kernel file '" << rec.file
             << "'; rename one of them";
      return mlir::failure();
    }
  }
  return toManifest(recurrences);
}

mlir::FailureOr<KernelPackage> kernelPackage(const std::vector<RecurrenceDesc> &recurrences, llvm::raw_ostream &errors) {
  mlir::FailureOr<nlohmann::json> manifest = packageManifest(recurrences, errors);
  if (mlir::failed(manifest)) return mlir::failure();
  std::map<std::string, std::string> sources;
  for (const RecurrenceDesc &rec : recurrences) sources[rec.file] = rec.source;
  return KernelPackage::fromJson(*manifest, sources);
}

}  // namespace scanforge::cuda
