// Occupancy by hand with the H100's limits: each of threads, blocks, registers and shared memory
// can be the one that binds, and launches that cannot run are refused with the reason.
#include <gtest/gtest.h>

#include <stdexcept>

#include "tools/gpu/emulator/Launch.h"
#include "tools/gpu/model/Occupancy.h"

namespace scanforge::gpu {
namespace {

TEST(Occupancy, EachLimitCanBind) {
  // 56 registers: 1792 per warp = 7 units of 256; 65536 / 1792 = 36 warps = 9 blocks of 4 warps.
  Occupancy regs = occupancy(h100(), {128, 56, 0});
  EXPECT_EQ(regs.byRegisters, 9u);
  EXPECT_EQ(regs.byThreads, 16u);
  EXPECT_EQ(regs.blocksPerSm, 9u);
  EXPECT_STREQ(regs.limitedBy, "registers");
  EXPECT_EQ(regs.warpsPerSm(128), 36u);
  // 88 registers: 2816 per warp = 11 units; 23 warps -> 5 blocks of 4.
  EXPECT_EQ(occupancy(h100(), {128, 88, 0}).blocksPerSm, 5u);
  // 33 registers round up to 40 per lane (1280 per warp = 5 units): 51 warps, 12 blocks of 4.
  EXPECT_EQ(occupancy(h100(), {128, 33, 0}).blocksPerSm, 12u);

  Occupancy threads = occupancy(h100(), {256, 32, 0});
  EXPECT_EQ(threads.blocksPerSm, 8u);
  EXPECT_STREQ(threads.limitedBy, "threads");

  Occupancy blocks = occupancy(h100(), {32, 16, 0});
  EXPECT_EQ(blocks.blocksPerSm, 32u);
  EXPECT_STREQ(blocks.limitedBy, "blocks");

  // 48 KiB + 1 KiB reserved per block: 228 / 49 = 4 blocks.
  Occupancy shared = occupancy(h100(), {128, 32, 48 * 1024});
  EXPECT_EQ(shared.blocksPerSm, 4u);
  EXPECT_STREQ(shared.limitedBy, "shared memory");
  EXPECT_EQ(occupancy(h100(), {64, 0, 227 * 1024}).blocksPerSm, 1u);
}

TEST(Occupancy, RefusesWhatCannotRun) {
  EXPECT_THROW(occupancy(h100(), {0, 32, 0}), std::invalid_argument);
  EXPECT_THROW(occupancy(h100(), {1025, 32, 0}), std::invalid_argument);
  EXPECT_THROW(occupancy(h100(), {128, 256, 0}), std::invalid_argument);
  EXPECT_THROW(occupancy(h100(), {128, 32, 227 * 1024 + 1}), std::invalid_argument);
  try {
    occupancy(h100(), {1024, 255, 0});  // 255 x 1024 registers > 65536
    FAIL() << "a block that does not fit one SM was accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "a block of 1024 threads with 255 registers each does not fit one SM's 65536 registers");
  }
  EXPECT_THROW(deviceSpec("sm_80"), std::invalid_argument);
  EXPECT_EQ(&deviceSpec("sm_90"), &h100());
}

TEST(Occupancy, TheEmulatorKeepsAsManyBlocksResident) {
  EXPECT_EQ(residentBlocksPerSm(128, 0), 16u);
  EXPECT_EQ(residentBlocksPerSm(32, 0), 32u);
  EXPECT_EQ(residentBlocksPerSm(128, 48 * 1024), 4u);
}

}  // namespace
}  // namespace scanforge::gpu
