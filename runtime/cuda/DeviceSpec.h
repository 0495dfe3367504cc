// The GPUs the performance models know, with every limit and constant they use: defined here once
// (the planner's cost model, and in tools/gpu the emulator's resident blocks, the occupancy, the
// predictor and `scanc --gpu-model` read them).
#pragma once

#include <cstddef>
#include <string>

namespace scanforge::cuda {

struct DeviceSpec {
  std::string arch, name;
  // Occupancy limits per SM.
  unsigned multiprocessors;
  unsigned registersPerSm, registerUnit;  // registers are allocated per warp in units of registerUnit
  unsigned maxRegistersPerThread, threadsPerSm, blocksPerSm;
  size_t sharedPerSm, sharedReservedPerBlock, sharedPerBlock;
  // Speed.
  unsigned schedulersPerSm;   // each issues one warp instruction per cycle
  double clockHz;
  double copyBandwidth;       // bytes/s of a grid-stride float4 copy (read + write)
  double memoryLatency;       // s, a global load under load, issue to use
  // Cycles one warp waits before its next dependent instruction, by kind (a warp alone on its
  // scheduler issues no faster; several warps hide it).
  double aluCycles, mufuCycles, controlCycles;
  double launchOverhead;      // s per kernel launch (event-timed)
  double chainHop;            // s from one block's flag store to the spinning block's next step
  double tileOverhead;        // s of one SM per chunked tile (block start, ticket, carry, publish)
  size_t l2Bytes;             // a timed call after an L2 flush first writes back this much

  // Blocks that fit one SM's shared memory, each with `bytesPerBlock` (static + dynamic) and the
  // driver's reservation: the occupancy's shared-memory limit, which the planner also applies.
  unsigned blocksBySharedMemory(size_t bytesPerBlock) const {
    return static_cast<unsigned>(sharedPerSm / (bytesPerBlock + sharedReservedPerBlock));
  }
};

// The H100 SXM (sm_90): 132 SMs, 65536 registers, 2048 threads, 32 blocks and 228 KiB of shared
// memory per SM (1 KiB reserved per block, 227 KiB at most per block), 4 schedulers at 1.98 GHz,
// a copy bandwidth of 2.85 TB/s measured on an H100, 2026-11-22.
const DeviceSpec &h100();

// The H200 SXM: an H100's SMs with HBM3e, a copy bandwidth of 3.87 TB/s measured on H200s lent
// here (2026-11-25 to 27) and 60 MB of L2; its memory latency is assumed the H100's. The GPU most
// measurements here were made on, so that predictions and measurements compare on one device.
const DeviceSpec &h200();

// The spec for `arch`; throws std::invalid_argument naming the known architectures.
const DeviceSpec &deviceSpec(const std::string &arch);
// The spec named "h100" or "h200"; throws std::invalid_argument naming the known ones.
const DeviceSpec &deviceSpecNamed(const std::string &name);

}  // namespace scanforge::cuda
