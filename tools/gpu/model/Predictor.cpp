#include "tools/gpu/model/Predictor.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "tools/gpu/model/Executions.h"

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

  // Every block of the SASS as often as the traffic at its source lines says (Executions.h): the
  // warp instructions a warp issues, and its dependent chain (a load wait is a memory latency).
  const double warps = static_cast<double>(p.blocks) * warpsPerBlock;
  const std::vector<double> runs = blockExecutions(sass, traffic, warps);
  double chainCycles = 0;
  p.instructionsPerWarp = 0;
  for (size_t b = 0; b < runs.size(); ++b) {
    const InstructionMix &mix = sass.blocks[b].mix;
    const double alu = mix.instructions - mix.mufu - mix.control;
    p.instructionsPerWarp += runs[b] * mix.instructions;
    chainCycles += runs[b] * (mix.loadWaits * d.memoryLatency * d.clockHz + alu * d.aluCycles + mix.mufu * d.mufuCycles +
                              mix.control * d.controlCycles);
  }
  p.bytesMoved = static_cast<double>(traffic.bytesMoved());
  p.sectorsPerRequest = traffic.sectorsPerRequest();
  p.sectorEfficiency = traffic.sectorEfficiency();
  p.instructionsPerByte = sass.loopInstructionsPerByte();
  p.bytesInFlightPerSm = p.residentWarpsPerSm * 32.0 * (sass.loop ? *sass.loop : sass.all).globalLoadBytes;
  p.bytesInFlightNeeded = d.copyBandwidth / d.multiprocessors * d.memoryLatency;

  p.memorySeconds = p.bytesMoved / d.copyBandwidth;
  const double warpsPerScheduler = std::ceil(blocksOnSm * warpsPerBlock / d.schedulersPerSm);
  p.issueSeconds = warpsPerScheduler * p.instructionsPerWarp / d.clockHz;
  // Each warp's chain runs alongside the other resident warps'; rounds of resident blocks in sequence.
  p.latencySeconds = rounds * chainCycles / d.clockHz;
  if (chainHops > 0) {
    // The carry's hops in sequence, and a tile's own walks of its chunk at the dependent-chain pace.
    p.chainSeconds = chainHops * d.chainHop + chainCycles / d.clockHz;
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
