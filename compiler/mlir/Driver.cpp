#include "compiler/mlir/Driver.h"

#include "compiler/mlir/Conversion/DslToScan/DslToScan.h"
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Pipeline.h"
#include "dsl/Sema.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SourceMgr.h"

namespace scanforge::scan {

Session::Session(llvm::raw_ostream &diagnostics)
    : context_(std::make_unique<mlir::MLIRContext>()), sources_(std::make_unique<llvm::SourceMgr>()) {
  mlir::DialectRegistry registry;
  registerScanDialects(registry);
  context_->appendDialectRegistry(registry);
  context_->loadAllAvailableDialects();
  context_->disableMultithreading();  // IR printing after each pass needs one thread
  context_->printOpOnDiagnostic(false);  // errors point at the .scan source, not at generic IR
  handler_ = std::make_unique<mlir::SourceMgrDiagnosticHandler>(*sources_, context_.get(), diagnostics);
}

Session::~Session() = default;

mlir::OwningOpRef<mlir::ModuleOp> Session::load(const std::string &path, std::ostream &errs, dsl::Module *ast) {
  std::string error;
  std::optional<dsl::SourceFile> file = dsl::SourceFile::load(path, error);
  if (!file) {
    errs << "error: " << error << "\n";
    return nullptr;
  }
  return loadText(path, file->text(), errs, ast);
}

mlir::OwningOpRef<mlir::ModuleOp> Session::loadText(const std::string &path, const std::string &text,
                                                    std::ostream &errs, dsl::Module *ast) {
  dsl::SourceFile file(path, text);
  dsl::DiagnosticEngine diags(file);
  dsl::Module module;
  bool ok = dsl::parseAndCheck(file, diags, module);
  diags.render(errs);
  if (!ok) return nullptr;
  // Later MLIR diagnostics at this file's locations print its source lines.
  sources_->AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> lowered = lowerToScan(module, path, *context_);
  if (mlir::failed(mlir::verify(*lowered))) return nullptr;
  if (ast) *ast = std::move(module);
  return lowered;
}

mlir::LogicalResult Session::compile(mlir::ModuleOp module, llvm::raw_ostream *printAfterEach, bool transitions) {
  mlir::PassManager pm(context_.get());
  buildCompilePipeline(pm, transitions);
  if (printAfterEach)
    pm.enableIRPrinting([](mlir::Pass *, mlir::Operation *) { return false; },
                        [](mlir::Pass *, mlir::Operation *) { return true; },
                        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false,
                        /*printAfterOnlyOnFailure=*/false, *printAfterEach);
  return pm.run(module);
}

}  // namespace scanforge::scan
