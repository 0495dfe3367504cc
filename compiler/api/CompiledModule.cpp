// CompiledModule: one parse, lowering and compile of a .scan file; the targets built from it.
#include "compiler/api/CompiledModuleImpl.h"

#include <chrono>
#include <iostream>
#include <sstream>

#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "compiler/mlir/Target/Cuda/CudaEmitter.h"
#include "compiler/package/PackageWriter.h"
#include "dsl/Source.h"

namespace scanforge {

namespace {

double secondsSince(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

// CompileOptions::bf16Ports, on the lowered module (forward recurrences only: the pipeline gives the
// generated backwards their ports' storage from these).
void storePortsAsBf16(mlir::ModuleOp module) {
  mlir::TypeAttr bf16 = mlir::TypeAttr::get(mlir::BFloat16Type::get(module.getContext()));
  module.walk([&](scan::InputOp in) { in.setStorageAttr(bf16); });
  module.walk([&](scan::OutputOp out) { out.setStorageAttr(bf16); });
}

}  // namespace

std::vector<scan::RecurrenceOp> CompiledModule::Impl::forwards() const {
  std::vector<scan::RecurrenceOp> out;
  for (scan::RecurrenceOp rec : module.get().getOps<scan::RecurrenceOp>())
    if (!rec.getAdjointOf()) out.push_back(rec);
  return out;
}

scan::RecurrenceOp CompiledModule::Impl::forward(const std::string &name) const {
  std::vector<scan::RecurrenceOp> matches;
  std::string names;
  for (scan::RecurrenceOp rec : forwards()) {
    names += " " + rec.getSymName().str();
    if (name.empty() || rec.getSymName() == name) matches.push_back(rec);
  }
  if (matches.size() == 1) return matches.front();
  throw CompileError(path + ": " +
                     (matches.empty() ? "no recurrence named '" + name + "'"
                                      : std::string("several recurrences; choose one with CompileOptions::recurrence")) +
                     " (it has:" + names + ")");
}

void CompiledModule::Impl::fail(const std::string &what) const {
  throw CompileError(what + (collector ? collector->str() : std::string()));
}

const std::vector<cuda::RecurrenceDesc> &CompiledModule::Impl::cudaKernels() const {
  std::call_once(cudaOnce_, [&] {
    auto begin = std::chrono::steady_clock::now();
    mlir::FailureOr<std::vector<cuda::RecurrenceDesc>> kernels = cuda::emitCuda(*module, analyses());
    if (mlir::failed(kernels)) {
      cudaError_ = path + ": the CUDA backend cannot compile this module:\n" + (collector ? collector->str() : "");
      return;
    }
    cuda_ = std::move(*kernels);
    if (options.verbose) std::fprintf(stderr, "scanforge: emitted the CUDA kernels of %s in %.3f s\n", path.c_str(), secondsSince(begin));
  });
  if (!cudaError_.empty()) throw CompileError(cudaError_);
  return cuda_;
}

CompiledModule buildModule(const std::string &name, const std::string &source, const CompileOptions &options,
                           const BuildHooks &hooks) {
  auto impl = std::make_shared<CompiledModule::Impl>();
  impl->path = name;
  impl->options = options;
  llvm::raw_ostream *diagnostics = hooks.diagnostics;
  if (!diagnostics) {
    impl->collector = std::make_unique<llvm::raw_string_ostream>(impl->collected);
    diagnostics = impl->collector.get();
  }
  impl->session = std::make_unique<scan::Session>(*diagnostics);

  auto begin = std::chrono::steady_clock::now();
  std::ostringstream dslErrors;
  dsl::Module ast;
  impl->module = impl->session->loadText(name, source, dslErrors, hooks.checked ? &ast : nullptr);
  if (!impl->module) {
    // DSL diagnostics go where the MLIR ones do: printed as they happen, or into the error.
    if (hooks.diagnostics) *hooks.diagnostics << dslErrors.str();
    impl->fail(hooks.diagnostics ? "" : dslErrors.str());
  }
  if (options.bf16Ports) storePortsAsBf16(*impl->module);
  if (options.verbose)
    std::fprintf(stderr, "scanforge: parsed, checked and lowered %s in %.3f s\n", name.c_str(), secondsSince(begin));
  if (hooks.checked) hooks.checked(ast);
  if (hooks.lowered) {
    *hooks.lowered << "// ----- " << name << ": scan dialect, as lowered -----\n";
    impl->module->print(*hooks.lowered);
    *hooks.lowered << "\n";
    hooks.lowered->flush();
  }
  begin = std::chrono::steady_clock::now();
  if (mlir::failed(impl->session->compile(*impl->module, hooks.afterEachPass, options.transitions)))
    impl->fail("internal error: the compile pipeline failed on '" + name + "':\n");
  impl->analysisManager = std::make_unique<mlir::ModuleAnalysisManager>(*impl->module, /*passInstrumentor=*/nullptr);
  if (options.verbose)
    std::fprintf(stderr, "scanforge: compiled %s (forward recurrences and generated backwards) in %.3f s\n", name.c_str(),
                 secondsSince(begin));
  CompiledModule m;
  m.impl_ = impl;
  return m;
}

const std::string &CompiledModule::path() const { return impl_->path; }

std::vector<std::string> CompiledModule::recurrences() const {
  std::vector<std::string> names;
  for (scan::RecurrenceOp rec : impl_->forwards()) names.push_back(rec.getSymName().str());
  return names;
}

std::string CompiledModule::scanIR() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  impl_->module->print(os);
  return os.str();
}

std::string writeKernelPackage(const std::string &dir, const std::vector<CompiledModule> &modules) {
  std::vector<package::ModuleKernels> kernels;
  for (const CompiledModule &m : modules)
    kernels.push_back({*m.impl().module, m.impl().analyses(), &m.impl().cudaKernels()});
  try {
    return package::writePackage(dir, kernels);
  } catch (const package::PackageError &e) {
    throw PackageError(e.what());
  }
}

std::string CompiledModule::writeKernelPackage(const std::string &dir) const {
  return scanforge::writeKernelPackage(dir, {*this});
}

CompiledModule compileModule(const std::string &path, const CompileOptions &options) {
  std::string error;
  std::optional<dsl::SourceFile> file = dsl::SourceFile::load(path, error);
  if (!file) throw CompileError(error);
  return compileModuleSource(path, file->text(), options);
}

CompiledModule compileModuleSource(const std::string &name, const std::string &source, const CompileOptions &options) {
  return buildModule(name, source, options, BuildHooks{});
}

}  // namespace scanforge
