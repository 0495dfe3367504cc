// One compilation session: an MLIR context with the scan dialects, diagnostics that print the
// .scan source line under each error, and the steps .scan file -> checked AST -> scan IR ->
// compiled forward and backward recurrences.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "dsl/AST.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

namespace llvm {
class SourceMgr;
}
namespace mlir {
class SourceMgrDiagnosticHandler;
}

namespace scanforge::scan {

class Session {
 public:
  explicit Session(llvm::raw_ostream &diagnostics = llvm::errs());
  ~Session();

  mlir::MLIRContext &context() { return *context_; }

  // Reads, checks and lowers a .scan file; DSL diagnostics go to `errs`. Returns null when the file
  // cannot be read or has errors. `ast` (optional) receives the checked syntax tree.
  mlir::OwningOpRef<mlir::ModuleOp> load(const std::string &path, std::ostream &errs, dsl::Module *ast = nullptr);
  // The same for source text already in memory; `path` names it in diagnostics and locations.
  mlir::OwningOpRef<mlir::ModuleOp> loadText(const std::string &path, const std::string &text, std::ostream &errs,
                                             dsl::Module *ast = nullptr);

  // Runs the standard pipeline (see Pipeline.h; `transitions` compiles the slice transitions of
  // the recurrences instead of themselves) in place. With `printAfterEach`, prints the module after
  // every pass to it.
  mlir::LogicalResult compile(mlir::ModuleOp module, llvm::raw_ostream *printAfterEach = nullptr,
                              bool transitions = false);

 private:
  std::unique_ptr<mlir::MLIRContext> context_;
  std::unique_ptr<llvm::SourceMgr> sources_;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> handler_;
};

}  // namespace scanforge::scan
