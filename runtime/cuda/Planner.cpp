#include "runtime/cuda/Planner.h"

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/CudaError.h"

namespace scanforge::cuda {

const char *strategyName(Strategy s) { return s == Strategy::Sequential ? "sequential" : "chunked"; }

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string shapes(const PlanRequest &r) {
  return "B=" + std::to_string(r.batch) + " T=" + std::to_string(r.steps) + " channels=" + std::to_string(r.channels);
}

}  // namespace

Plan plan(const PlanRequest &r) {
  if (r.batch < 1 || r.steps < 1 || r.channels < 1) throw CudaError("cannot plan a scan over empty shapes (" + shapes(r) + ")");
  if (r.batch > kMaxGridYZ)
    throw CudaError("batch " + std::to_string(r.batch) + " exceeds the grid limit of " + std::to_string(kMaxGridYZ) +
                    " (" + shapes(r) + "); split the batch");
  int64_t maxChunk = INT64_MAX;
  if (r.recomputeBytesPerStep > 0) {
    maxChunk = kSharedBudget / r.recomputeBytesPerStep;
    if (maxChunk < 1)
      throw CudaError("one step of recomputed state needs " + std::to_string(r.recomputeBytesPerStep) +
                      " bytes of shared memory per block, more than " + std::to_string(kSharedBudget) + " (" + shapes(r) +
                      "); use smaller register dimensions");
  }
  Plan p;
  int64_t threads = r.batch * r.channels, target = kThreadsPerSM * r.multiprocessors;
  p.strategy = r.strategy ? *r.strategy : (threads >= target || r.steps < 2 * kMinChunk) ? Strategy::Sequential : Strategy::Chunked;
  if (r.chunk) {
    if (*r.chunk < 1) throw CudaError("chunk length " + std::to_string(*r.chunk) + " is not positive (" + shapes(r) + ")");
    if (*r.chunk > maxChunk)
      throw CudaError("chunk length " + std::to_string(*r.chunk) + " exceeds the shared-memory bound of " +
                      std::to_string(maxChunk) + " steps (" + shapes(r) + ")");
    p.chunk = *r.chunk;
  } else if (p.strategy == Strategy::Sequential) {
    p.chunk = r.recomputeBytesPerStep > 0 ? std::min(kSequentialChunk, maxChunk) : r.steps;
  } else {
    p.chunk = std::clamp(cdiv(r.steps, cdiv(target, threads)), std::min(kMinChunk, maxChunk), maxChunk);
  }
  p.chunk = std::min(p.chunk, r.steps);
  p.chunks = cdiv(r.steps, p.chunk);
  if (p.strategy == Strategy::Chunked && p.chunks > kMaxGridYZ) {
    if (cdiv(r.steps, kMaxGridYZ) > maxChunk)
      throw CudaError("T=" + std::to_string(r.steps) + " needs chunks longer than the shared-memory bound of " +
                      std::to_string(maxChunk) + " steps (" + shapes(r) + ")");
    p.chunk = cdiv(r.steps, kMaxGridYZ);
    p.chunks = cdiv(r.steps, p.chunk);
  }
  return p;
}

}  // namespace scanforge::cuda
