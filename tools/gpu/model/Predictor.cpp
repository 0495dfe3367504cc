#include "tools/gpu/model/Predictor.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace scanforge::gpu {

KernelPrediction predictKernel(const DeviceSpec &d, const KernelSass &sass, const cuda::LaunchConfig &launch,
                               const KernelTraffic &traffic, unsigned chainHops) {
  KernelPrediction p;
  p.kernel = sass.kernel;
  try {
    p.occupancy = occupancy(d, {launch.block, sass.registers, launch.sharedBytes + sass.staticSharedBytes});
  } catch (const std::invalid_argument &e) {
    throw std::invalid_argument(sass.kernel + ": " + e.what());
  }
  p.blocks = uint64_t{launch.grid[0]} * launch.grid[1] * launch.grid[2];
  if (p.blocks == 0) throw std::invalid_argument(sass.kernel + ": an empty grid");
  const double warpsPerBlock = (launch.block + 31) / 32;
  const double blocksOnSm = std::ceil(static_cast<double>(p.blocks) / d.multiprocessors);  // the busiest SM
  const double resident = std::min<double>(p.occupancy.blocksPerSm, blocksOnSm);
  const double rounds = std::ceil(blocksOnSm / resident);
  p.waves = static_cast<double>(p.blocks) / (p.occupancy.blocksPerSm * d.multiprocessors);
  p.residentWarpsPerSm = static_cast<unsigned>(resident * warpsPerBlock);

  // The hot loop (or, without one, the whole body once) repeated as often as the traffic says:
  // the bytes the lanes moved over those one iteration moves, shared memory included (a loop that
  // reads recomputed states from shared memory moves few global bytes, and the
  // kernel's other global traffic, such as a chunk's carry, would otherwise count as iterations).
  const InstructionMix &body = sass.loop ? *sass.loop : sass.all;
  const double laneBytes = static_cast<double>(traffic.globalLaneBytes() + traffic.sharedLaneBytes());
  p.iterationsPerWarp = sass.loop && laneBytes > 0
                            ? laneBytes / (32.0 * (body.globalBytes() + body.sharedBytes)) /
                                  (static_cast<double>(p.blocks) * warpsPerBlock)
                            : 1.0;
  p.bytesMoved = static_cast<double>(traffic.bytesMoved());
  p.sectorsPerRequest = traffic.sectorsPerRequest();
  p.sectorEfficiency = traffic.sectorEfficiency();
  p.instructionsPerByte = sass.loopInstructionsPerByte();
  p.bytesInFlightPerSm = p.residentWarpsPerSm * 32.0 * body.globalLoadBytes;
  p.bytesInFlightNeeded = d.copyBandwidth / d.multiprocessors * d.memoryLatency;

  p.memorySeconds = p.bytesMoved / d.copyBandwidth;
  const double warpsPerScheduler = std::ceil(blocksOnSm * warpsPerBlock / d.schedulersPerSm);
  p.issueSeconds = warpsPerScheduler * p.iterationsPerWarp * body.instructions / d.clockHz;
  const double alu = body.instructions - body.mufu - body.control;
  // One memory latency per iteration (a ring's loads arrive an iteration later), or one per load
  // the iteration waits for in sequence.
  const double latencies = std::max(1u, body.loadWaits);
  const double chainCycles = latencies * d.memoryLatency * d.clockHz + alu * d.aluCycles + body.mufu * d.mufuCycles +
                             body.control * d.controlCycles;
  p.latencySeconds = rounds * p.iterationsPerWarp * chainCycles / d.clockHz;
  if (chainHops > 0) {
    // A tile's walks of its chunk (scan and rescan): its iterations at the dependent-chain pace.
    p.chainSeconds = chainHops * d.chainHop + p.iterationsPerWarp * chainCycles / d.clockHz;
    // Each tile's fixed cost on its SM (block start, ticket, carry wait and publish): the planner's
    // term, fitted to chunked kernels measured on an H200 (runtime/cuda/Planner.cpp).
    p.tileSeconds = static_cast<double>(p.blocks) * d.tileOverhead / d.multiprocessors;
  }
  p.overheadSeconds = d.launchOverhead;
  double slowest = std::max({p.memorySeconds, p.issueSeconds, p.latencySeconds, p.chainSeconds});
  p.bound = slowest == p.memorySeconds  ? "memory"
            : slowest == p.issueSeconds ? "issue"
            : slowest == p.chainSeconds ? "chain"
                                        : "latency";
  p.seconds = slowest + p.tileSeconds + p.overheadSeconds;
  return p;
}

KernelTraffic scaleTraffic(const KernelTraffic &traffic, double factor) {
  KernelTraffic scaled = traffic;
  auto times = [factor](uint64_t n) { return static_cast<uint64_t>(std::llround(static_cast<double>(n) * factor)); };
  for (InstructionTraffic &i : scaled.instructions) {
    i.requests = times(i.requests);
    i.sectors = times(i.sectors);
    i.dramSectors = times(i.dramSectors);
    i.laneBytes = times(i.laneBytes);
    i.wavefronts = times(i.wavefronts);
  }
  return scaled;
}

double callSeconds(const DeviceSpec &d, const std::vector<KernelPrediction> &kernels) {
  double seconds = static_cast<double>(d.l2Bytes) / d.copyBandwidth;
  for (const KernelPrediction &k : kernels) seconds += k.seconds;
  return seconds;
}

double fractionOfCopy(const DeviceSpec &d, double idealBytes, double seconds) {
  return idealBytes / seconds / d.copyBandwidth;
}

}  // namespace scanforge::gpu
