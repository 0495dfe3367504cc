#include "compiler/mlir/Dialect/Scan/Transforms/Pipeline.h"

#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace scanforge::scan {

void buildCompilePipeline(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(createScanExtractAffine());
  pm.addPass(createScanAutodiff());
  pm.addPass(createScanExtractAffine());
  pm.addPass(createScanSimplify());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void registerScanPassesAndPipeline() {
  registerScanPasses();  // tablegen'd: every pass in Passes.td
  mlir::PassPipelineRegistration<>("scan-compile",
                                   "lowered DSL -> forward and backward recurrences in affine, simplified form",
                                   buildCompilePipeline);
}

}  // namespace scanforge::scan
