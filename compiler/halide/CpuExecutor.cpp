#include "compiler/halide/CpuExecutor.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace scanforge::cpu {
namespace {

int64_t product(const std::vector<int> &dims, const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int d : dims) n *= sizes[d];
  return n;
}

size_t elementSize(const PortLayout &layout) { return layout.bf16 ? 2 : 4; }

// A Halide buffer over part of a host tensor: dims innermost first, then (for per-step ports) time.
Halide::Buffer<> window(const PortLayout &layout, void *base, int64_t offsetElements, int64_t steps,
                        const std::vector<int64_t> &sizes) {
  std::vector<halide_dimension_t> dims;
  int64_t stride = 1;
  for (auto it = layout.dims.rbegin(); it != layout.dims.rend(); ++it) {
    dims.push_back({0, static_cast<int32_t>(sizes[*it]), static_cast<int32_t>(stride), 0});
    stride *= sizes[*it];
  }
  if (layout.perStep) dims.push_back({0, static_cast<int32_t>(steps), static_cast<int32_t>(stride), 0});
  halide_type_t type = layout.bf16 ? halide_type_t(halide_type_bfloat, 16) : halide_type_t(halide_type_float, 32);
  char *data = static_cast<char *>(base) + offsetElements * static_cast<int64_t>(elementSize(layout));
  return Halide::Buffer<>(type, data, static_cast<int>(dims.size()), dims.data());
}

const HostView *find(const HostViews &views, const std::string &name) {
  auto it = views.find(name);
  return it == views.end() ? nullptr : &it->second;
}

// One worker: batch elements b = first, first + stride, ...
void runWorker(ChunkProgram &program, const ChunkedRun &run, int64_t first, int64_t stride,
               std::map<std::string, std::vector<double>> &accumTotals) {
  const std::vector<int64_t> &sizes = run.dimSizes;
  int64_t chunks = (run.steps + run.chunk - 1) / run.chunk;
  // Carried states (in and out of a chunk) and per-chunk parameter-gradient partials.
  std::vector<std::vector<float>> carryIn(program.initial.size()), carryOut(program.finals.size());
  std::vector<std::vector<float>> partial(program.accums.size());
  for (size_t i = 0; i < program.initial.size(); ++i) carryIn[i].resize(product(program.initial[i].layout.dims, sizes));
  for (size_t i = 0; i < program.finals.size(); ++i) carryOut[i].resize(product(program.finals[i].layout.dims, sizes));
  for (size_t i = 0; i < program.accums.size(); ++i) partial[i].resize(product(program.accums[i].layout.dims, sizes));

  for (int64_t b = first; b < run.batch; b += stride) {
    for (size_t i = 0; i < program.initial.size(); ++i) {
      const HostView *start = find(run.start, program.initial[i].layout.name);
      int64_t n = static_cast<int64_t>(carryIn[i].size());
      if (start) std::memcpy(carryIn[i].data(), static_cast<float *>(start->data) + b * n, n * sizeof(float));
      else std::fill(carryIn[i].begin(), carryIn[i].end(), 0.0f);
    }
    for (int64_t k = 0; k < chunks; ++k) {
      int64_t c = run.reverseChunks ? chunks - 1 - k : k;
      int64_t t0 = c * run.chunk, steps = std::min(run.chunk, run.steps - t0);
      Halide::ParamMap params;
      std::vector<Halide::Buffer<>> keep;  // the ParamMap refers to these buffers
      auto bindStep = [&](const BoundInput &in, const HostView &view) {
        int64_t inner = product(in.layout.dims, sizes);
        keep.push_back(window(in.layout, view.data, (b * run.steps + t0) * inner, steps, sizes));
        params.set(in.param, keep.back());
      };
      keep.reserve(program.inputs.size() + program.params.size() + program.initial.size() + program.checkpoints.size());
      for (const BoundInput &in : program.inputs) bindStep(in, run.stepInputs.at(in.layout.name));
      for (const BoundInput &p : program.params) {
        keep.push_back(window(p.layout, run.params.at(p.layout.name).data, 0, 0, sizes));
        params.set(p.param, keep.back());
      }
      for (size_t i = 0; i < program.initial.size(); ++i) {
        keep.push_back(window(program.initial[i].layout, carryIn[i].data(), 0, 0, sizes));
        params.set(program.initial[i].param, keep.back());
      }
      for (const BoundInput &ck : program.checkpoints) {
        const std::vector<float> &all = run.checkpointsIn->at(ck.layout.name);
        int64_t n = product(ck.layout.dims, sizes);
        keep.push_back(window(ck.layout, const_cast<float *>(all.data()), (b * chunks + c) * n, 0, sizes));
        params.set(ck.param, keep.back());
      }
      if (run.checkpointsOut)
        for (size_t i = 0; i < program.initial.size(); ++i) {
          std::vector<float> &all = (*run.checkpointsOut)[program.initial[i].layout.name];
          int64_t n = static_cast<int64_t>(carryIn[i].size());
          std::memcpy(all.data() + (b * chunks + c) * n, carryIn[i].data(), n * sizeof(float));
        }

      std::vector<Halide::Buffer<>> results;
      for (const ProducedOutput &out : program.outputs) {
        int64_t inner = product(out.layout.dims, sizes);
        results.push_back(window(out.layout, run.stepOutputs.at(out.layout.name).data, (b * run.steps + t0) * inner,
                                 steps, sizes));
      }
      for (size_t i = 0; i < program.finals.size(); ++i) results.push_back(window(program.finals[i].layout, carryOut[i].data(), 0, 0, sizes));
      for (size_t i = 0; i < program.accums.size(); ++i) results.push_back(window(program.accums[i].layout, partial[i].data(), 0, 0, sizes));
      program.pipeline.realize(Halide::Realization(results), program.target, params);

      for (size_t i = 0; i < program.accums.size(); ++i) {
        std::vector<double> &total = accumTotals[program.accums[i].layout.name];
        for (size_t j = 0; j < partial[i].size(); ++j) total[j] += partial[i][j];
      }
      // The states after this chunk start the next one (a program's finals are its states).
      for (size_t i = 0; i < program.finals.size(); ++i) std::swap(carryIn[i], carryOut[i]);
    }
    for (size_t i = 0; i < program.finals.size(); ++i) {
      const HostView *fin = find(run.finals, program.finals[i].layout.name);
      int64_t n = static_cast<int64_t>(carryIn[i].size());
      if (fin) std::memcpy(static_cast<float *>(fin->data) + b * n, carryIn[i].data(), n * sizeof(float));
    }
  }
}

}  // namespace

ChunkProgram &ProgramPool::get(int copy) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!programs_[copy]) {
    auto begin = std::chrono::steady_clock::now();
    auto program = std::make_unique<ChunkProgram>(build_());
    program->pipeline.compile_jit(program->target);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    compileSeconds_ += seconds;
    if (verbose_)
      std::fprintf(stderr, "scanforge: JIT-compiled the %s CPU program (copy %d of %d) in %.2f s\n", label_.c_str(),
                   copy + 1, copies(), seconds);
    programs_[copy] = std::move(program);
  }
  return *programs_[copy];
}

void runChunked(ProgramPool &pool, const ChunkedRun &run) {
  int workers = static_cast<int>(std::min<int64_t>(pool.copies(), run.batch));
  std::vector<ChunkProgram *> programs;
  for (int w = 0; w < workers; ++w) programs.push_back(&pool.get(w));
  // The program's states are its finals, in the same order as its initial values.
  const ChunkProgram &layout = *programs.front();
  int64_t chunks = (run.steps + run.chunk - 1) / run.chunk;
  if (run.checkpointsOut)
    for (const BoundInput &s : layout.initial)
      (*run.checkpointsOut)[s.layout.name].assign(run.batch * chunks * product(s.layout.dims, run.dimSizes), 0.0f);

  std::vector<std::map<std::string, std::vector<double>>> totals(workers);
  for (auto &t : totals)
    for (const ProducedOutput &acc : layout.accums) t[acc.layout.name].assign(product(acc.layout.dims, run.dimSizes), 0.0);
  std::vector<std::exception_ptr> errors(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      try {
        runWorker(*programs[w], run, w, workers, totals[w]);
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  for (std::thread &t : threads) t.join();
  for (auto &e : errors)
    if (e) std::rethrow_exception(e);

  for (const ProducedOutput &acc : layout.accums) {
    const HostView *out = find(run.accums, acc.layout.name);
    if (!out) continue;
    float *dst = static_cast<float *>(out->data);
    std::vector<double> sum(product(acc.layout.dims, run.dimSizes), 0.0);
    for (auto &t : totals)
      for (size_t j = 0; j < sum.size(); ++j) sum[j] += t.at(acc.layout.name)[j];
    for (size_t j = 0; j < sum.size(); ++j) dst[j] = static_cast<float>(sum[j]);
  }
}

}  // namespace scanforge::cpu
