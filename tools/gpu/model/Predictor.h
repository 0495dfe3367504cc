// The performance model: a kernel's predicted time on a GPU from what the instruments saw, with no
// GPU. Inputs: the SASS facts (tools/gpu/sass), the launch, and the memory traffic the concurrent
// emulator recorded (tools/gpu/emulator/Traffic.h), scaled to the shape predicted.
//
// time = max(memory, issue, latency, chain) + launch overhead, per kernel:
//   memory   bytes moved (32-byte sectors, so poor coalescing costs) at the copy bandwidth;
//   issue    the busiest SM's warp instructions, one per scheduler and cycle: each basic block
//            of the SASS as often as the emulated traffic at its source lines says (Executions.h);
//   latency  each warp runs its blocks as a dependent chain: a memory latency per load it waits
//            for in sequence (SASS loadWaits) + each instruction's dependent-issue cycles (Little's
//            law: an SM moves its warps' bytes in flight once per such round trip).
//   chain    a chunked kernel's carry, passed from tile to tile: a hop per group of chunks, plus
//            a tile's scan and rescan of its chunk.
// A call (a timed forward or backward) adds the write-back of a dirty L2, as after a flush.
#pragma once

#include <string>

#include "runtime/cuda/DeviceBackend.h"
#include "tools/gpu/emulator/Traffic.h"
#include "tools/gpu/model/Occupancy.h"
#include "tools/gpu/sass/SassFacts.h"

namespace scanforge::gpu {

struct KernelPrediction {
  std::string kernel;
  Occupancy occupancy;
  uint64_t blocks = 0;
  double waves = 0;                  // blocks / (blocks per SM x SMs)
  unsigned residentWarpsPerSm = 0;   // on the busiest SM
  double instructionsPerWarp = 0;    // warp instructions each warp issues, every block counted
  double bytesInFlightPerSm = 0;     // loads of one iteration of the resident warps
  double bytesInFlightNeeded = 0;    // copy bandwidth per SM x memory latency
  double bytesMoved = 0, sectorsPerRequest = 0, sectorEfficiency = 0, instructionsPerByte = 0;
  double memorySeconds = 0, issueSeconds = 0, latencySeconds = 0, chainSeconds = 0, overheadSeconds = 0;
  double tileSeconds = 0;  // a chunked kernel's tiles, each a fixed cost on its SM (DeviceSpec::tileOverhead)
  double seconds = 0;
  const char *bound = "";  // "memory", "issue", "latency" or "chain"
};

// `traffic` is the kernel's traffic at the predicted shape (see scaleTraffic); throws
// std::invalid_argument naming the kernel when the launch cannot run or the traffic names none of
// the lines of its SASS (blockExecutions).
// `chainHops`: a chunked kernel's carry passes from tile to tile that many times in sequence (its
// groups of chunks); the chain time is that many hops plus one tile's own chain, and
// every block (tile) adds DeviceSpec::tileOverhead to its SM's time.
KernelPrediction predictKernel(const DeviceSpec &device, const KernelSass &sass, const cuda::LaunchConfig &launch,
                               const KernelTraffic &traffic, unsigned chainHops = 0);

// The traffic of a reduced shape times `factor` (requests, sectors, lane bytes, wavefronts): for
// kernels whose bytes per element do not depend on the shape, the full shape's traffic.
KernelTraffic scaleTraffic(const KernelTraffic &traffic, double factor);

// Seconds of a call of these kernels (after an L2 flush), and the fraction of the copy bandwidth
// that moving `idealBytes` in that time is.
double callSeconds(const DeviceSpec &device, const std::vector<KernelPrediction> &kernels);
double fractionOfCopy(const DeviceSpec &device, double idealBytes, double seconds);

}  // namespace scanforge::gpu
