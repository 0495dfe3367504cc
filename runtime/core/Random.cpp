#include "runtime/core/Random.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <sstream>

#include "runtime/core/Error.h"

namespace scanforge {

namespace {

uint64_t splitmix64(uint64_t &x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr const char *kStatePrefix = "xoshiro256** ";

template <class F>
void fillWith(const Tensor &tensor, const char *op, F draw) {
  if (!isFloating(tensor.dtype())) throw RuntimeError(op, "needs a floating-point tensor, got " + tensor.describe());
  Tensor values = Tensor::empty(tensor.shape(), DType::F64);
  double *p = values.data<double>();
  for (int64_t i = 0, n = values.numel(); i < n; ++i) p[i] = draw();
  tensor.copyFrom(values);
}

}  // namespace

Generator::Generator(uint64_t seed) {
  for (uint64_t &word : s_) word = splitmix64(seed);
}

uint64_t Generator::nextU64() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Generator::uniform() { return static_cast<double>(nextU64() >> 11) * 0x1.0p-53; }

double Generator::uniform(double low, double high) { return low + (high - low) * uniform(); }

double Generator::normal() {
  double u1 = 1.0 - uniform();  // (0, 1]: log stays finite
  double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Generator::normal(double mean, double stddev) { return mean + stddev * normal(); }

int64_t Generator::uniformInt(int64_t n) {
  if (n <= 0) throw RuntimeError("Generator::uniformInt", "the range [0, " + std::to_string(n) + ") is empty");
  // Lemire's multiply-shift with rejection of the biased low range.
  uint64_t range = static_cast<uint64_t>(n);
  unsigned __int128 m = static_cast<unsigned __int128>(nextU64()) * range;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < range) {
    uint64_t threshold = -range % range;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(nextU64()) * range;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<int64_t>(m >> 64);
}

std::string Generator::state() const {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, "%s%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64, kStatePrefix,
                s_[0], s_[1], s_[2], s_[3]);
  return buffer;
}

void Generator::setState(const std::string &state) {
  const char *op = "Generator::setState";
  std::string prefix = kStatePrefix;
  if (state.compare(0, prefix.size(), prefix) != 0)
    throw RuntimeError(op, "'" + state + "' does not start with '" + prefix + "'");
  std::istringstream in(state.substr(prefix.size()));
  std::array<uint64_t, 4> words{};
  for (uint64_t &word : words) {
    std::string hex;
    if (!(in >> hex) || hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw RuntimeError(op, "'" + state + "' does not hold four 16-digit lower-case hex words");
    word = std::stoull(hex, nullptr, 16);
  }
  std::string rest;
  if (in >> rest) throw RuntimeError(op, "trailing text '" + rest + "' in '" + state + "'");
  if ((words[0] | words[1] | words[2] | words[3]) == 0)
    throw RuntimeError(op, "the all-zero state is not a valid xoshiro256** state");
  s_ = words;
}

void fillUniform(const Tensor &tensor, double low, double high, Generator &gen) {
  if (!(low < high))
    throw RuntimeError("fillUniform", "needs low < high, got [" + std::to_string(low) + ", " + std::to_string(high) + ")");
  fillWith(tensor, "fillUniform", [&] { return gen.uniform(low, high); });
}

void fillNormal(const Tensor &tensor, double mean, double stddev, Generator &gen) {
  if (!(stddev >= 0)) throw RuntimeError("fillNormal", "needs stddev >= 0, got " + std::to_string(stddev));
  fillWith(tensor, "fillNormal", [&] { return gen.normal(mean, stddev); });
}

}  // namespace scanforge
