// scan-bench: times compiled recurrences on the CPU and reports, measured side by side in one run,
// the achieved bandwidth on ideal bytes against a STREAM-style copy, and the time against PyTorch
// CPU running the paper's log-space minGRU (paper 000, B.3; docs/architecture.md, "Papers") on the
// same shapes.
//
// Ideal bytes: forward = inputs read once + outputs written once; backward = inputs and output
// gradients read once + input gradients written once (parameters and states are negligible).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include <Halide.h>

#include "compiler/api/Scanforge.h"
#include "models/layers/SequenceModel.h"
#include "runtime/core/Ops.h"
#include "runtime/core/Shape.h"
#include "tools/common/JsonCommand.h"
#include "tools/scan-bench/Decode.h"
#include "tools/scan-bench/RowOrder.h"
#include "tools/scan-bench/StableParameters.h"

namespace {

using namespace scanforge;
namespace config = scanforge::config;
using Clock = std::chrono::steady_clock;

// The best of `repeats` timings after a warm-up, as STREAM reports (the machine may be shared).
template <typename F>
double timeMs(F &&f) {
  auto begin = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
}

template <typename F>
double bestMs(int repeats, F &&f) {
  f();  // warm-up (and JIT compilation on first use)
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) best = std::min(best, timeMs(f));
  return best;
}

// STREAM's "copy" kernel, a[i] = b[i], split over the threads; counts bytes read + written as
// STREAM does. (Built so that the compiler cannot turn the loop into memcpy, whose non-temporal
// stores would not be what the recurrences' stores are.)
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void copyLoop(float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i];
}

void parallelCopy(float *a, const float *b, size_t n, int threads) {
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([=] {
      size_t begin = n * w / threads, end = n * (w + 1) / threads;
      copyLoop(a + begin, b + begin, end - begin);
    });
  for (auto &t : pool) t.join();
}

// The copy in the work units of a run cut into channel blocks: unit u = (batch element u / blocks,
// block u % blocks) copies its block of every row ([B, rows, channels] row-major), units u = w,
// w + threads, ... on thread w, as the CPU backend's executor deals them out. Rows of a block are
// `width` floats out of every `channels`: a strided stream, which this pattern measures.
void blockedCopy(float *a, const float *b, int64_t batch, int64_t rows, int64_t channels, int64_t width, int threads) {
  int64_t blocks = (channels + width - 1) / width;
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([=] {
      for (int64_t u = w; u < batch * blocks; u += threads) {
        int64_t first = (u % blocks) * width, count = std::min(width, channels - first);
        for (int64_t r = 0; r < rows; ++r) {
          size_t offset = static_cast<size_t>(((u / blocks) * rows + r) * channels + first);
          copyLoop(a + offset, b + offset, static_cast<size_t>(count));
        }
      }
    });
  for (auto &t : pool) t.join();
}

// Exponentials per second on this CPU, all threads, on cache-resident data: Halide's fast_exp (about
// 2^-18 relative, cheaper than the backend's own exp, which is accurate to about 1 ulp), argument
// clamped as the backend does. The floor it sets is therefore a lower bound.
double expRatePerSecond(int threads, int repeats) {
  const int n = 1 << 14;  // 64 KiB per thread: in cache
  Halide::ImageParam in(Halide::Float(32), 1);
  Halide::Var x, w;
  Halide::RDom r(0, 64);  // 64 dependent-free passes per element keep the loads out of the way
  Halide::Func f;
  f(x, w) = 0.0f;
  f(x, w) += Halide::fast_exp(Halide::clamp(in(x) + Halide::cast<float>(r.x) * 1e-3f, -87.0f, 88.0f));
  Halide::Target target = Halide::get_jit_target_from_environment().with_feature(Halide::Target::NoAsserts);
  int lanes = 32;  // per loop iteration: the fastest on Zen 4 (8.6-8.9 G/s on 2 threads, 8.5 with 16)
  f.parallel(w).vectorize(x, lanes);
  f.update().reorder(x, r.x, w).parallel(w).vectorize(x, lanes);
  f.compile_jit(target);
  Halide::Buffer<float> input(n), output(n, threads);
  for (int i = 0; i < n; ++i) input(i) = -1.0f + 2.0f * i / n;
  in.set(input);
  double ms = bestMs(repeats, [&] { f.realize(output, target); });
  return double(n) * 64 * threads / (ms * 1e-3);
}

// Exponentials one forward and one backward of the selective SSM cannot avoid: exp(delta * A) for
// every (b, t, d, n), computed once in each pass (the backward shares it between its recomputed
// forward scan and its adjoint scan).
double selectiveSsmExps(int64_t B, int64_t T, int64_t D, int64_t N) { return double(B) * T * D * N; }

// Every tensor starts on a page of its own: where the allocator places a buffer depends on what
// the process allocated before (the compiler's, the JIT's), and with heap-placed buffers two builds
// of one source measured the copy on them 1.8x apart, run after run (42-44 against 23.6 GB/s; 32-34
// for both with page-aligned ones). The cause was not isolated; the offsets between the buffers a
// loop streams through are the difference that remains fixed now.
struct Storage {
  struct Free {
    void operator()(float *p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<float[], Free>> blocks;
  TensorView make(const std::vector<int64_t> &shape, std::mt19937 &gen, bool random) {
    constexpr size_t kPage = 4096;
    size_t n = static_cast<size_t>(numelOf(shape, "scan-bench"));
    size_t bytes = (std::max<size_t>(n, 1) * sizeof(float) + kPage - 1) / kPage * kPage;
    float *data = static_cast<float *>(std::aligned_alloc(kPage, bytes));
    if (!data) throw std::bad_alloc();
    blocks.emplace_back(data);
    std::fill(data, data + n, 0.0f);
    if (random) {
      std::normal_distribution<float> dist(0.0f, 1.0f);
      for (size_t i = 0; i < n; ++i) data[i] = dist(gen);
    }
    return {data, shape, ElemType::F32};
  }
};

struct Result {
  std::string name, shape;
  double forwardMs, forwardBackwardMs, forwardBytes, backwardBytes, jitSeconds;
  double copyGBs;  // STREAM-style copy on the benchmark's own tensors, timed between its passes
  // Bytes the calls moved (Traffic): a forward alone, and a forward that saves for the backward
  // plus the backward.
  double forwardMoved, forwardBackwardMoved;
  Recurrence::ChannelBlocks blocks;  // the forward's cut of the channels
  double blockedCopyGBs = 0;         // the copy in the forward's blocks (when there are several)
};

Result benchmark(const std::string &model, const std::map<std::string, int64_t> &dims, int64_t B, int64_t T,
                 const CompileOptions &options, int repeats) {
  Recurrence rec = compile(model, options);
  const Signature &sig = rec.signature();
  std::mt19937 gen(42);
  Storage storage;
  Shapes shapes;
  shapes.batch = B;
  shapes.steps = T;
  shapes.dims = dims;
  TensorViews inputs, params, outputs, outputGrads, inputGrads, paramGrads;
  double forwardBytes = 0, backwardBytes = 0;
  auto bytes = [](const std::vector<int64_t> &shape) { return 4.0 * static_cast<double>(numelOf(shape, "scan-bench")); };
  for (const Port &p : sig.inputs) {
    inputs[p.name] = storage.make(shapes.step(p), gen, true);
    inputGrads[p.name] = storage.make(shapes.step(p), gen, false);
    forwardBytes += bytes(shapes.step(p));
    backwardBytes += 2 * bytes(shapes.step(p));  // read the input, write its gradient
  }
  for (const Port &p : sig.params) {
    params[p.name] = storage.make(shapes.param(p), gen, true);
    paramGrads[p.name] = storage.make(shapes.param(p), gen, false);
  }
  bench::drawWithinDecayConditions(rec, params);
  for (const Port &p : sig.outputs) {
    outputs[p.name] = storage.make(shapes.step(p), gen, false);
    outputGrads[p.name] = storage.make(shapes.step(p), gen, true);
    forwardBytes += bytes(shapes.step(p));
    backwardBytes += bytes(shapes.step(p));
  }
  SavedStates saved;
  Traffic forwardSaving, backward, forwardAlone;
  auto begin = Clock::now();
  rec.forward(inputs, params, {}, outputs, {}, &saved, &forwardSaving);
  rec.backward(inputs, params, saved, outputGrads, {}, inputGrads, paramGrads, {}, &backward);
  double jit = std::chrono::duration<double>(Clock::now() - begin).count();
  rec.forward(inputs, params, {}, outputs, {}, nullptr, &forwardAlone);
  auto total = [](const Traffic &t) { return static_cast<double>(t.bytesRead + t.bytesWritten); };
  // The copy runs on the pages the passes use (each input into its gradient's buffer), in turn
  // with them: the machine's memory rate varies from one process (and allocation) to the next and
  // over time, and a ratio of rates measured apart would carry that variation.
  double copyBytes = 0;
  auto copy = [&] {
    for (const Port &p : sig.inputs) {
      const TensorView &from = inputs.at(p.name), &to = inputGrads.at(p.name);
      size_t n = static_cast<size_t>(bytes(shapes.step(p)) / 4);
      parallelCopy(static_cast<float *>(to.data), static_cast<const float *>(from.data), n, options.threads);
    }
  };
  for (const Port &p : sig.inputs) copyBytes += 2 * bytes(shapes.step(p));
  // The same copy in the forward's channel blocks (ports whose rows run along the cut dimension;
  // the others are copied whole, as the blocks read them).
  Recurrence::ChannelBlocks blocks = rec.channelBlocksFor(shapes);
  auto copyInBlocks = [&] {
    for (const Port &p : sig.inputs) {
      const TensorView &from = inputs.at(p.name), &to = inputGrads.at(p.name);
      std::vector<int64_t> shape = shapes.step(p);
      int64_t n = numelOf(shape, "scan-bench");
      if (p.dims.empty() || p.dims.back() != blocks.dim)
        parallelCopy(static_cast<float *>(to.data), static_cast<const float *>(from.data), static_cast<size_t>(n), options.threads);
      else
        blockedCopy(static_cast<float *>(to.data), static_cast<const float *>(from.data), B, n / (B * shape.back()),
                    shape.back(), blocks.width, options.threads);
    }
  };
  auto forward = [&] { rec.forward(inputs, params, {}, outputs, {}, nullptr); };
  auto forwardBackward = [&] {
    rec.forward(inputs, params, {}, outputs, {}, &saved);
    rec.backward(inputs, params, saved, outputGrads, {}, inputGrads, paramGrads, {});
  };
  copy();  // warm-up (the passes were run above)
  double copyMs = 1e300, blockedMs = 1e300, fwd = 1e300, fwdBwd = 1e300;
  for (int i = 0; i < repeats; ++i) {
    copyMs = std::min(copyMs, timeMs(copy));
    if (blocks.blocks > 1) blockedMs = std::min(blockedMs, timeMs(copyInBlocks));
    fwd = std::min(fwd, timeMs(forward));
    copyMs = std::min(copyMs, timeMs(copy));
    if (blocks.blocks > 1) blockedMs = std::min(blockedMs, timeMs(copyInBlocks));
    fwdBwd = std::min(fwdBwd, timeMs(forwardBackward));
  }
  std::ostringstream shape;
  shape << "B=" << B << " T=" << T;
  for (auto &[d, n] : dims) shape << " " << d << "=" << n;
  return {sig.name,      shape.str(),   fwd, fwdBwd, forwardBytes, backwardBytes, jit, copyBytes / (copyMs * 1e6),
          total(forwardAlone), total(forwardSaving) + total(backward), blocks,
          blocks.blocks > 1 ? copyBytes / (blockedMs * 1e6) : 0.0};
}

// Papers 000/003's speed comparison: one training step (forward + backward of a next-token loss)
// of the block model with each mixer, at sequence lengths T; the sequential GRU and LSTM
// backpropagate through time.
void trainingStepComparison(const std::string &models, int64_t B, int64_t embed, int64_t layers,
                            const std::vector<int64_t> &lengths, int repeats) {
  std::printf("\ntraining step (forward + backward), B=%lld, %lld layers, embedding %lld, expansion 2, no conv/MLP:\n\n",
              static_cast<long long>(B), static_cast<long long>(layers), static_cast<long long>(embed));
  std::printf("| T | minGRU (ms) | minLSTM (ms) | GRU (ms) | LSTM (ms) | GRU / minGRU | LSTM / minLSTM |\n|---|---|---|---|---|---|---|\n");
  for (int64_t T : lengths) {
    std::map<std::string, double> ms;
    for (const char *mixer : {"mingru", "minlstm", "gru", "lstm"}) {
      config::ModelConfig m;
      m.recurrence = mixer;
      m.layers = layers;
      m.embed = embed;
      m.expansion = 2;
      m.conv = false;
      m.mlp = false;
      models::SequenceModel model(m, {true, 65, 65}, 1, models);
      Generator gen(2);
      std::vector<int64_t> ids(static_cast<size_t>(B * T)), targets(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = gen.uniformInt(65), targets[i] = gen.uniformInt(65);
      Tensor input = Tensor::fromData<int64_t>({B, T}, ids), target = Tensor::fromData<int64_t>({B, T}, targets);
      bool sequential = std::string(mixer) == "gru" || std::string(mixer) == "lstm";
      ms[mixer] = bestMs(sequential ? 1 : repeats, [&] {
        backward(crossEntropy(model.forward(input, true, gen), target));
        for (const models::ModelParam &p : model.parameters()) p.param.variable.zeroGrad();
      });
    }
    std::printf("| %lld | %.1f | %.1f | %.1f | %.1f | %.1f× | %.1f× |\n", static_cast<long long>(T), ms["mingru"],
                ms["minlstm"], ms["gru"], ms["lstm"], ms["gru"] / ms["mingru"], ms["lstm"] / ms["minlstm"]);
  }
}

nlohmann::json runPeer(const std::string &python, const std::string &script, int64_t B, int64_t T, int64_t D,
                       int repeats, int threads) {
  std::string error;
  nlohmann::json result = scanforge::tools::runJsonCommand(python + " " + script + " " + std::to_string(B) + " " +
                                                               std::to_string(T) + " " + std::to_string(D) + " " +
                                                               std::to_string(repeats) + " " + std::to_string(threads),
                                                           error);
  if (!error.empty()) std::fprintf(stderr, "scan-bench: the PyTorch peer failed (%s)\n", error.c_str());
  return result.is_discarded() ? nlohmann::json() : result;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"scan-bench: CPU benchmarks of compiled recurrences against copy bandwidth and PyTorch", "scan-bench"};
  std::string models = std::string(SCANFORGE_SOURCE_DIR) + "/models";
  int64_t B = 8, T = 4096, D = 512, N = 16;
  int repeats = 5, threads = 0;
  CompileOptions options;
  std::string only;
  bool peers = true;
  std::string python = "/usr/bin/python3";
  app.add_option("--models", models, "directory holding mingru.scan and selective_ssm.scan");
  app.add_option("-B", B, "batch");
  app.add_option("-T", T, "sequence length");
  app.add_option("-D", D, "channels");
  app.add_option("-N", N, "state size of selective_ssm");
  app.add_option("--repeats", repeats, "timed repetitions (the best is reported, as STREAM does)");
  app.add_option("--threads", threads, "worker threads (0: one per core)");
  app.add_flag("!--no-peers", peers, "skip the PyTorch peer");
  app.add_option("--chunk", options.chunk, "time steps per chunk (0: by rule)");
  app.add_option("--channel-block", options.channelBlock, "channels per work unit when the batch is small (0: by rule)");
  app.add_option("--only", only, "run only this model of --models (default: mingru and selective_ssm)");
  bool trainingStep = false;
  app.add_flag("--training-step", trainingStep,
               "instead: one training step of minGRU/minLSTM vs sequential GRU/LSTM models at T = 512 and 4096");
  app.add_option("--python", python, "Python with torch (Debian's python3-torch)");
  bool decode = false;
  int64_t tokens = 2000;
  app.add_flag("--decode", decode,
               "instead: per-token latency of decoding (Recurrence::step) of --only (default mingru), -D channels, "
               "batch 1 and 64");
  app.add_option("--tokens", tokens, "with --decode: timed steps per batch size");
  bool rowOrder = false;
  app.add_flag("--row-order", rowOrder,
               "instead: how fast one thread reads rows of -D floats, rows and each row ascending or descending");
  CLI11_PARSE(app, argc, argv);
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.threads = threads;

  try {
    if (rowOrder) {
      bench::rowOrderRates(D, repeats);
      return 0;
    }
    if (decode) {
      bench::decodeLatency(models + "/" + (only.empty() ? "mingru" : only) + ".scan", D, {1, 64}, tokens);
      return 0;
    }
    if (trainingStep) {
      trainingStepComparison(models, 8, 64, 1, {512, 4096}, repeats);
      return 0;
    }
    double expRate = expRatePerSecond(threads, repeats);
    std::vector<Result> results;
    std::map<std::string, int64_t> dims = {{"d", D}, {"e", D}, {"n", N}, {"k", N}};
    for (const std::string &model : only.empty() ? std::vector<std::string>{"mingru", "selective_ssm"}
                                                 : std::vector<std::string>{only}) {
      Recurrence probe = compile(models + "/" + model + ".scan");
      std::map<std::string, int64_t> used;
      for (const auto *ports : {&probe.signature().inputs, &probe.signature().params})
        for (const Port &p : *ports)
          for (const std::string &d : p.dims) used[d] = dims.count(d) ? dims.at(d) : D;
      results.push_back(benchmark(models + "/" + model + ".scan", used, B, T, options, repeats));
    }
    nlohmann::json peer = peers ? runPeer(python, std::string(SCANFORGE_SOURCE_DIR) + "/tools/scan-bench/pytorch_peer.py",
                                          B, T, D, repeats, threads)
                                : nullptr;
    std::printf("machine: %d threads; copy: STREAM-style, on each benchmark's own tensors, timed in turn with its passes\n\n",
                threads);
    std::printf("| recurrence | shape | pass | time (ms) | GB/s on ideal bytes | copy (GB/s) | of copy | moved / ideal bytes "
                "| time / (moved / copy) | bound by | PyTorch log-space (ms) | speed-up |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const Result &r : results) {
      double fwdGB = r.forwardBytes / (r.forwardMs * 1e6);
      double allGB = (r.forwardBytes + r.backwardBytes) / (r.forwardBackwardMs * 1e6);
      bool isMingru = r.name == "mingru" && peer.is_object();
      auto peerCell = [&](const char *key, double ours) {
        if (!isMingru) return std::string("| – | – |");
        char cell[96];
        std::snprintf(cell, sizeof cell, "| %.1f | %.1f× |", peer[key].get<double>(), peer[key].get<double>() / ours);
        return std::string(cell);
      };
      // The memory floor is the bytes moved at the copy rate; a pass within 1.25x of it is bound by
      // memory, a slower one by its work per element in cache (docs/cpu.md).
      auto traffic = [&](double ms, double moved, double ideal) {
        double floorMs = moved / (r.copyGBs * 1e6);
        char cell[128];
        std::snprintf(cell, sizeof cell, "| %.3f | %.2f | %s ", moved / ideal, ms / floorMs,
                      ms <= 1.25 * floorMs ? "memory" : "work in cache");
        return std::string(cell);
      };
      std::printf("| %s | %s | forward | %.4g | %.2f | %.2f | %.0f%% %s%s\n", r.name.c_str(), r.shape.c_str(), r.forwardMs,
                  fwdGB, r.copyGBs, 100 * fwdGB / r.copyGBs, traffic(r.forwardMs, r.forwardMoved, r.forwardBytes).c_str(),
                  peerCell("forward_ms", r.forwardMs).c_str());
      std::printf("| %s | %s | forward+backward | %.4g | %.2f | %.2f | %.0f%% %s%s\n", r.name.c_str(), r.shape.c_str(),
                  r.forwardBackwardMs, allGB, r.copyGBs, 100 * allGB / r.copyGBs,
                  traffic(r.forwardBackwardMs, r.forwardBackwardMoved, r.forwardBytes + r.backwardBytes).c_str(),
                  peerCell("forward_backward_ms", r.forwardBackwardMs).c_str());
    }
    for (const Result &r : results)
      if (r.blocks.blocks > 1) {
        double fwdGB = r.forwardBytes / (r.forwardMs * 1e6);
        double allGB = (r.forwardBytes + r.backwardBytes) / (r.forwardBackwardMs * 1e6);
        std::printf("\n%s in %lld blocks of %lld channels of %s: copy in the same blocks %.2f GB/s (%.0f%% of the whole "
                    "rows' copy); forward at %.0f%%, forward+backward at %.0f%% of it\n",
                    r.name.c_str(), static_cast<long long>(r.blocks.blocks), static_cast<long long>(r.blocks.width),
                    r.blocks.dim.c_str(), r.blockedCopyGBs, 100 * r.blockedCopyGBs / r.copyGBs,
                    100 * fwdGB / r.blockedCopyGBs, 100 * allGB / r.blockedCopyGBs);
      }
    for (const Result &r : results)
      if (r.name == "selective_ssm") {
        double exps = selectiveSsmExps(B, T, D, N);
        double floorFwd = 1e3 * std::max(r.forwardBytes / (r.copyGBs * 1e9), exps / expRate);
        double floorAll = 1e3 * std::max((r.forwardBytes + r.backwardBytes) / (r.copyGBs * 1e9), 2 * exps / expRate);
        std::printf("\nselective_ssm floor max(bytes / copy bandwidth, exps / exp rate), exp rate %.2f G/s: "
                    "forward %.1f ms (measured %.1f×), forward+backward %.1f ms (measured %.1f×)\n",
                    expRate / 1e9, floorFwd, r.forwardMs / floorFwd, floorAll, r.forwardBackwardMs / floorAll);
      }
    std::printf("\nJIT (first forward + backward):");
    for (const Result &r : results) std::printf(" %s %.1f s;", r.name.c_str(), r.jitSeconds);
    if (peer.is_object()) std::printf(" PyTorch %s, %d threads", peer["torch"].get<std::string>().c_str(), threads);
    else if (peers) std::printf(" PyTorch peer unavailable (%s)", python.c_str());
    std::printf("\n");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "scan-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
