// main() of tests that compile with NVRTC and read SASS with cuobjdump/nvdisasm: without them they
// print why and exit with ctest's skip code (77), never passing silently.
#include <gtest/gtest.h>

#include <iostream>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Nvrtc.h"
#include "tools/gpu/sass/Disassembler.h"

int main(int argc, char **argv) {
  std::string why;
  if (!scanforge::gpu::BinaryTools::find(why)) {
    std::cout << "[SKIP] " << why << "\n";
    return 77;
  }
  try {
    scanforge::cuda::Nvrtc::get();
  } catch (const scanforge::cuda::CudaUnavailable &e) {
    std::cout << "[SKIP] " << e.what() << "\n";
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
