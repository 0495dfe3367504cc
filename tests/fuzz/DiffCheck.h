// One differential check of a .scan program: compile, run the float64 reference and the CPU
// backend forward and backward (with and without initial states), compare, and check the
// reference backward against central finite differences.
#pragma once

#include <cstdint>
#include <string>

namespace scanforge::fuzz {

struct CheckResult {
  enum Status { Pass, Skip, Fail } status = Pass;
  std::string category;  // for a failure: compile-rejected, internal-error, exception, mismatch, nan, fd
  std::string detail;
};

CheckResult checkProgram(const std::string &name, const std::string &source, uint64_t seed);

// A mutant must be rejected with a located error `name:line:col: error:` and no internal error.
CheckResult checkRejected(const std::string &name, const std::string &source);

}  // namespace scanforge::fuzz
