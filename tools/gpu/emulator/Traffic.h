// What the concurrent emulator records about a kernel's memory traffic, per warp instruction: the
// input of the performance model (tools/gpu/model) and of `scanc --gpu-model`.
//
// A request is one warp-level execution of one load or store instruction by the warp's active
// lanes; its sectors are the distinct 32-byte segments of global memory those lanes touch (a fully
// coalesced 4-byte access by 32 lanes is 4 sectors, 128 bytes). Shared-memory wavefronts count the
// bank-conflict replays: a request whose lanes hit distinct words of one bank k times costs k.
//
// DRAM traffic is estimated from the sectors with one rule for caches: a sector that another warp
// of the launch touched first is served by L1 or L2 (a row every channel reads, the rest of a
// sector a neighbouring warp wrote); a sector only its own warp touched before is moved again (a
// chunk's rescan: whether it would still be in L2 depends on sizes the reduced run does not have).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scanforge::gpu {

// One load or store instruction of the kernel source.
struct InstructionTraffic {
  std::string site;            // "mingru.cu:57" (file and line of the kernel source)
  bool store = false;
  bool shared = false;         // shared memory (else global)
  unsigned bytesPerLane = 0;   // the widest access width seen: 4 (LDG.E), 8, 16 (LDG.E.128)
  uint64_t requests = 0;       // warp-level executions
  uint64_t sectors = 0;        // global: 32-byte sectors touched, summed over requests
  uint64_t dramSectors = 0;    // those not first touched by another warp (see above)
  uint64_t laneBytes = 0;      // bytes the active lanes asked for, summed over requests
  uint64_t wavefronts = 0;     // shared: bank-conflict replays, summed over requests (>= requests)
};

// Everything one kernel did over the launches recorded since the emulator's traffic was cleared.
struct KernelTraffic {
  std::string kernel;
  uint64_t launches = 0, blocks = 0, threads = 0;
  std::vector<InstructionTraffic> instructions;

  uint64_t requests(bool store, bool shared) const;
  uint64_t globalSectors() const;    // loads and stores
  uint64_t globalLaneBytes() const;  // what the lanes asked for
  uint64_t sharedLaneBytes() const;
  uint64_t dramSectors() const;
  uint64_t bytesMoved() const { return 32 * dramSectors(); }  // DRAM, by the rule above
  // Global sectors per request, and the ideal for the same lane bytes (1.0 = perfectly coalesced).
  double sectorsPerRequest() const;
  double sectorEfficiency() const;  // laneBytes / (32 * sectors)
  double sharedWavefrontsPerRequest() const;
};

}  // namespace scanforge::gpu
