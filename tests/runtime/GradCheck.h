// Central finite-difference gradient check and random test inputs for the runtime's op tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "runtime/core/Autograd.h"
#include "runtime/core/Random.h"

namespace scanforge::test {

using OpFn = std::function<Variable(const std::vector<Variable> &)>;

// Uniform values of magnitude in [0.2, 1.2] with random signs: never zero, so that no term of a
// gradient can vanish by accident.
inline Tensor randomTensor(const Shape &shape, DType dtype, Generator &gen) {
  Tensor t = Tensor::empty(shape, DType::F64);
  double *p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = (gen.uniform() < 0.5 ? -1 : 1) * gen.uniform(0.2, 1.2);
  return t.to(dtype);
}

inline double dot(const Tensor &a, const Tensor &b) {
  std::vector<double> x = a.toDoubles(), y = b.toDoubles();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

// Checks the analytic gradients of L = <seed, f(inputs)> (seed: a fixed random tensor) with
// respect to every element of every input against central differences (L(x+h) - L(x-h)) / 2h, in
// float64: |analytic - numeric| <= atol + rtol * max(|analytic|, |numeric|).
// With h = 1e-6 the truncation error is O(h^2) ~ 1e-12 and the rounding error ~ 1e-16 |L| / h ~
// 1e-9 for |L| ~ 10, so rtol = 1e-6 and atol = 1e-8 leave a wide margin over both while any real
// bug (a wrong sign, a missing term, a dropped factor) is off by orders of magnitude more.
inline void expectGradientsMatchFiniteDifferences(const OpFn &f, const std::vector<Tensor> &inputs,
                                                  double rtol = 1e-6, double atol = 1e-8, double h = 1e-6) {
  std::vector<Variable> vars;
  for (const Tensor &t : inputs) vars.emplace_back(t.clone(), true);
  Variable out = f(vars);
  Generator gen(99);
  Tensor seed = randomTensor(out.shape(), DType::F64, gen);
  backward(out, seed);

  auto loss = [&](const std::vector<Tensor> &values) {
    NoGradGuard noGrad;
    std::vector<Variable> v;
    for (const Tensor &t : values) v.emplace_back(t);
    return dot(f(v).value(), seed);
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    ASSERT_TRUE(vars[k].grad().defined()) << "input " << k << " received no gradient";
    std::vector<double> analytic = vars[k].grad().toDoubles();
    for (int64_t i = 0; i < inputs[k].numel(); ++i) {
      std::vector<Tensor> plus, minus;
      for (const Tensor &t : inputs) {
        plus.push_back(t.clone());
        minus.push_back(t.clone());
      }
      plus[k].data<double>()[i] += h;
      minus[k].data<double>()[i] -= h;
      double numeric = (loss(plus) - loss(minus)) / (2 * h);
      double a = analytic[static_cast<size_t>(i)];
      EXPECT_LE(std::abs(a - numeric), atol + rtol * std::max(std::abs(a), std::abs(numeric)))
          << "input " << k << " element " << i << ": analytic " << a << ", finite differences " << numeric;
    }
  }
}

}  // namespace scanforge::test
