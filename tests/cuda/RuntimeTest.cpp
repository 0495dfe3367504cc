// runtime/cuda without a GPU: size formulas, the planner, package manifests, golden helpers and
// the error for a missing CUDA driver.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/DeviceSpec.h"
#include "runtime/cuda/Formula.h"
#include "runtime/cuda/Goldens.h"
#include "runtime/cuda/KernelPackage.h"
#include "runtime/cuda/Planner.h"
#include "runtime/cuda/Sha256.h"

namespace scanforge::cuda {
namespace {

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const CudaError &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Formula, EvaluatesSizesAndCeilingDivision) {
  Variables v = {{"$B", 2}, {"$T", 37}, {"d", 33}, {"n", 16}};
  EXPECT_EQ(evaluate("$B*$T*d", v), 2 * 37 * 33);
  EXPECT_EQ(evaluate("cdiv(d, 32)", v), 2);
  EXPECT_EQ(evaluate("256*(n+1) - 4 / 3", v), 256 * 17 - 1);
  EXPECT_EQ(evaluate(" ( $T ) ", v), 37);
  EXPECT_EQ(evaluate("log2(n)", v), 4);
  EXPECT_EQ(evaluate("log2(d)", v), 6);  // rounded up
  EXPECT_EQ(evaluate("log2(1)", v), 0);
}

TEST(Formula, ErrorsNameTheFormula) {
  Variables v = {{"d", 3}};
  EXPECT_EQ(errorOf([&] { evaluate("d*e", v); }), "in size formula 'd*e': unknown size 'e'");
  EXPECT_EQ(errorOf([&] { evaluate("cdiv(d, 0)", v); }), "in size formula 'cdiv(d, 0)': division by zero");
  EXPECT_EQ(errorOf([&] { evaluate("log2(d-3)", v); }), "in size formula 'log2(d-3)': log2 of 0");
  EXPECT_EQ(errorOf([&] { evaluate("d +", v); }), "in size formula 'd +': unexpected end");
  EXPECT_EQ(errorOf([&] { evaluate("d ) ", v); }), "in size formula 'd ) ': unexpected ')'");
  EXPECT_EQ(errorOf([&] { evaluate("4294967296*4294967296", v); }),
            "in size formula '4294967296*4294967296': the value overflows 64 bits");
}

PlanRequest request(int64_t batch, int64_t steps, int64_t channels, int64_t recomputeBytesPerStep = 0) {
  PlanRequest r;
  r.batch = batch;
  r.steps = steps;
  r.channels = channels;
  r.sequentialShared = r.chunkedShared = {recomputeBytesPerStep, recomputeBytesPerStep, false};
  r.multiprocessors = 132;  // an H100
  return r;
}

TEST(Planner, LargeBatchTimesChannelsRunsSequentially) {
  for (int64_t channels : {1024, 4096}) {  // B=64 D=1024: 64k threads keep enough loads in flight
    Plan p = plan(request(64, 4096, channels));
    EXPECT_EQ(p.strategy, Strategy::Sequential) << channels;
    EXPECT_EQ(p.chunk, 4096);  // no recomputation: one chunk
    EXPECT_EQ(p.chunks, 1);
    PlanCost cost = predictPlan(request(64, 4096, channels), p);
    EXPECT_DOUBLE_EQ(cost.bandwidth, 2.85e12) << "bandwidth-bound";
  }
}

TEST(Planner, SmallBatchTimesChannelsSplitsTimeIntoTheCheapestChunks) {
  for (PlanRequest r : {request(1, 100000, 256), request(8, 16384, 512), request(1, 100000, 5)}) {
    Plan p = plan(r);
    SCOPED_TRACE(std::to_string(r.batch) + "x" + std::to_string(r.steps) + "x" + std::to_string(r.channels));
    EXPECT_EQ(p.strategy, Strategy::Chunked);
    EXPECT_EQ(p.chunks, (r.steps + p.chunk - 1) / p.chunk);
    double chosen = predictPlan(r, p).seconds;
    EXPECT_LT(chosen, 0.9 * predictPlan(r, Plan{Strategy::Sequential, r.steps, 1}).seconds);
    // No other power-of-two chunk is predicted faster.
    for (int64_t chunk = 16; chunk < r.steps; chunk *= 2)
      EXPECT_LE(chosen, predictPlan(r, Plan{Strategy::Chunked, chunk, (r.steps + chunk - 1) / chunk}).seconds) << chunk;
  }
  // Few threads: memory latency bounds a sequential walk, so the bandwidth reached is a fraction:
  // 4096 threads with a batch of 16 steps of 8 bytes in flight per 650 ns, 0.81 TB/s.
  EXPECT_DOUBLE_EQ(predictPlan(request(8, 16384, 512), Plan{}).bandwidth, 4096.0 * 16 * 8 / 650e-9);
}

// Each chunk writes its parameter-gradient partial sums (and the sums kernel reads them): with the
// selective SSM's 16 + 1 floats per thread, the chunks the planner picks at B=8 T=16384 get longer.
TEST(Planner, ParameterGradientPartialSumsFavourLongerChunks) {
  PlanRequest without = request(8, 16384, 512), with = without;
  with.partialSumBytes = 4 * 17;
  Plan shorter = plan(without), longer = plan(with);
  EXPECT_EQ(longer.strategy, Strategy::Chunked);
  EXPECT_GT(longer.chunk, shorter.chunk);
  EXPECT_DOUBLE_EQ(predictPlan(with, longer).bytes - predictPlan(without, longer).bytes, 8.0 * 512 * longer.chunks * 2 * 68);
}

// A step's own instructions lengthen a sequential walk: at B=8 D=1024 minGRU-like forward+backward
// (124 instructions per step) the planner chunks, as the full model says it should (scanc
// --gpu-model: sequential 15 % of copy, chunked 55 %); without the term it walked; with enough
// threads the walk stays sequential.
TEST(Planner, StepInstructionsLengthenTheSequentialWalk) {
  PlanRequest small = request(8, 16384, 1024), large = request(64, 4096, 1024);
  small.readBytesPerStep = large.readBytesPerStep = 20;
  small.writtenBytesPerStep = large.writtenBytesPerStep = 12;
  small.stepInstructions = large.stepInstructions = 124;
  Plan p = plan(small);
  EXPECT_EQ(p.strategy, Strategy::Chunked);
  Plan sequential = p;
  sequential.strategy = Strategy::Sequential, sequential.chunk = 16384, sequential.chunks = 1;
  PlanRequest free = small;
  free.stepInstructions = 0;
  EXPECT_GT(predictPlan(small, sequential).criticalPath, 3 * predictPlan(free, sequential).criticalPath);
  EXPECT_EQ(plan(free).strategy, Strategy::Sequential);  // what the planner chose without the term
  EXPECT_EQ(plan(large).strategy, Strategy::Sequential);
}

TEST(Planner, ShortSequencesStaySequentialAndChunksAreAtLeast16) {
  EXPECT_EQ(plan(request(1, 31, 1)).strategy, Strategy::Sequential);
  bool chunked = false;
  for (int64_t steps : {64, 128, 1024, 16384}) {
    Plan p = plan(request(1, steps, 1));
    if (p.strategy == Strategy::Chunked) {
      EXPECT_GE(p.chunk, 16) << steps;
    }
    chunked = chunked || p.strategy == Strategy::Chunked;
  }
  EXPECT_TRUE(chunked);
  // Where the cost model prefers the shortest chunk (one channel: no tile cost to speak of, and a
  // longer chunk lengthens the drain), 16 is the floor.
  PlanRequest forced = request(1, 64, 1);
  forced.strategy = Strategy::Chunked;
  EXPECT_EQ(plan(forced).chunk, 16);
}

// minGRU forward+backward at B=8 T=16384 D=1024: 24 bytes read and 12 written per thread and step,
// 191 step instructions forward and backward, blocks of 128.
PlanRequest minGruLongSequence() {
  PlanRequest r = request(8, 16384, 1024);
  r.readBytesPerStep = 24;
  r.writtenBytesPerStep = 12;
  r.stepInstructions = 191;
  r.passes = 2;
  return r;
}

// Each chunked tile has a fixed cost and the last tiles' walks overlap nothing: for minGRU at B=8
// T=16384 the planner picks chunks of 128 steps, the fastest measured on an H200 (1.94 ms against
// 2.49 with 16 and 2.13 with 512; kernels without the stash).
TEST(Planner, TileCostsAndTheDrainPickTheMeasuredChunk) {
  PlanRequest r = minGruLongSequence();
  Plan p = plan(r);
  EXPECT_EQ(p.strategy, Strategy::Chunked);
  EXPECT_EQ(p.chunk, 128);
  PlanCost short16 = predictPlan(r, Plan{Strategy::Chunked, 16, 1024});
  EXPECT_DOUBLE_EQ(short16.tiles, 8.0 * 8 * 1024 * 2);
}

// A block's recomputed states take shared memory in proportion to its chunk: at 1 KiB per step of
// a block of 64 threads (the selective SSM's 4 state elements per thread), chunks of 32 leave room
// for 6 blocks per SM (384 threads), chunks of 16 for 13 (832). With a long step the walks of the
// threads bind, wave after wave, and the planner picks the shorter chunk, as the full model does
// (scanc --gpu-model at B=8 T=4096 D=1024 N=16, 4 lanes: 4.99 ms with chunks of 16, 6.44 with 32).
TEST(Planner, SharedMemoryForRecomputedStatesLimitsTheResidentThreads) {
  PlanRequest r = request(8, 4096, 4096, 1024);
  r.chunkedBlockThreads = 64;
  r.passes = 2;
  r.stepInstructions = 760;  // the manifest's forward and backward step_instructions at 4 lanes
  r.readBytesPerStep = 60;
  r.writtenBytesPerStep = 20;
  r.strategy = Strategy::Chunked;
  PlanCost at32 = predictPlan(r, Plan{Strategy::Chunked, 32, 128}), at16 = predictPlan(r, Plan{Strategy::Chunked, 16, 256});
  double waves32 = std::ceil(8.0 * 4096 * 128 / (132 * 6 * 64)), waves16 = std::ceil(8.0 * 4096 * 256 / (132 * 13 * 64));
  EXPECT_DOUBLE_EQ(at32.walks / at16.walks, waves32 * 64 / (waves16 * 32));
  EXPECT_GT(at32.seconds, at16.seconds);
  EXPECT_EQ(plan(r).chunk, 16);
  r.sequentialShared = r.chunkedShared = {};  // nothing in shared memory: half the SM's threads at any chunk
  EXPECT_DOUBLE_EQ(predictPlan(r, Plan{Strategy::Chunked, 32, 128}).walks / predictPlan(r, Plan{Strategy::Chunked, 16, 256}).walks,
                   std::ceil(8.0 * 4096 * 128 / (132 * 1024)) * 64 / (std::ceil(8.0 * 4096 * 256 / (132 * 1024)) * 32));
}

// The chunked kernels' stash (minGRU at B=8 T=16384: 2 floats per thread and step in blocks of
// 128): a tile reads its chunk's inputs once, where without it the rescan reads them again (the
// resident tiles' chunks do not fit in half of L2), and its shared memory bounds the chunk by the
// device's opt-in maximum per block and the resident blocks.
TEST(Planner, TheStashReadsAChunksInputsOnce) {
  PlanRequest r = minGruLongSequence();
  r.chunkedShared = {0, 1024, true};
  r.sharedPerBlock = 227 * 1024;
  Plan stashed{Strategy::Chunked, 32, 512, 1, true}, unstashed{Strategy::Chunked, 32, 512, 1, false};
  double ideal = 8.0 * 1024 * 16384 * 36;
  EXPECT_DOUBLE_EQ(predictPlan(r, stashed).bytes, ideal);
  EXPECT_DOUBLE_EQ(predictPlan(r, unstashed).bytes, ideal + 8.0 * 1024 * 16384 * 24);
  EXPECT_LT(predictPlan(r, stashed).seconds, predictPlan(r, unstashed).seconds);
  Plan chosen = plan(r);
  EXPECT_EQ(chosen.strategy, Strategy::Chunked);
  EXPECT_TRUE(chosen.stash);
  // 64 KiB per block at 64 steps: 3 blocks of 128 threads per SM (228 KiB, 1 KiB reserved per block).
  // A tile walks its chunk twice; with the stash the second walk reads shared memory and waits for
  // no load.
  Plan at64{Strategy::Chunked, 64, 256, 1, true};
  r.stepInstructions = 1e4;  // steps long enough that the walks bind: they count the resident threads
  const DeviceSpec &d = h100();
  double work = 1e4 * d.aluCycles / d.clockHz, wait = d.memoryLatency / kChunkLoadBatchSteps;
  EXPECT_DOUBLE_EQ(predictPlan(r, at64).walks / predictPlan(r, Plan{Strategy::Chunked, 64, 256, 1, false}).walks,
                   std::ceil(8.0 * 1024 * 256 / (132 * 3 * 128)) * (wait + 2 * work) /
                       (std::ceil(8.0 * 1024 * 256 / (132 * 1024)) * 2 * (wait + work)));
  r.stash = false;
  EXPECT_FALSE(plan(r).stash);
  r.stash = true;
  r.strategy = Strategy::Chunked;
  r.chunk = 227;  // (227 KiB - 1 KiB of static shared memory) / 1 KiB per step = 226 steps at most
  EXPECT_EQ(errorOf([&] { plan(r); }), "chunk length 227 exceeds the shared-memory bound of 226 steps (B=8 T=16384 channels=1024)");
  // A stash within what the other kernel's recomputed states take costs no shared memory: chosen.
  PlanRequest free = minGruLongSequence();
  free.sharedPerBlock = 227 * 1024;
  free.sequentialShared = {1024, 1024, false};
  free.chunkedShared = {1024, 1024, true};
  Plan chunkedFree = plan(free);
  EXPECT_EQ(chunkedFree.strategy, Strategy::Chunked);
  EXPECT_TRUE(chunkedFree.stash) << chunkedFree.chunk;
  r.chunkedShared = {};  // nothing to stash: the forced stash is moot
  EXPECT_FALSE(plan(r).stash);
}

// A chunk walked twice without the stash reads its inputs twice: a chunked tile's rescan always
// (it follows the carry's wait), even where the resident tiles' chunks fit in half of L2 (16 steps
// of 8 bytes for 135168 threads, 17 MB); a sequential backward's second walk only beyond half of L2.
TEST(Planner, ChunkedRescansReadTheirInputsAgainAndSequentialWalksBeyondL2) {
  PlanRequest r = request(8, 16384, 1024);
  r.readBytesPerStep = 8;
  r.writtenBytesPerStep = 4;
  r.chunkedShared = {0, 64, true};
  double ideal = 8.0 * 1024 * 16384 * 12, again = 8.0 * 1024 * 16384 * 8;
  EXPECT_DOUBLE_EQ(predictPlan(r, Plan{Strategy::Chunked, 16, 1024, 1, false}).bytes, ideal + again);
  EXPECT_DOUBLE_EQ(predictPlan(r, Plan{Strategy::Chunked, 16, 1024, 1, true}).bytes, ideal);
  PlanRequest seq = request(64, 4096, 1024);
  seq.readBytesPerStep = 8;
  seq.writtenBytesPerStep = 4;
  seq.sequentialShared = {4, 4, false};  // a backward that recomputes its states walks a chunk twice
  double seqIdeal = 64.0 * 1024 * 4096 * 12;
  // 65536 resident threads: 16 steps of 8 bytes (8 MiB) fit in half of L2, 64 steps (32 MiB) do not.
  EXPECT_DOUBLE_EQ(predictPlan(seq, Plan{Strategy::Sequential, 16, 256}).bytes, seqIdeal);
  EXPECT_DOUBLE_EQ(predictPlan(seq, Plan{Strategy::Sequential, 64, 64}).bytes, seqIdeal + 64.0 * 1024 * 4096 * 8);
}

// Checkpoints are traffic: a thread writes its states before every chunk (checkpoint interval) and
// a backward that recomputes them reads them back, in both strategies.
TEST(Planner, CheckpointsCountPerChunk) {
  PlanRequest r = request(8, 4096, 1024);
  r.checkpointBytes = 128;  // 16 floats, written and read
  PlanRequest none = r;
  none.checkpointBytes = 0;
  for (Plan p : {Plan{Strategy::Sequential, 64, 64}, Plan{Strategy::Chunked, 16, 256}})
    EXPECT_DOUBLE_EQ(predictPlan(r, p).bytes - predictPlan(none, p).bytes, 8.0 * 1024 * static_cast<double>(p.chunks) * 128);
}

TEST(Planner, RecomputationBoundsTheChunkBySharedMemory) {
  // 64 threads * 16 floats * 4 bytes = 4 KiB per step: at most 12 steps in 48 KiB. Register arrays
  // of 16 floats, held whole and loaded a step at a time: lengths are not rounded.
  PlanRequest seqRequest = request(64, 4096, 4096, 4096), chunkedRequest = request(1, 4096, 64, 4096);
  for (PlanRequest *r : {&seqRequest, &chunkedRequest}) r->sequentialBatch = r->chunkedBatch = 1;
  Plan seq = plan(seqRequest);
  EXPECT_EQ(seq.strategy, Strategy::Sequential);
  EXPECT_EQ(seq.chunk, 12);
  EXPECT_EQ(seq.chunks, 342);
  Plan chunked = plan(chunkedRequest);
  EXPECT_EQ(chunked.strategy, Strategy::Chunked);
  EXPECT_EQ(chunked.chunk, 12);
  chunkedRequest.chunkedBatch = kChunkLoadBatchSteps;  // scalar loads in batches of 8
  EXPECT_EQ(plan(chunkedRequest).chunk, 8);
}

// The kernels load kLoadBatchSteps steps at once (kChunkLoadBatchSteps in a chunked tile) and run a
// chunk's remainder through a path that clamps every address. On an H200 the planner, bounded by
// the 48 KiB default instead of the opt-in maximum, gave minGRU's stash chunks of 15 steps: every
// step took that path (its forward, the same kernel: 1.003 ms at 15 steps, 0.860 at 48). Chunk
// lengths from a shared-memory bound are whole batches, and the stash is left off where not one
// batch fits.
TEST(Planner, ChunksFromASharedMemoryBoundAreWholeBatchesOfLoads) {
  PlanRequest r = request(64, 4096, 1024);
  r.sharedPerBlock = 48 * 1024;              // a device read without the opt-in
  r.sequentialShared = {1100, 3072, true};   // 44 steps of recomputed state fit 48 KiB; 15 with the stash
  Plan p = plan(r);
  EXPECT_EQ(p.strategy, Strategy::Sequential);
  EXPECT_FALSE(p.stash);
  EXPECT_EQ(p.chunk, 32);
  r.sharedPerBlock = 227 * 1024;  // the opt-in maximum: the stash fits powers of two from 16
  Plan optIn = plan(r);
  EXPECT_TRUE(optIn.stash);
  EXPECT_EQ(optIn.chunk % kLoadBatchSteps, 0) << optIn.chunk;
  PlanRequest tiles = request(8, 16384, 1024);
  tiles.chunkedShared = {0, 4500, true};  // the stash's bound: (48 KiB - 1 KiB) / 4500 = 10 steps
  tiles.sharedPerBlock = 48 * 1024;
  tiles.strategy = Strategy::Chunked;
  tiles.stash = true;
  EXPECT_EQ(plan(tiles).chunk, 8);
}

TEST(Planner, ForcedChoicesAndLimits) {
  PlanRequest forced = request(2, 37, 3);
  forced.strategy = Strategy::Chunked;
  forced.chunk = 100;
  Plan p = plan(forced);
  EXPECT_EQ(p.chunk, 37);  // never longer than T
  EXPECT_EQ(p.chunks, 1);
  EXPECT_EQ(plan(request(70000, 8, 1)).strategy, Strategy::Sequential);  // launched in slices by the runner
  PlanRequest smallGrid = request(1, 100, 1);
  smallGrid.maxGridYZ = 3;
  smallGrid.strategy = Strategy::Chunked;
  smallGrid.chunk = 1;
  EXPECT_EQ(plan(smallGrid).chunks, 3);  // at most maxGridYZ chunks
  EXPECT_EQ(errorOf([] { plan(request(1, 8, 1, 60000)); }),
            "one step of recomputed state needs 60000 bytes of shared memory per block, more than 49152 "
            "(B=1 T=8 channels=1); use smaller register dimensions");
  PlanRequest tooLong = request(1, 8, 1, 4096);
  tooLong.chunk = 13;
  EXPECT_EQ(errorOf([&] { plan(tooLong); }),
            "chunk length 13 exceeds the shared-memory bound of 12 steps (B=1 T=8 channels=1)");
  // Refusals for shared memory are typed, so that callers can tell them from device failures.
  EXPECT_THROW(plan(request(1, 8, 1, 60000)), PlanRefused);
  EXPECT_THROW(plan(tooLong), PlanRefused);
  PlanRequest empty = request(0, 8, 1);
  EXPECT_THROW(
      {
        try {
          plan(empty);
        } catch (const PlanRefused &) {
          ADD_FAILURE() << "an empty shape is a caller's error, not a refusal";
        }
      },
      CudaError);
}

TEST(KernelPackage, MalformedManifestsAreNamed) {
  EXPECT_EQ(errorOf([] { KernelPackage::fromJson({{"format", "zip"}, {"version", 1}}, {}, "pkg/manifest.json"); }),
            "pkg/manifest.json: it is not a scanforge CUDA package manifest (format 'zip')");
  std::string missing = errorOf([] {
    KernelPackage::fromJson({{"format", "scanforge-cuda-package"}, {"version", 1}, {"recurrences", {{{"name", "f"}}}}}, {},
                            "pkg/manifest.json");
  });
  EXPECT_NE(missing.find("pkg/manifest.json: malformed manifest:"), std::string::npos) << missing;
  EXPECT_NE(errorOf([] { KernelPackage::load("/nonexistent-package"); }).find("cannot read /nonexistent-package/manifest.json"),
            std::string::npos);
}

// The format is defined once (PackageFormat.h): what the writer produces, the reader reads back,
// and a role the reader does not know is an error naming the buffer.
TEST(PackageFormat, ManifestRoundTripsAndRejectsUnknownRoles) {
  RecurrenceDesc rec;
  rec.name = "f";
  rec.file = "f.cu";
  rec.reverse = true;
  rec.channelDims = {"d"};
  rec.buffers = {{"x", BufferRole::Input, "bf16", {"$B", "$T", "d"}, false, false},
                 {"h.checkpoints", BufferRole::Checkpoint, "f32", {"$B", "$NC", "1", "d"}, false, true}};
  rec.sequential = {{"sf_f_seq", {{ParamDesc::Kind::Buffer, "x"}, {ParamDesc::Kind::Int32, "$T"}}, {"1", "$B", "1"}, 128, "0"}};
  rec.chainGroup = 4;
  rec.registerDims = {"n"};
  rec.laneDim = "n";
  nlohmann::json manifest = toManifest({rec});
  std::vector<RecurrenceDesc> back = fromManifest(manifest, {{"f.cu", "// source"}});
  EXPECT_EQ(back[0].chainGroup, 4);
  EXPECT_EQ(back[0].laneDim, "n");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].source, "// source");
  EXPECT_TRUE(back[0].reverse);
  ASSERT_EQ(back[0].buffers.size(), 2u);
  EXPECT_EQ(back[0].buffers[0].role, BufferRole::Input);
  EXPECT_EQ(back[0].buffers[0].dtype, "bf16");
  EXPECT_EQ(back[0].buffers[1].role, BufferRole::Checkpoint);
  EXPECT_TRUE(back[0].buffers[1].forBackward);
  ASSERT_EQ(back[0].sequential.size(), 1u);
  EXPECT_EQ(back[0].sequential[0].params[1].value, "$T");
  EXPECT_EQ(toManifest(back), manifest);

  nlohmann::json older = manifest;  // written before the field: groups of 32
  older["recurrences"][0].erase("chain_group");
  EXPECT_EQ(fromManifest(older, {{"f.cu", ""}})[0].chainGroup, kManifestChainGroup);
  older["recurrences"][0]["chain_group"] = 0;
  EXPECT_EQ(errorOf([&] { KernelPackage::fromJson(older, {{"f.cu", ""}}, "pkg/manifest.json"); }),
            "pkg/manifest.json: recurrence 'f' has chain_group 0, not a positive count");

  nlohmann::json noLanes = manifest;  // written before the field, or without a lane dimension
  noLanes["recurrences"][0]["layout"].erase("lane_dim");
  EXPECT_EQ(fromManifest(noLanes, {{"f.cu", ""}})[0].laneDim, "");
  noLanes["recurrences"][0]["layout"]["lane_dim"] = "d";
  EXPECT_EQ(errorOf([&] { KernelPackage::fromJson(noLanes, {{"f.cu", ""}}, "pkg/manifest.json"); }),
            "pkg/manifest.json: recurrence 'f' deals 'd' to lanes, which is not one of its register dimensions");

  manifest["recurrences"][0]["buffers"][0]["role"] = "scratchpad";
  EXPECT_EQ(errorOf([&] { KernelPackage::fromJson(manifest, {{"f.cu", ""}}, "pkg/manifest.json"); }),
            "pkg/manifest.json: buffer 'x' has the unknown role 'scratchpad'");
}

TEST(Goldens, RelativeErrorAndBf16Rounding) {
  EXPECT_DOUBLE_EQ(relativeError({1.0, 2.0}, {1.0, 2.0}), 0.0);
  EXPECT_NEAR(relativeError({3.0, 4.0 + 5e-3}, {3.0, 4.0}), 1e-3, 1e-12);
  EXPECT_TRUE(std::isinf(relativeError({std::nan("")}, {1.0})));
  // With a floor, a tensor that cancels to almost nothing is held to an absolute bound per element.
  EXPECT_NEAR(relativeError({1e-8 + 2e-10, 1e-8}, {1e-8, 1e-8}, 1e-2), 2e-10 / (1e-2 * std::sqrt(2.0)), 1e-20);
  EXPECT_NEAR(relativeError({3.0, 4.0 + 5e-3}, {3.0, 4.0}, 1e-2), 1e-3, 1e-12);
  EXPECT_EQ(toBf16(1.0f), 0x3f80);
  EXPECT_EQ(fromBf16(toBf16(1.00390625f)), 1.0f);   // a tie rounds to even
  EXPECT_EQ(fromBf16(toBf16(1.01171875f)), 1.015625f);
  EXPECT_TRUE(std::isnan(fromBf16(toBf16(std::nanf("")))));
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Run in its own process (ctest runs each test alone): the driver is loaded once per process.
TEST(CudaDriver, MissingDriverIsAClearError) {
  setenv("SCANFORGE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  try {
    CudaBackend backend;
    FAIL() << "a backend opened without a driver";
  } catch (const CudaUnavailable &e) {
    EXPECT_EQ(std::string(e.what()).rfind("no CUDA driver found (/nonexistent/libcuda.so.1: ", 0), 0) << e.what();
  }
}

}  // namespace
}  // namespace scanforge::cuda
