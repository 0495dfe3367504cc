// `scanc run FILE --shape b=2,t=64,d=16`: forward and backward on the CPU backend with random
// inputs, compared with the float64 reference interpreter.
#pragma once

#include <string>

namespace scanforge::scanc {

// Returns the process exit code (0 when every tensor is within the f32 bound).
// The file is parsed, lowered and compiled once; the CPU run and the reference share that IR.
int runAndCompare(const std::string &path, const std::string &shape, const std::string &recurrence, unsigned seed,
                  bool verbose);

}  // namespace scanforge::scanc
