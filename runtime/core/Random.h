// Seeded, reproducible random numbers: the same seed gives the same stream on every machine and
// compiler (xoshiro256** seeded through splitmix64, with our own uniform and normal transforms
// rather than the implementation-defined std:: distributions). The state can be saved as a string
// and restored, so a resumed training run draws exactly the numbers it would have drawn.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "runtime/core/Tensor.h"

namespace scanforge {

class Generator {
 public:
  explicit Generator(uint64_t seed);

  uint64_t nextU64();
  double uniform();                       // [0, 1), 53 random bits
  double uniform(double low, double high);  // [low, high)
  double normal();                        // standard normal (Box-Muller, two draws per value)
  double normal(double mean, double stddev);
  int64_t uniformInt(int64_t n);          // [0, n), unbiased; n > 0

  // "xoshiro256** " followed by the four state words in hex; setState() validates its input.
  std::string state() const;
  void setState(const std::string &state);

 private:
  std::array<uint64_t, 4> s_;
};

// Fill every element (in row-major order) of a floating-point tensor.
void fillUniform(const Tensor &tensor, double low, double high, Generator &gen);
void fillNormal(const Tensor &tensor, double mean, double stddev, Generator &gen);

}  // namespace scanforge
