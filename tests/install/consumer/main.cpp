// A consumer of the installed scanforge (tests/install): compiles minGRU through the public API,
// runs forward and backward on small random inputs, and checks them against a float64 minGRU
// written here (forward) and central finite differences of it (backward). Also checks that the
// API's exceptions cross the shared library's boundary. Prints "consumer: ok" and exits 0 when all
// holds; prints what failed and exits 1 otherwise.
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "compiler/api/Scanforge.h"

namespace {

constexpr int64_t B = 2, T = 16, D = 8;
int failures = 0;

void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::printf("consumer: FAIL: %s\n", what.c_str());
    ++failures;
  }
}

double g(double x) { return x >= 0 ? x + 0.5 : 1 / (1 + std::exp(-x)); }

// minGRU in float64: h_t = (1 - z) h_{t-1} + z g(u_t), z = sigmoid(k_t), h_0 = 0. Layout [B, T, D].
std::vector<double> mingru(const std::vector<double> &k, const std::vector<double> &u) {
  std::vector<double> h(k.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < D; ++d) {
      double state = 0;
      for (int64_t t = 0; t < T; ++t) {
        int64_t i = (b * T + t) * D + d;
        double z = 1 / (1 + std::exp(-k[i]));
        state = (1 - z) * state + z * g(u[i]);
        h[i] = state;
      }
    }
  return h;
}

double loss(const std::vector<double> &k, const std::vector<double> &u, const std::vector<double> &w) {
  std::vector<double> h = mingru(k, u);
  double sum = 0;
  for (size_t i = 0; i < h.size(); ++i) sum += w[i] * h[i];
  return sum;
}

bool allFinite(const std::vector<float> &v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

scanforge::TensorView view(std::vector<float> &data) {
  return scanforge::TensorView{data.data(), {B, T, D}, scanforge::ElemType::F32};
}

}  // namespace

int main(int argc, char **argv) {
  std::string path = argc > 1 ? argv[1] : std::string(SCANFORGE_MODELS) + "/mingru.scan";
  try {
    scanforge::Recurrence rec = scanforge::compile(path);
    const scanforge::Signature &sig = rec.signature();
    expect(sig.name == "mingru" && sig.inputs.size() == 2 && sig.outputs.size() == 1 && sig.params.empty(),
           "signature of " + path + " is not minGRU's (k[d], u[d]) -> h[d]");
    if (failures) return 1;

    // Random inputs, never zeros: k, u ~ U(-2, 2) away from 0; output-gradient weights U(0.5, 1.5).
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> mag(0.05f, 2.0f), sign(-1.0f, 1.0f), weight(0.5f, 1.5f);
    const size_t n = B * T * D;
    std::vector<float> k(n), u(n), w(n);
    for (size_t i = 0; i < n; ++i) {
      k[i] = std::copysign(mag(gen), sign(gen));
      u[i] = std::copysign(mag(gen), sign(gen));
      w[i] = weight(gen);
    }
    const float nan = std::nanf("");
    std::vector<float> h(n, nan), dk(n, nan), du(n, nan);

    scanforge::TensorViews inputs = {{"k", view(k)}, {"u", view(u)}};
    scanforge::TensorViews params, initial, finals;
    scanforge::SavedStates saved;
    rec.forward(inputs, params, initial, {{"h", view(h)}}, finals, &saved);
    expect(allFinite(h), "forward wrote non-finite (or left unwritten) outputs");
    expect(!saved.empty(), "forward saved nothing for the backward");
    rec.backward(inputs, params, saved, {{"h", view(w)}}, {}, {{"k", view(dk)}, {"u", view(du)}}, {}, {});
    expect(allFinite(dk) && allFinite(du), "backward wrote non-finite (or left unwritten) input gradients");

    // The gradients have the inputs' shapes: a wrongly shaped destination is refused (ShapeError).
    bool refused = false;
    std::vector<float> small(B * T * (D - 1));
    try {
      scanforge::TensorView bad{small.data(), {B, T, D - 1}, scanforge::ElemType::F32};
      rec.backward(inputs, params, saved, {{"h", view(w)}}, {}, {{"k", bad}, {"u", view(du)}}, {}, {});
    } catch (const scanforge::ShapeError &e) {
      refused = true;
    }
    expect(refused, "backward accepted a [B, T, D-1] gradient for the [B, T, D] input k");

    // Forward against float64 minGRU; backward against central differences of sum(w * h).
    std::vector<double> kd(k.begin(), k.end()), ud(u.begin(), u.end()), wd(w.begin(), w.end());
    std::vector<double> ref = mingru(kd, ud);
    double forwardErr = 0, scale = 0;
    for (size_t i = 0; i < n; ++i) {
      forwardErr = std::max(forwardErr, std::abs(h[i] - ref[i]));
      scale = std::max(scale, std::abs(ref[i]));
    }
    forwardErr /= scale;
    double backwardErr = 0, gradScale = 0;
    const double eps = 1e-6;
    for (std::vector<double> *x : {&kd, &ud}) {
      const std::vector<float> &grad = x == &kd ? dk : du;
      for (size_t i = 0; i < n; ++i) {
        double keep = (*x)[i];
        (*x)[i] = keep + eps;
        double up = loss(kd, ud, wd);
        (*x)[i] = keep - eps;
        double down = loss(kd, ud, wd);
        (*x)[i] = keep;
        double fd = (up - down) / (2 * eps);
        backwardErr = std::max(backwardErr, std::abs(grad[i] - fd));
        gradScale = std::max(gradScale, std::abs(fd));
      }
    }
    backwardErr /= gradScale;
    std::printf("consumer: %s: B=%lld T=%lld d=%lld, forward max relative error %.2e vs float64, "
                "backward %.2e vs central differences\n",
                sig.name.c_str(), (long long)B, (long long)T, (long long)D, forwardErr, backwardErr);
    expect(forwardErr <= 1e-5, "forward differs from the float64 minGRU by more than 1e-5");
    expect(backwardErr <= 1e-4, "backward differs from the finite differences by more than 1e-4");

    // Errors in a .scan source reach the consumer as scanforge::CompileError.
    bool diagnosed = false;
    try {
      scanforge::compileSource("bad.scan", "recurrence bad(x[d]) -> h[d] {\n  h = tanh(h) + x\n}\n");
    } catch (const scanforge::CompileError &e) {
      diagnosed = std::string(e.what()).find("bad.scan:2:") != std::string::npos;
      if (!diagnosed) std::printf("consumer: unexpected diagnostic:\n%s\n", e.what());
    }
    expect(diagnosed, "a non-linear recurrence did not raise CompileError with a location");
  } catch (const std::exception &e) {
    std::printf("consumer: FAIL: exception: %s\n", e.what());
    return 1;
  }
  if (failures) return 1;
  std::printf("consumer: ok\n");
  return 0;
}
