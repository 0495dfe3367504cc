#include "runtime/cuda/Planner.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/DeviceSpec.h"
#include "runtime/cuda/PackageFormat.h"

namespace scanforge::cuda {

const char *strategyName(Strategy s) { return s == Strategy::Sequential ? "sequential" : "chunked"; }

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string shapes(const PlanRequest &r) {
  return "B=" + std::to_string(r.batch) + " T=" + std::to_string(r.steps) + " channels=" + std::to_string(r.channels);
}

}  // namespace

int64_t chainHops(const Plan &p, int chainGroup) { return p.strategy == Strategy::Chunked ? cdiv(p.chunks, chainGroup) : 0; }

PlanCost predictPlan(const PlanRequest &r, const Plan &p) {
  const DeviceSpec &d = h100();
  double sms = r.multiprocessors, chunked = p.strategy == Strategy::Chunked;
  double channels = static_cast<double>(r.batch) * static_cast<double>(r.channels);
  double threads = channels * (chunked ? static_cast<double>(p.chunks) : 1.0);
  double steps = static_cast<double>(r.steps), chunk = static_cast<double>(p.chunk);
  // Kernels are bounded to at least 4 blocks per SM; assume half the SM's threads resident, fewer
  // where a block's recomputed states (L steps of them in shared memory) leave room for fewer blocks.
  double residentPerSm = d.threadsPerSm / 2.0;
  if (r.recomputeBytesPerStep > 0) {
    size_t blockBytes = static_cast<size_t>(r.recomputeBytesPerStep * p.chunk);
    residentPerSm = std::min(residentPerSm, static_cast<double>(d.blocksBySharedMemory(blockBytes) * r.blockThreads));
  }
  double resident = std::min(threads, sms * residentPerSm);
  // One step of a latency-bound thread: its share of a batch's load latency, then its own instructions.
  double batch = chunked ? kChunkLoadBatchSteps : kLoadBatchSteps;
  double hop = d.memoryLatency / batch + r.stepInstructions * d.aluCycles / d.clockHz;
  PlanCost c;
  c.bytes = channels * steps * (r.readBytesPerStep + r.writtenBytesPerStep);
  c.bytes += channels * (chunked ? static_cast<double>(p.chunks) : 1.0) * 2 * r.partialSumBytes;
  if (chunked && resident * chunk * r.readBytesPerStep > static_cast<double>(d.l2Bytes) / 2)
    c.bytes += channels * steps * r.readBytesPerStep;  // the rescan misses L2
  double inFlight = resident * batch * r.readBytesPerStep;
  c.bandwidth = std::min(d.copyBandwidth * sms / d.multiprocessors, inFlight / d.memoryLatency);
  // Chunked: a tile's scan and rescan, a hop per group of chunks, and a group's aggregates read.
  double hops = static_cast<double>(chainHops(p, r.chainGroup));
  c.criticalPath = chunked ? 2 * chunk * hop + hops * d.chainHop + d.memoryLatency : steps * hop;
  // The walks themselves: threads beyond those resident wait for a later wave.
  c.walks = std::ceil(threads / resident) * (chunked ? 2 * chunk : steps) * hop;
  // Chunked: each tile is a fixed cost on one SM, and the traffic ends with the last tiles' walks of
  // their chunk (scan and rescan), which overlap no other tile's; the critical path holds a walk
  // already, so the drain extends the traffic's time only.
  double streaming = c.bytes / c.bandwidth;
  if (chunked) {
    c.tiles = static_cast<double>(cdiv(r.channels, r.blockThreads) * r.batch * p.chunks * r.passes);
    streaming += 2 * chunk * hop;
  }
  c.seconds = std::max({streaming, c.criticalPath, c.walks}) + c.tiles * d.tileOverhead / sms + d.launchOverhead;
  return c;
}

Plan plan(const PlanRequest &r) {
  if (r.batch < 1 || r.steps < 1 || r.channels < 1) throw CudaError("cannot plan a scan over empty shapes (" + shapes(r) + ")");
  int64_t maxChunk = INT64_MAX;
  if (r.recomputeBytesPerStep > 0) {
    maxChunk = kSharedBudget / r.recomputeBytesPerStep;
    if (maxChunk < 1)
      throw PlanRefused("one step of recomputed state needs " + std::to_string(r.recomputeBytesPerStep) +
                      " bytes of shared memory per block, more than " + std::to_string(kSharedBudget) + " (" + shapes(r) +
                      "); use smaller register dimensions");
  }
  auto withChunk = [&](Strategy s, int64_t chunk) {
    Plan p{s, std::min(chunk, r.steps), 1};
    p.chunks = cdiv(r.steps, p.chunk);
    return p;
  };
  if (r.chunk) {
    if (*r.chunk < 1) throw CudaError("chunk length " + std::to_string(*r.chunk) + " is not positive (" + shapes(r) + ")");
    if (*r.chunk > maxChunk)
      throw PlanRefused("chunk length " + std::to_string(*r.chunk) + " exceeds the shared-memory bound of " +
                      std::to_string(maxChunk) + " steps (" + shapes(r) + ")");
  }
  Plan sequential = withChunk(Strategy::Sequential, r.chunk ? *r.chunk
                                                    : r.recomputeBytesPerStep > 0 ? std::min(kSequentialChunk, maxChunk)
                                                                                  : r.steps);
  if (r.strategy == Strategy::Sequential) return sequential;
  // The fewest chunks the grid allows, each no longer than the shared-memory bound.
  int64_t longest = std::min(maxChunk, r.steps);
  if (cdiv(r.steps, longest) > r.maxGridYZ) {
    if (cdiv(r.steps, r.maxGridYZ) > maxChunk)
      throw PlanRefused("T=" + std::to_string(r.steps) + " needs chunks longer than the shared-memory bound of " +
                      std::to_string(maxChunk) + " steps (" + shapes(r) + ")");
  }
  int64_t shortest = std::max(std::min(kMinChunk, longest), cdiv(r.steps, r.maxGridYZ));
  if (r.chunk) return withChunk(Strategy::Chunked, std::max(*r.chunk, cdiv(r.steps, r.maxGridYZ)));
  // Candidates: powers of two from the shortest chunk, and the longest chunk that still splits T.
  std::optional<Plan> best;
  double bestSeconds = 0;
  auto consider = [&](int64_t chunk) {
    Plan p = withChunk(Strategy::Chunked, chunk);
    if (p.chunks < 2 && !r.strategy) return;
    double t = predictPlan(r, p).seconds;
    if (!best || t < bestSeconds) best = p, bestSeconds = t;
  };
  for (int64_t chunk = shortest; chunk <= longest; chunk *= 2) consider(chunk);
  consider(longest);
  if (r.strategy == Strategy::Chunked) return best ? *best : withChunk(Strategy::Chunked, longest);
  if (!best || bestSeconds > 0.9 * predictPlan(r, sequential).seconds) return sequential;
  return *best;
}

}  // namespace scanforge::cuda
