// Runs a ChunkProgram over a whole batch and sequence: work units of one batch element and (when
// the batch alone cannot keep the threads busy) one block of channels are split across threads
// (all calling one compiled program), time is cut into chunks that are processed in
// scan order, and each state is carried from one chunk to the next.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compiler/halide/ChunkProgram.h"

namespace scanforge::cpu {

// A dense row-major host tensor owned by the caller: [B, T, layout dims...] for per-step ports,
// [B, layout dims...] for states, [layout dims...] for parameters.
struct HostView {
  void *data = nullptr;
  std::vector<int64_t> shape;
};
using HostViews = std::map<std::string, HostView>;

// One program for up to `workers` threads, built and JIT-compiled on first use. The workers call
// the one compiled pipeline at once: each call passes its buffers in its own ParamMap and its own
// JITUserContext, which is how Halide's JIT is called from several threads (Pipeline::realize
// only reads the pipeline once it is compiled). A copy per worker cost a compilation per thread.
class SharedProgram {
 public:
  SharedProgram(std::function<ChunkProgram()> build, int workers, std::string label, bool verbose)
      : build_(std::move(build)), workers_(workers), label_(std::move(label)), verbose_(verbose) {}
  ChunkProgram &get();
  int workers() const { return workers_; }
  double compileSeconds() const { return compileSeconds_; }

 private:
  std::function<ChunkProgram()> build_;
  int workers_;
  std::unique_ptr<ChunkProgram> program_;
  std::string label_;
  bool verbose_;
  std::mutex mutex_;
  double compileSeconds_ = 0;
};

// Bytes a run read and wrote in memory (Traffic in compiler/api/Scanforge.h says what counts).
struct Traffic {
  int64_t read = 0, written = 0;
};

struct ChunkedRun {
  int64_t batch = 0, steps = 0, chunk = 0;
  int64_t channelBlock = 0;       // channels per work unit when they can be split; 0: by rule
  std::vector<int64_t> dimSizes;  // per recurrence dimension
  bool reverseChunks = false;     // process chunks from the last to the first
  HostViews stepInputs, params;
  HostViews start;                // initial value per program state ([B, ...]); missing = zeros
  // Backward only: forward state at the forward start of each chunk, [B, chunks, state size].
  const std::map<std::string, std::vector<float>> *checkpointsIn = nullptr;
  HostViews stepOutputs;
  HostViews finals;               // value after the last chunk per state ([B, ...]); optional
  HostViews accums;               // parameter gradients, summed over batch and time; written
  // Forward only: receives the state at the start of each chunk, [B, chunks, state size].
  std::map<std::string, std::vector<float>> *checkpointsOut = nullptr;
  Traffic *traffic = nullptr;     // optional: receives the bytes the run moved
};

// How a run's channels are cut: `blocks` blocks of `width` channels of dimension dim (the last one
// may be narrower); dim < 0: one block of everything. Work unit u is batch element u / blocks and
// block u % blocks.
struct ChannelSplit {
  int dim = -1;
  int64_t width = 0, blocks = 1;
};

// The split of a run of `program` on `workers` threads (docs/cpu.md, "Channel blocks").
ChannelSplit splitChannels(const ChunkProgram &program, const ChunkedRun &run, int workers);

void runChunked(SharedProgram &shared, const ChunkedRun &run);

// A Halide buffer over one batch element of a dense host tensor of the layout at `base`, whole
// channels: its dims innermost first, then (per-step ports) `steps` time steps.
Halide::Buffer<> hostBuffer(const PortLayout &layout, void *base, int64_t steps, const std::vector<int64_t> &sizes);

}  // namespace scanforge::cpu
