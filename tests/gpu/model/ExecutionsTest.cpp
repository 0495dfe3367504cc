// How often the model runs each basic block, on hand-built blocks and traffic: a loop's blocks by
// their lines' requests pooled over the loop (ptxas attributing loads to a neighbouring line of the
// batch changes nothing, nor ptxas moving all of a line's loads to its neighbours), its header
// without accesses as its body, the code after the loop once, a
// chunk's partial batch never when the run never reached its lines, and an error for SASS whose
// memory instructions have no site the traffic knows.
#include <gtest/gtest.h>

#include <stdexcept>

#include "tools/gpu/model/Executions.h"

namespace scanforge::gpu {
namespace {

MemorySite load(unsigned line) { return {"k.cu:" + std::to_string(line), false, false}; }
MemorySite store(unsigned line) { return {"k.cu:" + std::to_string(line), true, false}; }

// entry (a checkpoint load) -> header -> body (16 steps: 16 loads of line 1 and 16 of line 5, of
// which ptxas attributed 8 to line 1; its last step's store behind a branch, block 6) -> after the
// loop -> partial batch -> its tail.
KernelSass chunkKernel() {
  KernelSass s;
  s.kernel = "k";
  auto block = [](int dominator, int loop, std::map<MemorySite, unsigned> sites) {
    BlockFacts b;
    b.dominator = dominator;
    b.loop = loop;
    b.sites = std::move(sites);
    return b;
  };
  s.blocks = {block(-1, -1, {{load(9), 1}}),
              block(0, 1, {}),
              block(1, 1, {{load(1), 24}, {load(5), 6}, {store(2), 15}}),
              block(1, -1, {}),
              block(3, -1, {{load(3), 16}, {store(4), 16}}),
              block(4, -1, {}),
              block(2, 1, {{load(5), 2}, {store(2), 1}})};
  return s;
}

InstructionTraffic requests(const MemorySite &site, uint64_t n) {
  InstructionTraffic t;
  t.site = site.site;
  t.store = site.store;
  t.requests = n;
  return t;
}

TEST(Executions, BlocksRunAsTheirLinesTrafficSays) {
  const double warps = 64;
  KernelTraffic t;
  t.instructions = {requests(load(9), 64), requests(load(1), 64 * 16 * 40), requests(load(5), 64 * 16 * 40),
                    requests(store(2), 64 * 16 * 40)};
  std::vector<double> runs = blockExecutions(chunkKernel(), t, warps);
  EXPECT_EQ(runs, (std::vector<double>{1, 40, 40, 1, 0, 0, 40}));  // the partial batch never ran

  // A chunk length that is not whole batches: the partial batch runs once per warp, its tail too.
  t.instructions.push_back(requests(load(3), 64 * 15));
  t.instructions.push_back(requests(store(4), 64 * 15));
  runs = blockExecutions(chunkKernel(), t, warps);
  EXPECT_EQ(runs[4], 1);
  EXPECT_EQ(runs[5], 1);
}

// A batch of 2 loads at line 11, 4 at line 12 and 2 at line 13, run 10 times per warp, where ptxas
// put all of line 12's loads on its neighbours (5 instructions at line 11, 3 at line 13): line 12's
// requests still count for the loop, which would seem to run 5 times without them.
TEST(Executions, ALineWithoutInstructionsCountsForTheNearestLinesLoop) {
  KernelSass s;
  s.kernel = "k";
  BlockFacts entry, body;
  entry.sites = {{load(1), 1}};
  body.dominator = 0;
  body.loop = 1;
  body.sites = {{load(11), 5}, {load(13), 3}};
  s.blocks = {entry, body};
  const double warps = 4;
  KernelTraffic t;
  t.instructions = {requests(load(1), 4), requests(load(11), 4 * 10 * 2), requests(load(12), 4 * 10 * 4),
                    requests(load(13), 4 * 10 * 2)};
  EXPECT_EQ(blockExecutions(s, t, warps), (std::vector<double>{1, 10}));
}

TEST(Executions, SassWithoutTheTrafficsLinesIsAnError) {
  KernelTraffic t;
  t.instructions = {requests({"other.cu:1", false, false}, 10)};
  try {
    blockExecutions(chunkKernel(), t, 1);
    FAIL() << "SASS without any known site was accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("k:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line information"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace scanforge::gpu
