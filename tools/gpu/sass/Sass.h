// nvdisasm's text parsed into functions and instructions, and the hot loop of a kernel: the
// innermost of the loops (backward branches) that touch global memory, i.e. a scan's time loop.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace scanforge::gpu {

struct SassInstruction {
  std::string opcode;  // with modifiers: "LDG.E.EF.128", "MUFU.EX2", "BRA"
  std::string target;  // a branch's label (".L_x_80"), else empty
  // From the control bits of the encoding (nvdisasm -hex; Volta and later): the scoreboard a
  // variable-latency instruction (a load) signals when its result is written (-1: none), and the
  // scoreboards the instruction waits on before it issues. A wait on a scoreboard waits for every
  // instruction issued on it so far.
  int writeScoreboard = -1;
  unsigned waitMask = 0;
  bool predicated = false;  // "@P0 EXIT": runs only where its predicate holds
  // "mingru.cu:57": the source line it was compiled from, the outermost frame nvdisasm -gi shows
  // (a helper inlined into a kernel line shows that line); empty without line information.
  std::string site;

  std::string base() const { return opcode.substr(0, opcode.find('.')); }  // "LDG"
  bool globalLoad() const;   // LDG
  bool globalStore() const;  // STG, and global reductions/atomics count as stores
  bool sharedAccess() const; // LDS, STS
  unsigned accessBytes() const;  // of a memory instruction: 1, 2, 4, 8 or 16
};

struct SassFunction {
  std::string symbol;  // the mangled name
  std::vector<SassInstruction> instructions;
  std::map<std::string, size_t> labels;  // label -> index of the instruction that follows it
};

// Instructions [begin, end] (end is the backward branch).
struct SassLoop {
  size_t begin = 0, end = 0;
};

// nvdisasm -c -hex -gi text; without -hex the instructions have no scoreboards, without -gi no sites.
std::vector<SassFunction> parseSass(const std::string &nvdisasmText);

// A basic block and its place in the control flow, what the model needs to tell how often it
// runs: its immediate dominator (the last block every path to it passes), the innermost natural
// loop that holds it, and the memory latencies it waits for in sequence (as exposedLoadWaits
// counts them; a loop's header starts from the loads pending at its back edges).
struct SassBlock {
  size_t begin = 0, end = 0;  // instructions [begin, end)
  int dominator = -1;         // index of the immediate dominator; -1 for the entry
  int loop = -1;              // the header block of the innermost loop holding it; -1 for none
  unsigned loadWaits = 0;
};
std::vector<SassBlock> basicBlocks(const SassFunction &function);

// Memory latencies one iteration of `loop` waits for in sequence: the instructions that wait on a
// scoreboard a global load was issued on since the previous such wait (which also covered every
// load issued before it); the loadWaits of the blocks in it. Counted in a second pass over the
// function in which a loop's header starts from the loads pending at its back edge in the first,
// so that loads issued at the end of an iteration and waited for in the next one count. Loads
// issued a few steps ahead of their use still cost a latency per step when each step waits on
// their scoreboard; a batch of loads issued back to back before any use costs one.
unsigned exposedLoadWaits(const std::vector<SassBlock> &blocks, const SassLoop &loop);  // blocks: basicBlocks

// The innermost of the natural loops (by header, with every back edge to it: the loops basicBlocks
// places blocks in) whose body has a global load or store (one that stores before one that only
// loads, then the most global bytes), as the range from its header to its last back edge; nullopt
// when there is none. A branch to itself (the trap after EXIT) is no loop.
std::optional<SassLoop> hotLoop(const SassFunction &function);

}  // namespace scanforge::gpu
