#include "tools/scanc/Run.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include "compiler/api/CompiledModuleImpl.h"
#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "compiler/mlir/Target/Reference/Gradients.h"
#include "tools/scanc/Shape.h"

namespace scanforge::scanc {
namespace {

constexpr double kBound = 1e-5;  // relative error of f32 arithmetic against float64
// The per-value relative error the CPU backend may make (f32 rounding, exp good to about 2^-18).
// A recurrence that amplifies such errors (|a_t| > 1: the state grows) may be off by more than
// kBound without being wrong, so each tensor's bound is also at least the float64 reference's own
// change when every input, parameter and seed is perturbed by this much: the problem's conditioning.
constexpr double kPerturbation = 4e-6;

struct Tensors {
  std::map<std::string, reference::Tensor> ref;   // float64 values
  std::map<std::string, std::vector<float>> f32;  // the same values for the CPU backend
  std::mt19937 gen;

  explicit Tensors(unsigned seed) : gen(seed) {}

  TensorView make(const std::string &key, const std::vector<int64_t> &shape, bool random) {
    reference::Tensor t(shape);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    if (random)
      for (double &v : t.data) {
        do v = dist(gen);
        while (std::fabs(v) < 0.05);  // never zero
        v = static_cast<float>(v);     // the reference reads exactly what the backend reads
      }
    std::vector<float> &f = f32[key];
    f.assign(t.data.begin(), t.data.end());
    ref[key] = std::move(t);
    return {f.data(), shape, ElemType::F32};
  }
};

// ||got - want|| / ||want|| (the plain norm when want is zero); `maxAbs`, if given, gets max |got - want|.
template <class Values>
double relativeError(const Values &got, const reference::Tensor &want, double *maxAbs = nullptr) {
  double num = 0, den = 0, worst = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    double diff = got[i] - want.data[i];
    num += diff * diff;
    den += want.data[i] * want.data[i];
    worst = std::max(worst, std::fabs(diff));
  }
  if (maxAbs) *maxAbs = worst;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Every value times (1 ± kPerturbation), with random signs.
void perturb(reference::TensorMap &tensors, std::mt19937 &gen) {
  std::bernoulli_distribution sign;
  for (auto &[name, t] : tensors)
    for (double &v : t.data) v *= sign(gen) ? 1 + kPerturbation : 1 - kPerturbation;
}

struct ReferenceRun {
  reference::RunResult forward;
  reference::Gradients grads;
};

ReferenceRun runReference(scan::RecurrenceOp fwd, const reference::RunInputs &in, const reference::GradientSeeds &seeds) {
  ReferenceRun r;
  r.forward = reference::run(fwd, in, /*keepStates=*/true);
  r.grads = reference::runBackward(scan::backwardOf(fwd), in, r.forward, seeds);
  return r;
}

}  // namespace

int runAndCompare(const std::string &path, const std::string &shapeText, const std::string &recurrence, unsigned seed,
                  bool verbose) {
  CompileOptions options;
  options.verbose = verbose;
  CompiledModule module = compileModule(path, options);
  Recurrence rec = module.recurrence(recurrence);
  const Signature &sig = rec.signature();
  std::map<std::string, int64_t> sizes = parseShape(shapeText);
  Shapes shapes;
  shapes.batch = sizes.at("b");
  shapes.steps = sizes.at("t");
  for (const auto *ports : {&sig.inputs, &sig.params, &sig.outputs, &sig.states})
    for (const Port &p : *ports)
      for (const std::string &d : p.dims) {
        if (!sizes.count(d)) throw ShapeError("--shape: missing the size of dimension '" + d + "' (of '" + p.name + "')");
        shapes.dims[d] = sizes.at(d);
      }
  for (const Port &p : sig.inputs)
    if (p.type == ElemType::BF16) throw ShapeError("scanc run: bf16 port '" + p.name + "' is not supported by run; use f32 ports");

  Tensors t(seed);
  TensorViews inputs, params, initial, outputs, finals, outputGrads, finalGrads, inputGrads, paramGrads, initialGrads;
  for (const Port &p : sig.inputs) inputs[p.name] = t.make("in." + p.name, shapes.step(p), true);
  for (const Port &p : sig.params) params[p.name] = t.make("par." + p.name, shapes.param(p), true);
  for (const Port &s : sig.states) {
    initial[s.name] = t.make("init." + s.name, shapes.state(s), true);
    finals[s.name] = t.make("final." + s.name, shapes.state(s), false);
    finalGrads[s.name] = t.make("dfinal." + s.name, shapes.state(s), true);
    initialGrads[s.name] = t.make("dinit." + s.name, shapes.state(s), false);
  }
  for (const Port &o : sig.outputs) {
    outputs[o.name] = t.make("out." + o.name, shapes.step(o), false);
    outputGrads[o.name] = t.make("dout." + o.name, shapes.step(o), true);
  }
  for (const Port &p : sig.inputs) inputGrads[p.name] = t.make("din." + p.name, shapes.step(p), false);
  for (const Port &p : sig.params) paramGrads[p.name] = t.make("dpar." + p.name, shapes.param(p), false);

  auto begin = std::chrono::steady_clock::now();
  SavedStates saved;
  rec.forward(inputs, params, initial, outputs, finals, &saved);
  rec.backward(inputs, params, saved, outputGrads, finalGrads, inputGrads, paramGrads, initialGrads);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();

  // The reference: the same compiled IR, interpreted in float64.
  scan::RecurrenceOp fwd = module.impl().forward(sig.name);
  reference::RunInputs in;
  for (const Port &p : sig.inputs) in.inputs[p.name] = t.ref.at("in." + p.name);
  for (const Port &p : sig.params) in.params[p.name] = t.ref.at("par." + p.name);
  for (const Port &s : sig.states) in.initial[s.name] = t.ref.at("init." + s.name);
  reference::GradientSeeds seeds;
  for (const Port &o : sig.outputs) seeds.outputs[o.name] = t.ref.at("dout." + o.name);
  for (const Port &s : sig.states) seeds.finals[s.name] = t.ref.at("dfinal." + s.name);
  ReferenceRun exact = runReference(fwd, in, seeds);
  for (reference::TensorMap *m : {&in.inputs, &in.params, &in.initial, &seeds.outputs, &seeds.finals}) perturb(*m, t.gen);
  ReferenceRun perturbed = runReference(fwd, in, seeds);

  std::printf("%s on the CPU backend vs the float64 reference interpreter (%s, seed %u, %.2f s including JIT)\n",
              sig.name.c_str(), shapeText.c_str(), seed, seconds);
  std::printf("  %-28s %14s %14s %14s\n", "tensor", "max |error|", "relative", "bound");
  bool ok = true, conditioned = false;
  auto report = [&](const std::string &label, const std::string &key, auto pick) {
    const reference::Tensor &want = pick(exact);
    double maxAbs;
    double rel = relativeError(t.f32.at(key), want, &maxAbs);
    double bound = std::max(kBound, relativeError(pick(perturbed).data, want));
    ok &= rel <= bound;
    conditioned |= bound > kBound;
    std::printf("  %-28s %14.3e %14.3e %14.3e%s\n", label.c_str(), maxAbs, rel, bound, rel <= bound ? "" : "  > bound");
  };
  for (const Port &o : sig.outputs)
    report("output " + o.name, "out." + o.name, [&](ReferenceRun &r) -> auto & { return r.forward.outputs.at(o.name); });
  for (const Port &s : sig.states)
    report("final state " + s.name, "final." + s.name, [&](ReferenceRun &r) -> auto & { return r.forward.finals.at(s.name); });
  for (const Port &p : sig.inputs)
    report("gradient of input " + p.name, "din." + p.name, [&](ReferenceRun &r) -> auto & { return r.grads.inputs.at(p.name); });
  for (const Port &p : sig.params)
    report("gradient of param " + p.name, "dpar." + p.name, [&](ReferenceRun &r) -> auto & { return r.grads.params.at(p.name); });
  for (const Port &s : sig.states)
    report("gradient of initial " + s.name, "dinit." + s.name,
           [&](ReferenceRun &r) -> auto & { return r.grads.initial.at(s.name); });
  std::printf("%s (bound: relative error <= %.0e, or the reference's own change under a %.0e relative perturbation "
              "of every input where that is larger%s)\n",
              ok ? "ok" : "FAILED", kBound, kPerturbation,
              conditioned ? "; here it is: the recurrence amplifies rounding errors" : "");
  return ok ? 0 : 1;
}

}  // namespace scanforge::scanc
