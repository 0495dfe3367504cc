// One differential check of a .scan program: compile, run the float64 reference, the CPU backend
// and the CUDA kernels (on the concurrent emulator) forward and backward, with and without initial
// states, compare, and check the reference backward against central finite differences.
#pragma once

#include <cstdint>
#include <string>

#include "tools/gpu/emulator/EmulatedBackend.h"

namespace scanforge::fuzz {

struct CheckResult {
  enum Status { Pass, Skip, Fail } status = Pass;
  // for a failure: compile-rejected, internal-error, exception, mismatch, nan, fd, cuda-compile,
  // cuda-error (a launch failed: race, out-of-bounds access, deadlock), cuda-mismatch
  std::string category;
  std::string detail;
};

// `cuda`: the emulator to run the CUDA kernels on (null: they are not checked).
CheckResult checkProgram(const std::string &name, const std::string &source, uint64_t seed,
                         const gpu::EmulatorOptions *cuda);

// A mutant must be rejected with a located error `name:line:col: error:` and no internal error.
CheckResult checkRejected(const std::string &name, const std::string &source);

}  // namespace scanforge::fuzz
