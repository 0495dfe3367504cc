// Helpers for the CUDA backend tests: model variants (bf16 ports), kernel packages made in memory
// from compiled modules, and the CPU emulation backend.
#pragma once

#include <memory>
#include <sstream>

#include "compiler/mlir/Target/Cuda/CudaEmitter.h"
#include "dsl/Printer.h"
#include "dsl/Sema.h"
#include "runtime/cuda/KernelPackage.h"
#include "tests/compiler/CompilerTestUtil.h"
#include "tools/gpu/emulator/EmulatedBackend.h"

namespace scanforge::test {

// The recurrences of `source` with every input and output stored as bf16.
inline std::string bf16Variant(const std::string &source) {
  dsl::SourceFile file("variant.scan", source);
  dsl::DiagnosticEngine diags(file);
  dsl::Module module;
  EXPECT_TRUE(dsl::parseAndCheck(file, diags, module));
  for (dsl::Recurrence &rec : module.recurrences) {
    for (dsl::Port &p : rec.inputs) p.type = dsl::ElemType::BF16;
    for (dsl::Port &p : rec.outputs) p.type = dsl::ElemType::BF16;
  }
  std::ostringstream out;
  dsl::printModule(out, module, /*annotate=*/false);
  return out.str();
}

struct ModelVariant {
  std::string name, source;
};
inline void PrintTo(const ModelVariant &v, std::ostream *os) { *os << v.name; }
inline std::string variantName(const ::testing::TestParamInfo<ModelVariant> &info) { return info.param.name; }

// Every model in models/, forward and reverse, with f32 and with bf16 inputs and outputs.
inline std::vector<ModelVariant> modelVariants() {
  std::vector<ModelVariant> out;
  for (const char *model : {"mingru", "minlstm", "selective_ssm", "glu_rnn", "linear_attention", "mingated", "lru"})
    for (bool reverse : {false, true})
      for (bool bf16 : {false, true}) {
        std::string source = reverse ? reversed(readModel(model)) : readModel(model);
        out.push_back({std::string(model) + (reverse ? "_reverse" : "_forward") + (bf16 ? "_bf16" : "_f32"),
                       bf16 ? bf16Variant(source) : source});
      }
  return out;
}

// Recurrences beyond models/: every differentiable builtin with two states, a contraction and an
// output reading the previous state; two channel dimensions (gradients summed over one of them
// go through per-thread atomics); and a state lacking the channel dimension whose adjoint sums
// over it, which makes the layout fall back to one thread per batch element.
inline std::vector<ModelVariant> edgeRecurrences() {
  return {{"kitchen", R"(
recurrence kitchen(a[d], x[d], c[n]; w[d, n]) -> y[d], h[d] {
  early = tanh(h) * x
  e = exp(0.3 * a) + log(abs(x) + 1) + sqrt(abs(a) + 0.5) + silu(a) + relu(x) + softplus(x)
  h = sigmoid(a) * h + g(x) * where(a > x, min(a, x), max(a, x)) / (2 + abs(x))
  s[d, n] = 0.5 * s + w * c * e
  y = sum(n: s * c) + early + -h
}
)"},
          {"outer", R"(
recurrence outer(a[d], x[e]; p[e]) -> h[d, e] {
  h = sigmoid(a) * h + x * p
}
)"},
          {"shared_state_fallback", R"(
recurrence shared_state(x[d], y[n]) -> o[d], c[n] {
  c = 0.5 * c + y
  o = sum(n: c) * x
}
)"}};
}

inline std::vector<cuda::RecurrenceDesc> kernelsOf(mlir::ModuleOp module) {
  mlir::ModuleAnalysisManager analyses(module, /*passInstrumentor=*/nullptr);
  mlir::FailureOr<std::vector<cuda::RecurrenceDesc>> recurrences = cuda::emitCuda(module, analyses);
  if (mlir::failed(recurrences)) throw std::runtime_error("the CUDA emitter failed");
  return std::move(*recurrences);
}
inline nlohmann::json manifestOf(mlir::ModuleOp module) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  mlir::FailureOr<nlohmann::json> manifest = cuda::packageManifest(kernelsOf(module), os);
  if (mlir::failed(manifest)) throw std::runtime_error(errors);
  return *manifest;
}
inline std::map<std::string, std::string> sourcesOf(mlir::ModuleOp module) {
  std::map<std::string, std::string> sources;
  for (const cuda::RecurrenceDesc &rec : kernelsOf(module)) sources[rec.file] = rec.source;
  return sources;
}

// The kernel package of a compiled module, as `scanc --emit-package` would write it.
inline cuda::KernelPackage packageOf(mlir::ModuleOp module) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  mlir::FailureOr<cuda::KernelPackage> package = cuda::kernelPackage(kernelsOf(module), os);
  if (mlir::failed(package)) throw std::runtime_error(errors);
  return std::move(*package);
}

using gpu::EmulatedBackend;

// The concurrent emulator as the tests use it: races, bounds and deadlocks checked, with the
// kernels' libraries cached under the build tree. Traffic is not recorded unless asked (which
// kernels ran): these tests check values (tests/gpu/emulator and tests/gpu/model check the
// traffic), and recording it took a fifth of their time.
inline std::unique_ptr<EmulatedBackend> emulatedBackend(uint64_t seed = 1, bool recordTraffic = false) {
  gpu::EmulatorOptions options;
  options.seed = seed;
  options.recordTraffic = recordTraffic;
  options.cacheDir = SCANFORGE_EMULATION_CACHE;
  return std::make_unique<EmulatedBackend>(options);
}

}  // namespace scanforge::test
