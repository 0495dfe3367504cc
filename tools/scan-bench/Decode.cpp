#include "tools/scan-bench/Decode.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <random>

#include "compiler/api/Scanforge.h"
#include "tools/scan-bench/StableParameters.h"

// Every C++ heap allocation of the process, counted (the replacement serves libHalide's too).
namespace {
std::atomic<int64_t> allocations{0};
}  // namespace

void *operator new(size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (libHalide uses it): left to the sanitizer's own, its blocks reached the
// free() below, which AddressSanitizer reports as an alloc-dealloc mismatch.
void *operator new(size_t size, const std::nothrow_t &) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size ? size : 1);
}
// GCC 12 takes the replacement pair for a mismatch (free() of what `new` returned); it is the pair.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace scanforge::bench {

void decodeLatency(const std::string &scanFile, int64_t channels, const std::vector<int64_t> &batches, int64_t tokens) {
  Recurrence rec = compile(scanFile);
  const Signature &sig = rec.signature();
  std::printf("| recurrence | B | dims | µs per token (median) | best | allocations per step |\n|---|---|---|---|---|---|\n");
  for (int64_t B : batches) {
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> dist(0.05f, 1.0f);
    std::vector<std::vector<float>> storage;
    auto view = [&](std::vector<int64_t> shape) {
      int64_t n = 1;
      for (int64_t s : shape) n *= s;
      storage.emplace_back(static_cast<size_t>(n));
      for (float &v : storage.back()) v = dist(gen);
      return TensorView{storage.back().data(), std::move(shape), ElemType::F32};
    };
    auto dims = [&](const Port &p, bool batch) {
      std::vector<int64_t> shape;
      if (batch) shape.push_back(B);
      shape.insert(shape.end(), p.dims.size(), channels);
      return shape;
    };
    storage.reserve(sig.inputs.size() + sig.params.size() + sig.states.size() + sig.outputs.size());
    TensorViews inputs, params, states, outputs;
    for (const Port &p : sig.inputs) inputs[p.name] = view(dims(p, true));
    for (const Port &p : sig.params) params[p.name] = view(dims(p, false));
    drawWithinDecayConditions(rec, params);
    for (const Port &p : sig.states) states[p.name] = view(dims(p, true));
    for (const Port &p : sig.outputs) outputs[p.name] = view(dims(p, true));
    rec.step(inputs, params, states, outputs);  // JIT and buffers on the first step
    std::vector<double> us;
    us.reserve(static_cast<size_t>(tokens));
    int64_t before = allocations.load();
    for (int64_t t = 0; t < tokens; ++t) {
      auto begin = std::chrono::steady_clock::now();
      rec.step(inputs, params, states, outputs);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin).count());
    }
    double perStep = static_cast<double>(allocations.load() - before) / static_cast<double>(tokens);
    std::sort(us.begin(), us.end());
    std::printf("| %s | %lld | %lld | %.1f | %.1f | %.1f |\n", sig.name.c_str(), static_cast<long long>(B),
                static_cast<long long>(channels), us[us.size() / 2], us.front(), perStep);
  }
}

}  // namespace scanforge::bench
