// scan-opt: runs scanforge's passes (and MLIR's canonicalize/cse) on textual scan IR, like mlir-opt.
// Used by the lit/FileCheck pass tests; `scan-opt --scan-compile` runs the whole pipeline.
#include "compiler/mlir/Dialect/Scan/IR/ScanOps.h"
#include "compiler/mlir/Dialect/Scan/Transforms/Pipeline.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  scanforge::scan::registerScanDialects(registry);
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  scanforge::scan::registerScanPassesAndPipeline();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "scan-opt: scanforge's passes over textual scan IR\n", registry));
}
