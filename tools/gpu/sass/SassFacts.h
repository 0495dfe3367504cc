// What the SASS of a kernel says about its speed: registers, spills and local memory (ptxas's
// report and cuobjdump -res-usage), load/store widths, MUFU/CALL/branch counts, and the hot loop's
// instructions per global byte. The performance model (tools/gpu/model) consumes these.
#pragma once

#include <compare>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/gpu/sass/Disassembler.h"
#include "tools/gpu/sass/Sass.h"

namespace scanforge::gpu {

// Static counts over a stretch of SASS (each instruction once).
struct InstructionMix {
  unsigned instructions = 0, mufu = 0, calls = 0, branches = 0, bssy = 0, localAccesses = 0;
  unsigned control = 0;  // BRA, BSSY, BSYNC, CALL, RET: branches and convergence barriers
  std::map<unsigned, unsigned> loadWidths, storeWidths;  // global access bytes -> instructions
  unsigned globalLoadBytes = 0, globalStoreBytes = 0;    // per thread, each instruction once
  unsigned sharedBytes = 0;                              // LDS and STS, per thread
  unsigned loadWaits = 0;  // of a hot loop's iteration: exposedLoadWaits (memory latencies in sequence)

  unsigned globalBytes() const { return globalLoadBytes + globalStoreBytes; }
};
InstructionMix instructionMix(const SassFunction &function, size_t begin, size_t end);  // [begin, end)

// A memory instruction's source line and kind: what the emulator's traffic is recorded by
// (tools/gpu/emulator/Traffic.h).
struct MemorySite {
  std::string site;  // "mingru.cu:57"
  bool store = false, shared = false;
  auto operator<=>(const MemorySite &) const = default;
};

// A basic block of a kernel (SassBlock) with its instruction mix (loadWaits: its own) and its
// memory instructions by source line, from which the model tells how often it runs. Memory
// instructions whose line is not a kernel's own (an access inside a helper inlined two calls deep:
// nvdisasm -gi shows one caller) have no site here.
struct BlockFacts {
  InstructionMix mix;
  int dominator = -1;  // index of the immediate dominator; -1 for the entry
  int loop = -1;       // the header block of the innermost loop holding it; -1 for none
  std::map<MemorySite, unsigned> sites;  // memory instructions per site
};

struct KernelSass {
  std::string kernel, symbol;  // "fwd1<16>", "_Z4fwd1ILi16EEvPKfS1_Pfiii"
  unsigned registers = 0, stackBytes = 0, localBytes = 0, staticSharedBytes = 0;
  unsigned spillStoreBytes = 0, spillLoadBytes = 0;
  InstructionMix all;
  std::optional<InstructionMix> loop;  // one iteration of the hot loop
  std::vector<BlockFacts> blocks;      // in layout order; the entry first

  // Warp instructions per byte a warp moves in one iteration of the hot loop (0 without one).
  double loopInstructionsPerByte() const;
};

// Reads ptxas's -v report and cuobjdump's -res-usage for `symbol` into `facts`; throws
// cuda::CudaError naming the kernel when either lacks it.
void readResources(const std::string &ptxasLog, const std::string &resUsage, KernelSass &facts);

// Compiles `source` with NVRTC for `arch` (cubin, ptxas -v, line information) and reads the SASS facts of each of
// `kernels` (names or template instances, e.g. "fwd1<16>"). Throws cuda::CudaError naming the
// file and the kernel on failure.
std::vector<KernelSass> sassFacts(const std::string &source, const std::string &file, const std::string &arch,
                                  const std::vector<std::string> &options, const std::vector<std::string> &kernels,
                                  const BinaryTools &tools);

}  // namespace scanforge::gpu
