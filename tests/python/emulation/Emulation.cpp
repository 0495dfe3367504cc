// Test-only: the switch that runs CPU float32/bfloat16 calls through the CUDA dispatch code
// (python/csrc/Device.cpp) on the concurrent CUDA emulator, so that CI runs the code a GPU runs.
// A library of its own, loaded by the tests only, so that the package never carries the emulator.
//
//   torch.ops.scanforge_testing.emulate_cuda(True)
#include <torch/library.h>

#include "python/csrc/Device.h"
#include "tools/gpu/emulator/EmulatedBackend.h"

namespace {

void emulateCuda(bool on) {
  if (!on) return scanforge::torchext::setEmulator(nullptr);
  scanforge::gpu::EmulatorOptions options;
  options.cacheDir = SCANFORGE_EMULATION_CACHE;  // the build's compiler and flags, by default
  options.recordTraffic = false;
  scanforge::torchext::setEmulator(std::make_shared<scanforge::gpu::EmulatedBackend>(options));
}

}  // namespace

TORCH_LIBRARY(scanforge_testing, m) { m.def("emulate_cuda(bool on) -> ()", &emulateCuda); }
