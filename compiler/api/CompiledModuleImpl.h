// Inside the repository: what a CompiledModule owns — the MLIR session and module, the analysis
// manager that caches the dialect's analyses — and the targets it hands out: the recurrences'
// IR for the float64 reference interpreter (Target/Reference), the CUDA kernels, the CPU programs.
// Tools and tests use this; the installed API is CompiledModule.h.
#pragma once

#include <functional>
#include <mutex>

#include "compiler/api/CompiledModule.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "compiler/mlir/Driver.h"
#include "mlir/Pass/AnalysisManager.h"
#include "runtime/cuda/PackageFormat.h"

namespace scanforge {

// Hooks into the one parse / lower / compile of a module, for `scanc --dump`.
struct BuildHooks {
  std::function<void(const dsl::Module &)> checked;  // called with the checked syntax tree
  llvm::raw_ostream *lowered = nullptr;        // prints the module as lowered from the DSL
  llvm::raw_ostream *afterEachPass = nullptr;  // prints the module after every pass
  llvm::raw_ostream *diagnostics = nullptr;    // MLIR diagnostics as they happen; null: collected
                                               // into the CompileError that reports a failure
};

struct CompiledModule::Impl {
  std::string path;
  CompileOptions options;
  std::string collected;  // MLIR diagnostics when BuildHooks::diagnostics is null
  std::unique_ptr<llvm::raw_string_ostream> collector;
  std::unique_ptr<scan::Session> session;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<mlir::ModuleAnalysisManager> analysisManager;

  mlir::AnalysisManager analyses() const { return *analysisManager; }
  std::vector<scan::RecurrenceOp> forwards() const;
  // The forward recurrence `name` ("": the only one); CompileError listing those there are.
  scan::RecurrenceOp forward(const std::string &name) const;
  // The CUDA kernels of every recurrence (emitted on first use, then cached); CompileError with
  // the located diagnostics when the CUDA backend cannot compile one.
  const std::vector<cuda::RecurrenceDesc> &cudaKernels() const;
  // Throws CompileError with `what` and the diagnostics collected so far.
  [[noreturn]] void fail(const std::string &what) const;

 private:
  mutable std::once_flag cudaOnce_;
  mutable std::vector<cuda::RecurrenceDesc> cuda_;
  mutable std::string cudaError_;
};

// Parses, checks, lowers and compiles a .scan source once, reporting what `hooks` ask for.
CompiledModule buildModule(const std::string &name, const std::string &source, const CompileOptions &options,
                           const BuildHooks &hooks);

}  // namespace scanforge
