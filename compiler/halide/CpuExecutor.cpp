#include "compiler/halide/CpuExecutor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>

namespace scanforge::cpu {
namespace {

int64_t product(const std::vector<int> &dims, const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int d : dims) n *= sizes[d];
  return n;
}

size_t elementSize(const PortLayout &layout) { return layout.bf16 ? 2 : 4; }

// A work unit's share of the channels: indices [start, start + extent) of dimension dim of every
// port that has it (dim < 0: all channels). Ports without dim are used whole.
struct Block {
  int dim = -1;
  int64_t start = 0, extent = 0;
};

Block blockOf(const ChannelSplit &split, int64_t unit, const std::vector<int64_t> &sizes) {
  if (split.dim < 0) return {};
  int64_t start = (unit % split.blocks) * split.width;
  return {split.dim, start, std::min(split.width, sizes[split.dim] - start)};
}

// A Halide buffer over a block of part of a dense host tensor: dims innermost first, then (for
// per-step ports) time. Strides are those of the whole tensor; extents those of the block.
Halide::Buffer<> window(const PortLayout &layout, void *base, int64_t offsetElements, int64_t steps,
                        const std::vector<int64_t> &sizes, const Block &block) {
  std::vector<halide_dimension_t> dims;
  int64_t stride = 1;
  for (auto it = layout.dims.rbegin(); it != layout.dims.rend(); ++it) {
    int64_t extent = sizes[*it];
    if (*it == block.dim) {
      offsetElements += block.start * stride;
      extent = block.extent;
    }
    dims.push_back({0, static_cast<int32_t>(extent), static_cast<int32_t>(stride), 0});
    stride *= sizes[*it];
  }
  if (layout.perStep) dims.push_back({0, static_cast<int32_t>(steps), static_cast<int32_t>(stride), 0});
  halide_type_t type = layout.bf16 ? halide_type_t(halide_type_bfloat, 16) : halide_type_t(halide_type_float, 32);
  char *data = static_cast<char *>(base) + offsetElements * static_cast<int64_t>(elementSize(layout));
  return Halide::Buffer<>(type, data, static_cast<int>(dims.size()), dims.data());
}

// Calls visit(offset, count) for each contiguous run of a block's elements in a dense tensor of the
// layout (one run, the whole tensor, when the layout lacks the block's dimension).
template <class Visit>
void forEachRun(const PortLayout &layout, const std::vector<int64_t> &sizes, const Block &block, Visit visit) {
  auto pos = std::find(layout.dims.begin(), layout.dims.end(), block.dim);
  if (pos == layout.dims.end()) {
    visit(int64_t{0}, product(layout.dims, sizes));
    return;
  }
  int64_t outer = 1, inner = 1;
  for (auto it = layout.dims.begin(); it != pos; ++it) outer *= sizes[*it];
  for (auto it = pos + 1; it != layout.dims.end(); ++it) inner *= sizes[*it];
  for (int64_t o = 0; o < outer; ++o) visit((o * sizes[block.dim] + block.start) * inner, block.extent * inner);
}

int64_t bytesOf(const Halide::Buffer<> &b) { return static_cast<int64_t>(b.number_of_elements()) * b.type().bytes(); }

const HostView *find(const HostViews &views, const std::string &name) {
  auto it = views.find(name);
  return it == views.end() ? nullptr : &it->second;
}

bool hasDim(const ProducedOutput &o, int d) { return std::count(o.layout.dims.begin(), o.layout.dims.end(), d) > 0; }

// Whether blocks of dimension d write per-block partials of output o (f32 ones only: bf16
// partials would each be rounded before they are added).
bool partialOutput(const ProducedOutput &o, int d) {
  return !hasDim(o, d) && (o.partialOver >> d & 1) && !o.layout.bf16;
}

// The dimension a program's channels can be split along: a channel dimension (scan::ParallelDims:
// one no forward contraction sums over) that every state has and every per-step output either has
// or is a per-block partial sum over (the selective SSM's B.grad[n] sums over d). Parameter
// gradients are per-block partials that add up like the per-chunk ones. -1: none.
int blockableDim(const ChunkProgram &program) {
  for (int d = 0; d < static_cast<int>(program.dimNames.size()); ++d) {
    auto has = [d](const ProducedOutput &o) { return hasDim(o, d); };
    auto splits = [d](const ProducedOutput &o) { return hasDim(o, d) || partialOutput(o, d); };
    if ((program.channelDims >> d & 1) && std::all_of(program.outputs.begin(), program.outputs.end(), splits) &&
        std::all_of(program.finals.begin(), program.finals.end(), has))
      return d;
  }
  return -1;
}

}  // namespace

// The split of a run. Rule: the fewest blocks that split batch × blocks evenly over the workers
// (workers / gcd(B, workers): one block when B is a multiple of the workers), each at least 32
// channels wide and a multiple of kLanesPerIteration (whole iterations of the vectorised loops).
// Fewer, wider blocks run faster than many narrow ones (longer contiguous rows per step, fewer
// program calls), so balance is all they are for. run.channelBlock, when set, fixes the width.
ChannelSplit splitChannels(const ChunkProgram &program, const ChunkedRun &run, int workers) {
  ChannelSplit split;
  split.dim = blockableDim(program);
  if (split.dim < 0) return split;
  int64_t size = run.dimSizes[split.dim];
  if (run.channelBlock > 0) {
    split.width = std::min(run.channelBlock, size);
  } else {
    constexpr int64_t kMinWidth = 32, kMultiple = kLanesPerIteration;
    int64_t blocks = std::min<int64_t>(workers / std::gcd<int64_t>(run.batch, workers), std::max<int64_t>(1, size / kMinWidth));
    int64_t width = (size + blocks - 1) / blocks;
    split.width = std::min(size, (width + kMultiple - 1) / kMultiple * kMultiple);
  }
  split.blocks = (size + split.width - 1) / split.width;
  return split;
}

namespace {

// The buffers a chunk program allocates for itself (a chunk's stored gate values and states) come
// from a pool per worker: every chunk asks for the same sizes, and glibc serves blocks of 128 KiB
// or more with fresh pages from the kernel whenever it has trimmed its heap, whose page faults can
// cost more than the chunk's work (the selective SSM's forward+backward at chunks of 32 steps:
// 846 ms and 3.5 M page faults without the pool, 216 ms with it; minGRU 4x slower at 256 steps).
class ScratchPool : public Halide::JITUserContext {
 public:
  ScratchPool() {
    handlers.custom_malloc = &allocate;
    handlers.custom_free = &release;
  }
  ScratchPool(const ScratchPool &) = delete;
  ScratchPool &operator=(const ScratchPool &) = delete;
  ~ScratchPool() {
    for (Block &b : blocks_) std::free(b.base);
  }

 private:
  // Halide may read a few bytes beyond either end of a block and wants 32-byte alignment. Blocks
  // start at different offsets within a page, so that the streams a loop reads do not all map to
  // the same cache sets.
  static constexpr size_t kMargin = 64, kStagger = 448, kStaggers = 9;
  struct Block {
    char *base;
    char *data;
    size_t size;
    bool used;
  };

  static void *allocate(Halide::JITUserContext *context, size_t size) {
    auto &blocks = static_cast<ScratchPool *>(context)->blocks_;
    Block *best = nullptr;
    for (Block &b : blocks)
      if (!b.used && b.size >= size && (!best || b.size < best->size)) best = &b;
    if (!best) {
      size_t offset = kMargin + blocks.size() % kStaggers * kStagger;
      size_t bytes = (offset + size + kMargin + kMargin - 1) / kMargin * kMargin;
      char *base = static_cast<char *>(std::aligned_alloc(kMargin, bytes));
      if (!base) return nullptr;  // Halide reports the failed allocation
      blocks.push_back({base, base + offset, size, false});
      best = &blocks.back();
    }
    best->used = true;
    return best->data;
  }

  static void release(Halide::JITUserContext *context, void *p) {
    for (Block &b : static_cast<ScratchPool *>(context)->blocks_)
      if (b.data == p) b.used = false;
  }

  std::vector<Block> blocks_;
};

// One worker: the work units (batch element, channel block) u = first, first + stride, ...
// blockPartials[i], when not empty, receives output i's per-block partials, [blocks, B, T, ...].
void runWorker(ChunkProgram &program, const ChunkedRun &run, const ChannelSplit &split, int64_t first, int64_t stride,
               std::map<std::string, std::vector<double>> &accumTotals, std::vector<std::vector<float>> &blockPartials,
               Traffic &moved) {
  const std::vector<int64_t> &sizes = run.dimSizes;
  int64_t chunks = (run.steps + run.chunk - 1) / run.chunk;
  // Carried states (in and out of a chunk) and per-chunk parameter-gradient partials, whole-sized;
  // a unit uses its block of them.
  std::vector<std::vector<float>> carryIn(program.initial.size()), carryOut(program.finals.size());
  std::vector<std::vector<float>> partial(program.accums.size());
  for (size_t i = 0; i < program.initial.size(); ++i) carryIn[i].resize(product(program.initial[i].layout.dims, sizes));
  for (size_t i = 0; i < program.finals.size(); ++i) carryOut[i].resize(product(program.finals[i].layout.dims, sizes));
  for (size_t i = 0; i < program.accums.size(); ++i) partial[i].resize(product(program.accums[i].layout.dims, sizes));

  ScratchPool pool;
  for (int64_t u = first; u < run.batch * split.blocks; u += stride) {
    int64_t b = u / split.blocks;
    Block block = blockOf(split, u, sizes);
    for (size_t i = 0; i < program.initial.size(); ++i) {
      const HostView *start = find(run.start, program.initial[i].layout.name);
      int64_t n = static_cast<int64_t>(carryIn[i].size());
      forEachRun(program.initial[i].layout, sizes, block, [&](int64_t offset, int64_t count) {
        float *dst = carryIn[i].data() + offset;
        if (start) {
          std::memcpy(dst, static_cast<float *>(start->data) + b * n + offset, count * sizeof(float));
          moved.read += count * static_cast<int64_t>(sizeof(float));
        } else {
          std::fill(dst, dst + count, 0.0f);
        }
      });
    }
    for (int64_t k = 0; k < chunks; ++k) {
      int64_t c = run.reverseChunks ? chunks - 1 - k : k;
      int64_t t0 = c * run.chunk, steps = std::min(run.chunk, run.steps - t0);
      Halide::ParamMap params;
      std::vector<Halide::Buffer<>> keep;  // the ParamMap refers to these buffers
      auto bind = [&](const BoundInput &in, void *base, int64_t offset, int64_t windowSteps) {
        keep.push_back(window(in.layout, base, offset, windowSteps, sizes, block));
        params.set(in.param, keep.back());
      };
      keep.reserve(program.inputs.size() + program.params.size() + program.initial.size() + program.checkpoints.size());
      for (const BoundInput &in : program.inputs) {
        bind(in, run.stepInputs.at(in.layout.name).data, (b * run.steps + t0) * product(in.layout.dims, sizes), steps);
        moved.read += bytesOf(keep.back());
      }
      for (const BoundInput &p : program.params) bind(p, run.params.at(p.layout.name).data, 0, 0);
      for (size_t i = 0; i < program.initial.size(); ++i) bind(program.initial[i], carryIn[i].data(), 0, 0);
      for (const BoundInput &ck : program.checkpoints) {
        const std::vector<float> &all = run.checkpointsIn->at(ck.layout.name);
        bind(ck, const_cast<float *>(all.data()), (b * chunks + c) * product(ck.layout.dims, sizes), 0);
        moved.read += bytesOf(keep.back());
      }
      if (run.checkpointsOut)
        for (size_t i = 0; i < program.initial.size(); ++i) {
          float *slot = (*run.checkpointsOut)[program.initial[i].layout.name].data() +
                        (b * chunks + c) * static_cast<int64_t>(carryIn[i].size());
          forEachRun(program.initial[i].layout, sizes, block, [&](int64_t offset, int64_t count) {
            std::memcpy(slot + offset, carryIn[i].data() + offset, count * sizeof(float));
            moved.written += count * static_cast<int64_t>(sizeof(float));
          });
        }

      std::vector<Halide::Buffer<>> results;
      for (size_t i = 0; i < program.outputs.size(); ++i) {
        const ProducedOutput &out = program.outputs[i];
        int64_t inner = product(out.layout.dims, sizes);
        bool partial = !blockPartials[i].empty();
        void *base = partial ? blockPartials[i].data() : run.stepOutputs.at(out.layout.name).data;
        int64_t row = partial ? (u % split.blocks) * run.batch + b : b;
        results.push_back(window(out.layout, base, (row * run.steps + t0) * inner, steps, sizes, block));
        moved.written += bytesOf(results.back());
      }
      for (size_t i = 0; i < program.finals.size(); ++i)
        results.push_back(window(program.finals[i].layout, carryOut[i].data(), 0, 0, sizes, block));
      for (size_t i = 0; i < program.accums.size(); ++i)
        results.push_back(window(program.accums[i].layout, partial[i].data(), 0, 0, sizes, block));
      program.pipeline.realize(&pool, Halide::Realization(results), program.target, params);

      for (size_t i = 0; i < program.accums.size(); ++i) {
        std::vector<double> &total = accumTotals[program.accums[i].layout.name];
        forEachRun(program.accums[i].layout, sizes, block, [&](int64_t offset, int64_t count) {
          for (int64_t j = offset; j < offset + count; ++j) total[j] += partial[i][j];
        });
      }
      // The states after this chunk start the next one (a program's finals are its states).
      for (size_t i = 0; i < program.finals.size(); ++i) std::swap(carryIn[i], carryOut[i]);
    }
    for (size_t i = 0; i < program.finals.size(); ++i) {
      const HostView *fin = find(run.finals, program.finals[i].layout.name);
      if (!fin) continue;
      int64_t n = static_cast<int64_t>(carryIn[i].size());
      forEachRun(program.finals[i].layout, sizes, block, [&](int64_t offset, int64_t count) {
        std::memcpy(static_cast<float *>(fin->data) + b * n + offset, carryIn[i].data() + offset, count * sizeof(float));
        moved.written += count * static_cast<int64_t>(sizeof(float));
      });
    }
  }
}

}  // namespace

Halide::Buffer<> hostBuffer(const PortLayout &layout, void *base, int64_t steps, const std::vector<int64_t> &sizes) {
  return window(layout, base, 0, steps, sizes, Block{});
}

ChunkProgram &SharedProgram::get() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!program_) {
    auto begin = std::chrono::steady_clock::now();
    auto program = std::make_unique<ChunkProgram>(build_());
    program->pipeline.compile_jit(program->target);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    compileSeconds_ += seconds;
    if (verbose_)
      std::fprintf(stderr, "scanforge: JIT-compiled the %s CPU program in %.2f s\n", label_.c_str(), seconds);
    program_ = std::move(program);
  }
  return *program_;
}

void runChunked(SharedProgram &shared, const ChunkedRun &run) {
  ChunkProgram &program = shared.get();
  ChannelSplit split = splitChannels(program, run, shared.workers());
  int workers = static_cast<int>(std::min<int64_t>(shared.workers(), run.batch * split.blocks));
  int64_t chunks = (run.steps + run.chunk - 1) / run.chunk;
  if (run.checkpointsOut)
    for (const BoundInput &s : program.initial)
      (*run.checkpointsOut)[s.layout.name].assign(run.batch * chunks * product(s.layout.dims, run.dimSizes), 0.0f);

  // Outputs that each block writes a partial of (only when there are several blocks) get a copy
  // per block; the copies are added in block order, so the result does not depend on the threads.
  std::vector<std::vector<float>> blockPartials(program.outputs.size());
  for (size_t i = 0; i < program.outputs.size(); ++i)
    if (split.blocks > 1 && partialOutput(program.outputs[i], split.dim))
      blockPartials[i].assign(split.blocks * run.batch * run.steps * product(program.outputs[i].layout.dims, run.dimSizes), 0.0f);

  std::vector<std::map<std::string, std::vector<double>>> totals(workers);
  for (auto &t : totals)
    for (const ProducedOutput &acc : program.accums) t[acc.layout.name].assign(product(acc.layout.dims, run.dimSizes), 0.0);
  std::vector<std::exception_ptr> errors(workers);
  std::vector<Traffic> moved(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      try {
        runWorker(program, run, split, w, workers, totals[w], blockPartials, moved[w]);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  for (std::thread &t : threads) t.join();
  for (auto &e : errors)
    if (e) std::rethrow_exception(e);
  Traffic total;
  for (const Traffic &t : moved) total.read += t.read, total.written += t.written;
  for (const BoundInput &p : program.params)  // read once per call (chunks reread them from cache)
    total.read += product(p.layout.dims, run.dimSizes) * static_cast<int64_t>(elementSize(p.layout));

  for (size_t i = 0; i < program.outputs.size(); ++i) {
    if (blockPartials[i].empty()) continue;
    float *dst = static_cast<float *>(run.stepOutputs.at(program.outputs[i].layout.name).data);
    int64_t n = static_cast<int64_t>(blockPartials[i].size()) / split.blocks;
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < split.blocks; ++k) sum += blockPartials[i][k * n + j];
      dst[j] = static_cast<float>(sum);
    }
    total.read += static_cast<int64_t>(blockPartials[i].size() * sizeof(float));
    total.written += n * static_cast<int64_t>(sizeof(float));
  }
  for (const ProducedOutput &acc : program.accums) {
    const HostView *out = find(run.accums, acc.layout.name);
    if (!out) continue;
    float *dst = static_cast<float *>(out->data);
    std::vector<double> sum(product(acc.layout.dims, run.dimSizes), 0.0);
    for (auto &t : totals)
      for (size_t j = 0; j < sum.size(); ++j) sum[j] += t.at(acc.layout.name)[j];
    for (size_t j = 0; j < sum.size(); ++j) dst[j] = static_cast<float>(sum[j]);
    total.written += static_cast<int64_t>(sum.size() * sizeof(float));
  }
  if (run.traffic) *run.traffic = total;
}

}  // namespace scanforge::cpu
