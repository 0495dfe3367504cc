#include "compiler/mlir/Dialect/Scan/Transforms/Pipeline.h"

#include "compiler/mlir/Dialect/Scan/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace scanforge::scan {

void buildCompilePipeline(mlir::OpPassManager &pm, bool transitions) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(createScanExtractAffine());
  if (transitions) {
    pm.addPass(createScanTransition());
    pm.addPass(mlir::createCanonicalizerPass());  // the math that only fed outputs or b
  }
  pm.addPass(createScanAutodiff());
  pm.addPass(createScanExtractAffine());
  pm.addPass(createScanSimplify());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(createScanFactorSums());  // after CSE: equal factors are one value
  pm.addPass(mlir::createCanonicalizerPass());  // the trees it left unused: single-use factors again
  pm.addPass(createScanOrderProducts());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void registerScanPassesAndPipeline() {
  registerScanPasses();  // tablegen'd: every pass in Passes.td
  mlir::PassPipelineRegistration<>("scan-compile",
                                   "lowered DSL -> forward and backward recurrences in affine, simplified form",
                                   [](mlir::OpPassManager &pm) { buildCompilePipeline(pm); });
}

}  // namespace scanforge::scan
