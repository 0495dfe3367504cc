// Float kernels of the activations whose libm calls (erff, expf one element at a time) took a
// third of a C++ training step's main thread: polynomials over vectors of 16 floats, compiled for
// AVX-512, AVX2 with FMA and baseline x86-64, the host's picked when the program loads.
// Accuracy against float64 (ActivationKernelsTest): GELU and its slope within 5e-7 relative (4
// ulp), 0 below x = -8.485 where Phi < 1e-17; f64 tensors keep libm's erf.
#pragma once

#include <cstdint>

namespace scanforge::kernels {

// y[i] = x[i] * Phi(x[i]), Phi the standard normal CDF (the exact, erf form of GELU).
void geluForward(const float *x, float *y, int64_t n);

// dx[i] = g[i] * (Phi(x[i]) + x[i] * phi(x[i])), phi the standard normal density.
void geluBackward(const float *g, const float *x, float *dx, int64_t n);

}  // namespace scanforge::kernels
