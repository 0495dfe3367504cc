// Lowers checked DSL recurrences to the `scan` dialect. Every op carries the source location
// (file:line:col) of the DSL construct it comes from, so later errors point into the .scan file.
#pragma once

#include <string>

#include "dsl/AST.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace scanforge::scan {

// `module` must have passed dsl::analyze without errors.
mlir::OwningOpRef<mlir::ModuleOp> lowerToScan(const dsl::Module &module, const std::string &path,
                                              mlir::MLIRContext &context);

}  // namespace scanforge::scan
