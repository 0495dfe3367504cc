// Bounds (relative 2-norm error, ||cpu - ref|| / max(||ref||, 1e-2 * sqrt(N))):
//  * f32 ports: 1e-4. f32 has eps 6e-8; a program is at most ~12 nested operations deep, T <= 9
//    steps with |a| < 1 and contractions over <= 7 elements, so rounding grows to ~1e-6 relative;
//    1e-4 leaves room for the backend's different evaluation order and for divisions by 1 + x*x.
//  * bf16 ports: 1e-2. The reference reads the same bf16-rounded inputs and seeds; what is left is
//    the rounding of the port itself to 8 mantissa bits (2^-9 relative per element) plus f32 noise.
//  The floor 1e-2 * sqrt(N) keeps tensors that cancel to almost nothing (a [B] initial-state
//  gradient at B = 1 summing T terms of O(1)) from dividing by ~0: below it the bound is absolute,
//  1e-6 per element for f32, about ten ulps of the O(1) terms that cancelled (seed 1029 needed it).
//  * CUDA kernels (every plan the golden checks use: the planner's, sequential with L=4, chunked
//    with L=5 and L=1), the same bounds and the same measure (floor included) as the CPU backend,
//    against the reference through golden vectors at the program's sizes (Golden::errorFloor).
//    Seed 30025 (a gradient of ~1e-8 per element, cancelling in f32 to a few percent of itself,
//    2e-10 absolute) failed the CUDA check while its measure had no floor.
//  * Finite differences (float64 reference only, h = 1e-5 and h/4): |fd - analytic| <= 1e-5 *
//    (1 + |analytic|) + 1e-9 * |L|; a coordinate whose two differences disagree by more than that
//    sits on a kink (abs, relu, min, where) and is skipped.
#include "tests/fuzz/DiffCheck.h"

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "compiler/api/CompiledModuleImpl.h"
#include "compiler/mlir/Dialect/Scan/IR/Adjoints.h"
#include "compiler/mlir/Target/Cuda/CudaEmitter.h"
#include "compiler/mlir/Target/Reference/Gradients.h"
#include "compiler/package/GoldenVectors.h"
#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Goldens.h"
#include "runtime/cuda/RecurrenceRunner.h"

namespace scanforge::fuzz {
namespace {

using reference::Tensor;
using reference::TensorMap;

// bf16 rounding as the backends do it (round to nearest even): runtime/cuda/Goldens.h.
uint16_t toBf16(double v) { return cuda::toBf16(static_cast<float>(v)); }
double fromBf16(uint16_t h) { return cuda::fromBf16(h); }

struct Random {
  std::mt19937_64 gen;
  Tensor tensor(std::vector<int64_t> shape, bool bf16) {  // in [-1, 1], never within 0.05 of zero
    Tensor t(std::move(shape));
    std::uniform_real_distribution<double> dist(-1, 1);
    for (double &v : t.data) {
      do v = dist(gen);
      while (std::fabs(v) < 0.05);
      if (bf16) v = fromBf16(toBf16(v));  // the reference sees exactly what the backend reads
    }
    return t;
  }
};

struct Problem {
  reference::RunInputs in;
  TensorMap outW, finalW;  // dL/dy, dL/ds_T
};

std::vector<int64_t> shapeOf(mlir::ArrayAttr dims, const std::map<std::string, int64_t> &sizes, std::vector<int64_t> lead) {
  for (mlir::Attribute d : dims) lead.push_back(sizes.at(llvm::cast<mlir::StringAttr>(d).str()));
  return lead;
}

bool finite(const TensorMap &m) {
  for (auto &[n, t] : m)
    for (double v : t.data)
      if (!std::isfinite(v)) return false;
  return true;
}

// The floor of the error measure (cuda::relativeError), for the CPU and the CUDA checks alike.
constexpr double kErrorFloor = 1e-2;

// Host buffers for the CPU backend: f32 or bf16 copies of float64 tensors.
struct Buffers {
  std::map<std::string, std::vector<float>> f32;
  std::map<std::string, std::vector<uint16_t>> half;
  std::map<std::string, std::vector<int64_t>> shapes;
  TensorView add(const std::string &key, const std::vector<int64_t> &shape, bool bf16, const Tensor *values = nullptr) {
    shapes[key] = shape;
    size_t n = Tensor::count(shape);
    if (bf16) {
      auto &d = half[key];
      d.assign(n, 0);
      if (values)
        for (size_t i = 0; i < n; ++i) d[i] = toBf16(values->data[i]);
      return {d.data(), shape, ElemType::BF16};
    }
    auto &d = f32[key];
    d.assign(n, 0.0f);
    if (values)
      for (size_t i = 0; i < n; ++i) d[i] = static_cast<float>(values->data[i]);
    return {d.data(), shape, ElemType::F32};
  }
  Tensor tensor(const std::string &key) const {
    Tensor t(shapes.at(key));
    if (half.count(key))
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = fromBf16(half.at(key)[i]);
    else
      for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = f32.at(key)[i];
    return t;
  }
};

double dot(const Tensor &a, const Tensor &b) {
  double s = 0;
  for (size_t i = 0; i < a.data.size(); ++i) s += a.data[i] * b.data[i];
  return s;
}

struct Checker {
  scan::RecurrenceOp fwd, bwd;
  const Recurrence &rec;
  std::map<std::string, bool> bf16;  // port name -> bf16
  std::ostringstream log;
  bool failed = false;
  std::string category;

  void fail(const std::string &cat, const std::string &what) {
    if (!failed) category = cat;
    failed = true;
    log << "  FAIL [" << cat << "] " << what << "\n";
  }
  void compare(const std::string &what, const std::string &port, const Tensor &got, const Tensor &want) {
    double bound = bf16[port] ? 1e-2 : 1e-4;
    double err = cuda::relativeError(got.data, want.data, kErrorFloor);
    if (!(err <= bound)) {
      bool nan = false;
      for (double v : got.data) nan |= !std::isfinite(v);
      fail(nan ? "nan" : "mismatch", what + " '" + port + "': relative error " + std::to_string(err) + " > " + std::to_string(bound));
    }
  }

  double loss(const Problem &p, const reference::RunInputs &in) {
    reference::RunResult r = reference::run(fwd, in);
    double l = 0;
    for (auto &[n, w] : p.outW) l += dot(w, r.outputs.at(n));
    for (auto &[n, w] : p.finalW) l += dot(w, r.finals.at(n));
    return l;
  }

  // Returns false when the reference itself is not finite (the program is skipped).
  bool run(Problem &p, bool finiteDifferences, uint64_t seed) {
    reference::RunResult want = reference::run(fwd, p.in, /*keepStates=*/true);
    reference::Gradients grads = reference::runBackward(bwd, p.in, want, {p.outW, p.finalW});
    if (!finite(want.outputs) || !finite(want.finals) || !finite(grads.inputs) || !finite(grads.params) ||
        !finite(grads.initial))
      return false;

    Buffers buf;
    TensorViews inputs, params, initial, outputs, finals, outGrads, finalGrads, inGrads, parGrads, initGrads;
    for (auto &[n, t] : p.in.inputs) inputs[n] = buf.add("x." + n, t.shape, bf16[n], &t);
    for (auto &[n, t] : p.in.params) params[n] = buf.add("p." + n, t.shape, false, &t);
    for (auto &[n, t] : p.in.initial) initial[n] = buf.add("h0." + n, t.shape, false, &t);
    for (auto &[n, t] : p.outW) outGrads[n] = buf.add("w." + n, t.shape, bf16[n], &t);
    for (auto &[n, t] : p.finalW) finalGrads[n] = buf.add("fw." + n, t.shape, false, &t);
    Shapes shapes = rec.shapesOf(inputs, params);
    const Signature &sig = rec.signature();
    for (const Port &o : sig.outputs) outputs[o.name] = buf.add("y." + o.name, shapes.step(o), bf16[o.name]);
    for (const Port &s : sig.states) finals[s.name] = buf.add("sT." + s.name, shapes.state(s), false);
    SavedStates saved;
    rec.forward(inputs, params, initial, outputs, finals, &saved);
    for (auto &[n, t] : want.outputs) compare("forward output", n, buf.tensor("y." + n), t);
    for (auto &[n, t] : want.finals) compare("forward final state", n, buf.tensor("sT." + n), t);

    for (const Port &in : sig.inputs) inGrads[in.name] = buf.add("dx." + in.name, shapes.step(in), bf16[in.name]);
    for (const Port &par : sig.params) parGrads[par.name] = buf.add("dp." + par.name, shapes.param(par), false);
    for (const Port &s : sig.states) initGrads[s.name] = buf.add("dh0." + s.name, shapes.state(s), false);
    rec.backward(inputs, params, saved, outGrads, finalGrads, inGrads, parGrads, initGrads);
    for (auto &[n, t] : grads.inputs) compare("backward input grad", n, buf.tensor("dx." + n), t);
    for (auto &[n, t] : grads.params) compare("backward param grad", n, buf.tensor("dp." + n), t);
    for (auto &[n, t] : grads.initial) compare("backward initial-state grad", n, buf.tensor("dh0." + n), t);

    if (finiteDifferences) checkFiniteDifferences(p, grads, seed);
    return true;
  }

  // The reference backward against central differences of the reference forward at a few
  // sampled coordinates of inputs, parameters and initial states.
  void checkFiniteDifferences(Problem &p, const reference::Gradients &grads, uint64_t seed) {
    std::vector<std::pair<TensorMap *, const Tensor *>> targets;
    std::vector<std::string> names;
    for (auto &[n, t] : grads.inputs) targets.push_back({&p.in.inputs, &t}), names.push_back(n);
    for (auto &[n, t] : grads.params) targets.push_back({&p.in.params, &t}), names.push_back(n);
    for (auto &[n, t] : grads.initial) targets.push_back({&p.in.initial, &t}), names.push_back(n);
    std::mt19937_64 gen(seed ^ 0x5eed);
    double l0 = std::fabs(loss(p, p.in));
    for (int k = 0; k < 6 && !targets.empty(); ++k) {
      size_t which = gen() % targets.size();
      auto [map, grad] = targets[which];
      Tensor &x = map->at(names[which]);
      size_t i = gen() % x.data.size();
      double keep = x.data[i], analytic = grad->data[i];
      auto central = [&](double h) {
        x.data[i] = keep + h;
        double up = loss(p, p.in);
        x.data[i] = keep - h;
        double down = loss(p, p.in);
        x.data[i] = keep;
        return (up - down) / (2 * h);
      };
      double fd = central(1e-5), fdFine = central(2.5e-6);
      double tol = 1e-5 * (1 + std::fabs(analytic)) + 1e-9 * l0;
      if (std::fabs(fd - fdFine) > tol) continue;  // a kink or a jump of `where` near this point
      if (!(std::fabs(fd - analytic) <= tol))
        fail("fd", "d/d " + names[which] + "[" + std::to_string(i) + "]: reference backward " + std::to_string(analytic) +
                       " vs central difference " + std::to_string(fd));
    }
  }
};

// The module's CUDA kernels on the concurrent emulator, with and without initial states, under
// every golden plan.
void checkCuda(Checker &c, const CompiledModule &module, const cuda::Shape &shape, uint64_t seed,
               const gpu::EmulatorOptions &options) {
  const std::vector<cuda::RecurrenceDesc> *kernels = nullptr;
  try {
    kernels = &module.impl().cudaKernels();
  } catch (const CompileError &e) {
    return c.fail("cuda-compile", e.what());
  }
  std::string errors;
  llvm::raw_string_ostream os(errors);
  mlir::FailureOr<cuda::KernelPackage> package = cuda::kernelPackage(*kernels, os);
  if (mlir::failed(package)) return c.fail("cuda-compile", errors);
  gpu::EmulatedBackend device(options);
  cuda::RecurrenceRunner runner(*package, c.fwd.getSymName().str(), device);
  for (bool withInitial : {false, true}) {
    cuda::Golden golden = cuda::readGolden(
        package::makeGolden(c.fwd, c.bwd, module.impl().analyses(), shape, static_cast<uint32_t>(seed) + withInitial,
                            withInitial),
        "fuzz");
    golden.f32Tolerance = 1e-4;
    golden.bf16Tolerance = 1e-2;
    golden.errorFloor = kErrorFloor;
    for (const cuda::PlanChoice &choice : cuda::goldenPlans()) {
      std::string what = "CUDA (emulated, " + choice.describe() + (withInitial ? ", with initial states)" : ")");
      // A forced chunk length beyond what the kernels' shared memory holds (wide register
      // dimensions) is refused by the planner, rightly: run that strategy at its own length. If
      // even one step does not fit, the planner's documented refusal is the answer, not a failure.
      try {
        cuda::Plan plan;
        try {
          plan = choice.planFor(runner, shape);
        } catch (const cuda::PlanRefused &) {
          plan = runner.plan(shape, choice.strategy, std::nullopt);
        }
        cuda::GoldenReport report = cuda::runGolden(runner, golden, plan);
        for (const cuda::TensorCheck &t : report.checks)
          if (!t.passed())
            c.fail("cuda-mismatch", what + " " + t.stage + " '" + t.name + "': relative error " + std::to_string(t.error) +
                                        " > " + std::to_string(t.tolerance));
      } catch (const cuda::PlanRefused &e) {
        c.log << "  skipped " << what << ": " << e.what() << "\n";
      } catch (const cuda::CudaError &e) {
        return c.fail("cuda-error", what + ": " + e.what());
      }
    }
  }
}

}  // namespace

CheckResult checkProgram(const std::string &name, const std::string &source, uint64_t seed,
                         const gpu::EmulatorOptions *cuda) {
  CheckResult r;
  try {
    CompiledModule module = compileModuleSource(name, source);
    Recurrence rec = module.recurrence();
    Checker c{module.impl().forward(""), {}, rec, {}, {}, false, {}};
    c.bwd = scan::backwardOf(c.fwd);
    if (!c.bwd) return {CheckResult::Fail, "internal-error", "no generated backward recurrence"};
    for (const Port &port : rec.signature().inputs) c.bf16[port.name] = port.type == ElemType::BF16;
    for (const Port &port : rec.signature().outputs) c.bf16[port.name] = port.type == ElemType::BF16;

    std::mt19937_64 gen(seed);
    static const int64_t odd[] = {1, 3, 5, 7};
    std::map<std::string, int64_t> sizes = {{"d", odd[gen() % 4]}, {"n", odd[gen() % 4]}, {"e", odd[gen() % 4]}};
    int64_t B = 1 + static_cast<int64_t>(gen() % 3), T = odd[gen() % 4] + 2 * static_cast<int64_t>(gen() % 2);
    // A file's other dimensions (--file: linear attention's k, a head dimension), drawn after B and
    // T so that the generator's programs, which use d, n and e only, keep their seeds' shapes.
    for (mlir::Attribute d : c.fwd.getDims()) sizes.try_emplace(llvm::cast<mlir::StringAttr>(d).str(), odd[gen() % 4]);
    c.log << "  shapes: B=" << B << " T=" << T;
    for (const auto &[name, size] : sizes) c.log << " " << name << "=" << size;
    c.log << "\n";
    for (bool withInitial : {false, true}) {
      Random rng{std::mt19937_64(seed * 31 + withInitial)};
      Problem p;
      for (mlir::Operation &op : c.fwd.getBodyBlock()) {
        if (auto in = llvm::dyn_cast<scan::InputOp>(op))
          p.in.inputs[in.getName().str()] = rng.tensor(shapeOf(in.getDims(), sizes, {B, T}), c.bf16[in.getName().str()]);
        else if (auto par = llvm::dyn_cast<scan::ParamOp>(op))
          p.in.params[par.getName().str()] = rng.tensor(shapeOf(par.getDims(), sizes, {}), false);
        else if (auto up = llvm::dyn_cast<scan::UpdateOp>(op)) {
          if (withInitial) p.in.initial[up.getName().str()] = rng.tensor(shapeOf(up.getDims(), sizes, {B}), false);
          p.finalW[up.getName().str()] = rng.tensor(shapeOf(up.getDims(), sizes, {B}), false);
        } else if (auto out = llvm::dyn_cast<scan::OutputOp>(op))
          p.outW[out.getName().str()] = rng.tensor(shapeOf(out.getDims(), sizes, {B, T}), c.bf16[out.getName().str()]);
      }
      c.log << "  run " << (withInitial ? "with" : "without") << " initial states\n";
      if (!c.run(p, /*finiteDifferences=*/withInitial, seed)) return {CheckResult::Skip, "", "reference not finite"};
    }
    if (cuda) {
      cuda::Shape shape{B, T, {}};
      for (mlir::Operation &op : c.fwd.getBodyBlock())
        if (auto port = llvm::dyn_cast<scan::PortOpInterface>(op))
          for (mlir::Attribute d : port.getDims()) {
            std::string dim = llvm::cast<mlir::StringAttr>(d).str();
            shape.dims[dim] = sizes.at(dim);
          }
      checkCuda(c, module, shape, seed, *cuda);
    }
    if (c.failed) return {CheckResult::Fail, c.category, c.log.str()};
    return r;
  } catch (const CompileError &e) {
    std::string what = e.what();
    bool internal = what.find("internal error") != std::string::npos;
    return {CheckResult::Fail, internal ? "internal-error" : "compile-rejected", what};
  } catch (const std::exception &e) {
    return {CheckResult::Fail, "exception", e.what()};
  }
}

CheckResult checkRejected(const std::string &name, const std::string &source) {
  try {
    compileModuleSource(name, source);
    return {CheckResult::Fail, "mutant-accepted", "the mutant compiled"};
  } catch (const CompileError &e) {
    std::string what = e.what();
    if (what.find("internal error") != std::string::npos) return {CheckResult::Fail, "internal-error", what};
    // A located error: `name:line:col: error:`.
    size_t at = what.find(name + ":");
    size_t err = what.find(": error:");
    if (at == std::string::npos || err == std::string::npos) return {CheckResult::Fail, "unlocated-error", what};
    std::string loc = what.substr(at + name.size() + 1, err - at - name.size() - 1);
    size_t colon = loc.find(':');
    if (colon == std::string::npos || loc.find_first_not_of("0123456789:") != std::string::npos)
      return {CheckResult::Fail, "unlocated-error", what};
    return {CheckResult::Pass, "", what};
  } catch (const std::exception &e) {
    return {CheckResult::Fail, "exception", e.what()};
  }
}

}  // namespace scanforge::fuzz
