// Picks the strategy and chunk length for a recurrence at given shapes.
//
// Rule (docs/cuda.md): a GPU wants about 1024 resident threads per SM to hide memory latency.
//   * B * channels >= 1024 * SMs, or T < 32: sequential, one thread walks all of t.
//   * otherwise chunked: enough chunks to reach 1024 * SMs threads, each at least 16 steps long.
// The chunk length L is also the checkpoint interval. A backward that recomputes forward states
// holds one chunk of them per thread in shared memory, so L <= 48 KiB / (bytes per step of a
// block); the sequential strategy then uses L = min(64, that bound), otherwise L = T.
// Grid limits: B <= 65535 and, chunked, T / L <= 65535.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace scanforge::cuda {

enum class Strategy { Sequential, Chunked };
const char *strategyName(Strategy s);

struct Plan {
  Strategy strategy = Strategy::Sequential;
  int64_t chunk = 1;   // L
  int64_t chunks = 1;  // NC = ceil(T / L)
};

struct PlanRequest {
  int64_t batch = 1, steps = 1, channels = 1;
  int64_t recomputeBytesPerStep = 0;  // shared memory per chunk step of one block; 0: none
  int multiprocessors = 1;
  // Forced choices (tests, benchmarks); the chunk must still fit the shared-memory bound.
  std::optional<Strategy> strategy;
  std::optional<int64_t> chunk;
};

constexpr int64_t kThreadsPerSM = 1024;
constexpr int64_t kMinChunk = 16;
constexpr int64_t kSequentialChunk = 64;
constexpr int64_t kSharedBudget = 48 * 1024;
constexpr int64_t kMaxGridYZ = 65535;

// Throws CudaError, naming the shapes, when no plan fits the limits.
Plan plan(const PlanRequest &request);

}  // namespace scanforge::cuda
