// The scan dialect's passes (declared in Passes.td).
#pragma once

#include <memory>

#include "mlir/Pass/Pass.h"

namespace scanforge::scan {

#define GEN_PASS_DECL
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h.inc"

}  // namespace scanforge::scan
