// The `scan` dialect and its operations (declared in ScanOps.td).
#pragma once

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "compiler/mlir/Dialect/Scan/IR/ScanOpsDialect.h.inc"
#include "compiler/mlir/Dialect/Scan/IR/ScanInterfaces.h.inc"

#define GET_OP_CLASSES
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h.inc"

namespace scanforge::scan {

// Registers the dialects a scan module may contain (scan, arith, math) with a registry.
void registerScanDialects(mlir::DialectRegistry &registry);

// (a, b) when `sigmoid` is sigmoid(softplus(a) - softplus(b)), or sigmoid(-(softplus(b) -
// softplus(a))): minLSTM's normalised gate f / (f + i). Backends compute it as one quotient,
// (1 + e^a) / ((1 + e^a) + (1 + e^b)), without the logarithms or their cancellation (docs/dsl.md).
std::optional<std::pair<mlir::Value, mlir::Value>> softplusDifference(SigmoidOp sigmoid);

}  // namespace scanforge::scan
