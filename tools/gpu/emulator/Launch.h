// One kernel launch on the concurrent emulator.
//
// Every CUDA thread is a fiber. A bounded number of blocks is resident at once (as on a GPU:
// the kernel's occupancy of one SM unless the options say otherwise), dispatched in a seeded
// random order; the scheduler repeatedly picks a random resident block and a random warp of it
// and runs that warp's lanes one after another, each until it yields: at __syncthreads, at a
// warp collective (__syncwarp, __shfl_*_sync, __ballot_sync...), at a volatile or atomic
// access, or after a few dozen plain accesses. So block-to-block protocols (flags, atomics,
// fences) really interleave, and a warp's lanes cover the same stretch of code, from which the
// traffic recorder forms warp-level requests.
//
// Checked as it runs: every access lies in a device allocation, the block's shared memory
// (sized per launch, filled with NaN at block start), the thread's own stack or the library's
// static data; races (RaceDetector.h); collectives' masks against the lanes that call them; a
// state where no resident thread can move (all wait at barriers or collectives, or spin on
// flags nobody resident will set) is a deadlock. Each failure names the kernel, the block, the
// thread and the source line.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/DeviceBackend.h"
#include "tools/gpu/emulator/DeviceMemory.h"
#include "tools/gpu/emulator/Fiber.h"
#include "tools/gpu/emulator/KernelLibrary.h"
#include "tools/gpu/emulator/TrafficRecorder.h"

namespace scanforge::gpu {

struct LaunchOptions {
  uint64_t seed = 1;
  unsigned residentBlocks = 0;  // 0: the kernel's occupancy of one SM
  bool detectRaces = true;
  bool recordTraffic = true;
  std::optional<std::array<unsigned, 3>> onlyBlock;  // run this block alone (EmulatorOptions::onlyBlock)
};

// Stacks for emulated threads, kept between launches.
class FiberPool {
 public:
  Fiber *take();
  void give(Fiber *fiber) { free_.push_back(fiber); }

 private:
  std::vector<std::unique_ptr<Fiber>> all_;
  std::vector<Fiber *> free_;
};

// Per-instruction traffic of a launch is added to `traffic` (when recorded).
void runLaunch(const KernelLibrary &library, const std::string &kernel, const cuda::LaunchConfig &config, void **args,
               DeviceMemory &memory, FiberPool &fibers, const LaunchOptions &options,
               std::map<uintptr_t, PcTraffic> &traffic);

// Blocks of `threads` threads using `sharedBytes` of shared memory that one H100 SM holds at once.
unsigned residentBlocksPerSm(unsigned threads, size_t sharedBytes);

}  // namespace scanforge::gpu
