#include "tools/scan-bench/RowOrder.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <vector>

namespace scanforge::bench {
namespace {

constexpr int64_t kBlock = 16;  // floats summed side by side: one vector's worth per step
volatile float sink;

// The sum of every element, rows in one order and each row's blocks in one order. noinline and the
// volatile sink keep the compiler from dropping or merging the reads.
__attribute__((noinline)) float readRows(const float *data, int64_t rows, int64_t channels, bool rowsDown,
                                         bool withinDown) {
  float acc[kBlock] = {};
  const int64_t blocks = channels / kBlock;
  for (int64_t i = 0; i < rows; ++i) {
    const float *row = data + (rowsDown ? rows - 1 - i : i) * channels;
    for (int64_t j = 0; j < blocks; ++j) {
      const float *block = row + (withinDown ? blocks - 1 - j : j) * kBlock;
      for (int64_t k = 0; k < kBlock; ++k) acc[k] += block[k];
    }
  }
  float sum = 0;
  for (float a : acc) sum += a;
  return sum;
}

}  // namespace

void rowOrderRates(int64_t channels, int repeats) {
  if (channels < kBlock || channels % kBlock != 0)
    throw std::invalid_argument("--row-order reads rows of whole blocks of 16 floats: -D " + std::to_string(channels) +
                                " is not a multiple of 16");
  const int64_t rows = (int64_t{256} << 20) / (4 * channels);
  std::vector<float> data(static_cast<size_t>(rows * channels), 1.0f);
  std::printf("one thread reads %lld rows of %lld floats (256 MiB), best of %d reads per order\n\n",
              static_cast<long long>(rows), static_cast<long long>(channels), repeats);
  std::printf("| rows | within a row | GB/s |\n|---|---|---|\n");
  for (bool rowsDown : {false, true})
    for (bool withinDown : {false, true}) {
      double best = 1e300;
      for (int r = 0; r < std::max(1, repeats); ++r) {
        auto start = std::chrono::steady_clock::now();
        sink = readRows(data.data(), rows, channels, rowsDown, withinDown);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      std::printf("| %s | %s | %.1f |\n", rowsDown ? "descending" : "ascending", withinDown ? "descending" : "ascending",
                  static_cast<double>(rows * channels * 4) / best / 1e9);
    }
}

}  // namespace scanforge::bench
