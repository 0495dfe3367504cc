// The SASS reader on hand-written nvdisasm text: functions, predicates, labels, access widths, the
// hot loop (innermost of the loops that touch global memory, one that stores before one that only
// reads, not the trap after EXIT), control
// bits (scoreboards) and the load waits of a loop, and the resource reports of ptxas -v and
// cuobjdump -res-usage.
#include <gtest/gtest.h>

#include "runtime/cuda/CudaError.h"
#include "tools/gpu/sass/SassFacts.h"

namespace scanforge::gpu {
namespace {

// Two functions; `k` has an outer time loop (.L_x_1) with an inner loop without global accesses
// (.L_x_2), and a self-branch trap after EXIT.
const char *kSass = R"(	.target	sm_90
//--------------------- .text.k --------------------------
	.section	.text.k,"ax",@progbits
k:
.text.k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDG.E.EF.128 R4, desc[UR4][R2.64] ;
        /*0020*/               @!P0 LDG.E R8, desc[UR4][R6.64] ;
.L_x_2:
        /*0030*/                   MUFU.EX2 R9, R9 ;
        /*0040*/                   FADD R9, R9, 1 ;
        /*0050*/               @P1 BRA `(.L_x_2) ;
        /*0060*/                   BSSY B0, `(.L_x_3) ;
        /*0070*/                   CALL.REL.NOINC `($k$__internal_fdiv) ;
        /*0080*/                   BSYNC B0 ;
.L_x_3:
        /*0090*/                   STG.E.64 desc[UR4][R2.64], R4 ;
        /*00a0*/               @P0 BRA `(.L_x_1) ;
        /*00b0*/                   EXIT ;
.L_x_4:
        /*00c0*/                   BRA `(.L_x_4);
//--------------------- .text.copy --------------------------
copy:
        /*0000*/                   STL [R1], R0 ;
        /*0010*/                   EXIT ;
)";

TEST(Sass, ParsesFunctionsAndFindsTheTimeLoop) {
  std::vector<SassFunction> fns = parseSass(kSass);
  ASSERT_EQ(fns.size(), 2u);
  const SassFunction &k = fns[0];
  EXPECT_EQ(k.symbol, "k");
  ASSERT_EQ(k.instructions.size(), 13u);
  EXPECT_EQ(k.instructions[2].opcode, "LDG.E");  // the predicate is not the opcode
  EXPECT_EQ(k.instructions[1].accessBytes(), 16u);
  EXPECT_EQ(k.instructions[9].accessBytes(), 8u);
  EXPECT_EQ(k.instructions[5].target, ".L_x_2");
  EXPECT_EQ(k.labels.at(".L_x_1"), 1u);

  std::optional<SassLoop> loop = hotLoop(k);
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->begin, 1u);  // the time loop, not the inner loop without global accesses
  EXPECT_EQ(loop->end, 10u);
  InstructionMix body = instructionMix(k, loop->begin, loop->end + 1);
  EXPECT_EQ(body.instructions, 10u);
  EXPECT_EQ(body.mufu, 1u);
  EXPECT_EQ(body.calls, 1u);
  EXPECT_EQ(body.branches, 2u);
  EXPECT_EQ(body.bssy, 1u);
  EXPECT_EQ(body.control, 5u);  // 2 BRA, BSSY, CALL, BSYNC
  EXPECT_EQ(body.globalLoadBytes, 20u);
  EXPECT_EQ(body.globalStoreBytes, 8u);
  EXPECT_EQ(body.loadWidths, (std::map<unsigned, unsigned>{{4, 1}, {16, 1}}));
  EXPECT_EQ(body.storeWidths, (std::map<unsigned, unsigned>{{8, 1}}));

  EXPECT_EQ(k.instructions[1].writeScoreboard, -1);  // text without -hex: no control bits
  EXPECT_EQ(k.instructions[3].waitMask, 0u);

  EXPECT_FALSE(hotLoop(fns[1]));
  EXPECT_EQ(instructionMix(fns[1], 0, fns[1].instructions.size()).localAccesses, 1u);
}

// A chunked scan kernel: a carry loop that only reads (.L_x_1: the aggregates of the chunks before,
// 32 bytes per iteration) beside the time loop that stores its outputs (.L_x_2: 8 bytes, and 20
// bytes of shared memory, as a recomputing backward reads its states). The storing loop is the hot
// loop.
const char *kTwoLoopsSass = R"(	.target	sm_90
//--------------------- .text.tile --------------------------
.L_x_1:
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0010*/                   LDG.E.128 R8, desc[UR4][R12.64] ;
        /*0020*/               @P0 BRA `(.L_x_1) ;
.L_x_2:
        /*0030*/                   LDG.E R14, desc[UR4][R6.64] ;
        /*0040*/                   LDS.128 R16, [R20] ;
        /*0050*/                   STS [R21], R14 ;
        /*0060*/                   STG.E desc[UR4][R4.64], R14 ;
        /*0070*/               @P1 BRA `(.L_x_2) ;
        /*0080*/                   EXIT ;
)";

TEST(Sass, TheHotLoopIsTheOneThatStores) {
  std::vector<SassFunction> fns = parseSass(kTwoLoopsSass);
  ASSERT_EQ(fns.size(), 1u);
  std::optional<SassLoop> loop = hotLoop(fns[0]);
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->begin, 3u);
  EXPECT_EQ(loop->end, 7u);
  InstructionMix body = instructionMix(fns[0], loop->begin, loop->end + 1);
  EXPECT_EQ(body.globalBytes(), 8u);
  EXPECT_EQ(body.sharedBytes, 20u);  // LDS.128 and STS
}

// A loop with two back edges to its header (a step that may end early, as `continue` compiles):
// one natural loop, from the header to the last back edge, with the store of the longer path.
const char *kTwoBackEdgesSass = R"(	.target	sm_90
//--------------------- .text.tile --------------------------
.L_x_1:
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0010*/               @P0 BRA `(.L_x_1) ;
        /*0020*/                   STG.E desc[UR4][R6.64], R4 ;
        /*0030*/               @P1 BRA `(.L_x_1) ;
        /*0040*/                   EXIT ;
)";

TEST(Sass, TheHotLoopSpansEveryBackEdgeOfItsHeader) {
  std::vector<SassFunction> fns = parseSass(kTwoBackEdgesSass);
  ASSERT_EQ(fns.size(), 1u);
  std::optional<SassLoop> loop = hotLoop(fns[0]);
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->begin, 0u);
  EXPECT_EQ(loop->end, 3u);
  EXPECT_EQ(instructionMix(fns[0], loop->begin, loop->end + 1).globalStoreBytes, 4u);
}

// A time loop whose step ends in a shuffle: ptxas puts the divergent-warp path of the shuffle
// (BRA.DIV) after EXIT, and it branches back into the loop body (.L_x_2). That back edge spans the
// partial batch after the loop and the EXIT; the hot loop is the time loop (.L_x_1).
const char *kDivergentShuffleSass = R"(	.target	sm_90
//--------------------- .text.lanes --------------------------
.L_x_1:
        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0010*/                   BRA.DIV UR4, `(.L_x_3) ;
        /*0020*/                   SHFL.BFLY PT, R5, R4, 0x1, 0x1f ;
.L_x_2:
        /*0030*/                   STG.E desc[UR4][R6.64], R5 ;
        /*0040*/               @P0 BRA `(.L_x_1) ;
        /*0050*/                   LDG.E R8, desc[UR4][R2.64] ;
        /*0060*/                   LDG.E R9, desc[UR4][R10.64] ;
        /*0070*/                   STG.E desc[UR4][R6.64], R9 ;
        /*0080*/               @P1 EXIT ;
        /*0090*/                   STG.E desc[UR4][R12.64], R8 ;
        /*00a0*/                   EXIT ;
.L_x_3:
        /*00b0*/                   SHFL.BFLY P1, R5, R4, R14, R15 ;
        /*00c0*/                   BRA `(.L_x_2) ;
)";

TEST(Sass, ABranchBackFromAfterExitIsNoLoop) {
  std::vector<SassFunction> fns = parseSass(kDivergentShuffleSass);
  ASSERT_EQ(fns.size(), 1u);
  EXPECT_TRUE(fns[0].instructions[8].predicated);
  EXPECT_FALSE(fns[0].instructions[10].predicated);
  std::optional<SassLoop> loop = hotLoop(fns[0]);
  ASSERT_TRUE(loop);
  EXPECT_EQ(loop->begin, 0u);
  EXPECT_EQ(loop->end, 4u);
}

// A loop may hold an EXIT that it branches around (a guard inside the step): its first
// instruction still dominates its backward branch, so it is a loop.
const char *kExitInsideLoopSass = R"(	.target	sm_90
//--------------------- .text.guarded --------------------------
        /*0000*/                   MOV R2, RZ ;
.L_x_1:
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0020*/               @P0 BRA `(.L_x_2) ;
        /*0030*/                   EXIT ;
.L_x_2:
        /*0040*/                   STG.E desc[UR4][R6.64], R4 ;
        /*0050*/               @P1 BRA `(.L_x_1) ;
        /*0060*/                   EXIT ;
)";

TEST(Sass, ALoopBranchingAroundAnExitIsALoop) {
  std::optional<SassLoop> loop = hotLoop(parseSass(kExitInsideLoopSass).at(0));
  ASSERT_TRUE(loop);
  EXPECT_EQ(std::pair(loop->begin, loop->end), std::pair(size_t{1}, size_t{5}));
}

// nvdisasm -gi: line information before the instructions it locates, with the caller's line for
// code inlined from a helper (`sf_ld` at line 3, inlined at the kernel's line 12). A chunk loop
// (.L_x_1) holding a batch loop (.L_x_2) and a guarded partial batch (.L_x_3), then code after both.
const char *kLinesSass = R"(	.target	sm_90
//--------------------- .text.chunks --------------------------
	//## File "/tmp/x/k.cu", line 9
        /*0000*/                   MOV R2, RZ ;
.L_x_1:
	//## File "/tmp/x/k.cu", line 10
        /*0010*/                   STG.E desc[UR4][R8.64], R2 ;
.L_x_2:
	//## File "/tmp/x/k.cu", line 3 inlined at "/tmp/x/k.cu", line 12
        /*0020*/                   LDG.E R4, desc[UR4][R2.64] ;
	//## File "/tmp/x/k.cu", line 13
        /*0030*/                   STG.E desc[UR4][R6.64], R4 ;
        /*0040*/               @P0 BRA `(.L_x_2) ;
        /*0050*/               @P1 BRA `(.L_x_3) ;
	//## File "/tmp/x/k.cu", line 3 inlined at "/tmp/x/k.cu", line 15
        /*0060*/                   LDG.E R4, desc[UR4][R2.64] ;
.L_x_3:
        /*0070*/               @P2 BRA `(.L_x_1) ;
	//## File "/tmp/x/k.cu", line 17
        /*0080*/                   EXIT ;
.L_x_4:
        /*0090*/                   BRA `(.L_x_4);
)";

TEST(Sass, ReadsLinesAndTheBlocksLoopsAndDominators) {
  std::vector<SassFunction> fns = parseSass(kLinesSass);
  ASSERT_EQ(fns.size(), 1u);
  const SassFunction &f = fns[0];
  ASSERT_EQ(f.instructions.size(), 10u);
  EXPECT_EQ(f.instructions[0].site, "k.cu:9");
  EXPECT_EQ(f.instructions[2].site, "k.cu:12");  // the caller's line, not the helper's
  EXPECT_EQ(f.instructions[3].site, "k.cu:13");
  EXPECT_EQ(f.instructions[4].site, "k.cu:13");  // until the next line information
  EXPECT_EQ(f.instructions[6].site, "k.cu:15");
  EXPECT_EQ(parseSass(kSass)[0].instructions[0].site, "");  // no line information

  std::vector<SassBlock> blocks = basicBlocks(f);
  // [0] entry, [1] chunk loop header (store), [2] batch loop, [3] branch to the partial batch's
  // end, [4] the partial batch, [5] the chunk loop's back edge, [6] EXIT, [7] the trap.
  ASSERT_EQ(blocks.size(), 8u);
  EXPECT_EQ(blocks[2].begin, 2u);
  EXPECT_EQ(blocks[2].end, 5u);
  std::vector<int> loops, dominators;
  for (const SassBlock &b : blocks) loops.push_back(b.loop), dominators.push_back(b.dominator);
  EXPECT_EQ(loops, (std::vector<int>{-1, 1, 2, 1, 1, 1, -1, -1}));
  EXPECT_EQ(dominators, (std::vector<int>{-1, 0, 1, 2, 3, 3, 5, -1}));  // the trap: no path reaches it
}

// nvdisasm -c -hex: the second line of each instruction holds its control bits. `ring` loads
// its next value at the end of an iteration on scoreboard 5 and waits on 5 at the start of the
// next; `batch` issues two loads, waits on 5 once, then uses the load on scoreboard 4 it issued
// before the one it waited for (arrived with it) and a value waited for already.
const char *kScoreboardSass = R"(	.target	sm_90
//--------------------- .text.ring --------------------------
.L_x_0:
        /*0000*/                   FSETP.GE.AND P1, PT, R14, RZ, PT ;  /* 0x000000ff0e00720b */
                                                                       /* 0x020fc20000000000 */
        /*0010*/                   FADD R2, R14, R2 ;                  /* 0x0000000e02027221 */
                                                                       /* 0x000fc20000000000 */
        /*0020*/                   STG.E desc[UR4][R4.64], R2 ;        /* 0x0000000204007986 */
                                                                       /* 0x000fc20000000000 */
        /*0030*/                   LDG.E R14, desc[UR4][R6.64] ;       /* 0x00000004060e7981 */
                                                                       /* 0x000f420000000000 */
        /*0040*/               @P0 BRA `(.L_x_0) ;                     /* 0xfffffffc00e00947 */
                                                                       /* 0x000fc20000000000 */
        /*0050*/                   EXIT ;                              /* 0x000000000000794d */
                                                                       /* 0x000fc20000000000 */
//--------------------- .text.batch --------------------------
.L_x_1:
        /*0000*/                   LDG.E R7, desc[UR4][R6.64] ;        /* 0x0000000406077981 */
                                                                       /* 0x000f020000000000 */
        /*0010*/                   LDG.E R8, desc[UR4][R10.64] ;       /* 0x000000040a087981 */
                                                                       /* 0x000f420000000000 */
        /*0020*/                   FADD R2, R8, R2 ;                   /* 0x0000000802027221 */
                                                                       /* 0x020fc20000000000 */
        /*0030*/                   FADD R2, R7, R2 ;                   /* 0x0000000702027221 */
                                                                       /* 0x010fc20000000000 */
        /*0040*/                   FADD R2, R8, R2 ;                   /* 0x0000000802027221 */
                                                                       /* 0x020fc20000000000 */
        /*0050*/                   STG.E desc[UR4][R4.64], R2 ;        /* 0x0000000204007986 */
                                                                       /* 0x000fc20000000000 */
        /*0060*/               @P0 BRA `(.L_x_1) ;                     /* 0xfffffffc00e00947 */
                                                                       /* 0x000fc20000000000 */
        /*0070*/                   EXIT ;                              /* 0x000000000000794d */
                                                                       /* 0x000fc20000000000 */
)";

TEST(Sass, ReadsScoreboardsAndCountsTheLoadWaitsOfALoop) {
  std::vector<SassFunction> fns = parseSass(kScoreboardSass);
  ASSERT_EQ(fns.size(), 2u);
  const SassFunction &ring = fns[0], &batch = fns[1];
  ASSERT_EQ(ring.instructions.size(), 6u);
  EXPECT_EQ(ring.instructions[3].writeScoreboard, 5);
  EXPECT_EQ(ring.instructions[0].waitMask, 1u << 5);
  EXPECT_EQ(ring.instructions[0].writeScoreboard, -1);
  EXPECT_EQ(batch.instructions[0].writeScoreboard, 4);
  EXPECT_EQ(batch.instructions[3].waitMask, 1u << 4);

  std::optional<SassLoop> ringLoop = hotLoop(ring), batchLoop = hotLoop(batch);
  ASSERT_TRUE(ringLoop && batchLoop);
  EXPECT_EQ(exposedLoadWaits(basicBlocks(ring), *ringLoop), 1u);  // the load of the iteration before
  EXPECT_EQ(exposedLoadWaits(basicBlocks(batch), *batchLoop), 1u);

  // A control line that is not 16 hex digits is no encoding: ignored, not thrown on.
  std::vector<SassFunction> odd = parseSass("//--- .text.k ---\n  /*0000*/  LDG.E R1, desc[UR4][R2.64] ;\n  /* 0xnothex */\n");
  ASSERT_EQ(odd.size(), 1u);
  ASSERT_EQ(odd[0].instructions.size(), 1u);
  EXPECT_EQ(odd[0].instructions[0].writeScoreboard, -1);
}

TEST(Sass, ReadsPtxasAndCuobjdumpReports) {
  const std::string log =
      "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
      "ptxas info    : Function properties for k\n"
      "    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 0 barriers, 24 bytes cumulative stack size\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
      "ptxas info    : Function properties for other\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 16 registers, used 0 barriers\n";
  const std::string res =
      "Resource usage:\n Function other:\n  REG:16 STACK:0 SHARED:0 LOCAL:0\n"
      " Function k:\n  REG:255 STACK:24 SHARED:1024 LOCAL:0 CONSTANT[0]:564\n";
  KernelSass k;
  k.kernel = "k<1>";
  k.symbol = "k";
  readResources(log, res, k);
  EXPECT_EQ(k.registers, 255u);
  EXPECT_EQ(k.spillStoreBytes, 8u);
  EXPECT_EQ(k.spillLoadBytes, 12u);
  EXPECT_EQ(k.stackBytes, 24u);
  EXPECT_EQ(k.staticSharedBytes, 1024u);

  KernelSass missing;
  missing.kernel = "gone";
  missing.symbol = "gone";
  EXPECT_THROW(readResources(log, res, missing), cuda::CudaError);
}

}  // namespace
}  // namespace scanforge::gpu
