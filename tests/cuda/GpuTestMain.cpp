// main() of the GPU test programs: without a CUDA driver or GPU they print why and exit with the
// skip code ctest is told about (77), so a machine without a GPU shows them as skipped, never as
// passed.
#include <gtest/gtest.h>

#include <iostream>

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaError.h"

int main(int argc, char **argv) {
  try {
    scanforge::cuda::CudaBackend probe;
    std::cout << "GPU: " << probe.describe() << "\n";
  } catch (const scanforge::cuda::CudaUnavailable &e) {
    std::cout << "[SKIP] no CUDA driver/GPU: " << e.what() << "\n";
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
