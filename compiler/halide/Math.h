// exp, log, log1p and sigmoid of float32 as Halide expressions, vectorisable, within a few ulp and
// without the systematic bias of Halide's own polynomials (fast_exp is accurate to about 2^-18, and its
// bias compounds over long sequences whose decay is close to 1: see docs/cpu.md, "Accuracy").
#pragma once

#include <Halide.h>

namespace scanforge::cpu {

// e^x for x clamped to [-87.34, 88.72] (results stay normal and finite); NaN stays NaN.
Halide::Expr exp(Halide::Expr x);
// exp(-|y|) (sigmoid's and softplus's), with one scaling instead of exp's two; NaN stays NaN.
Halide::Expr expMinusMagnitude(Halide::Expr y);
// sigmoid(x), or sigmoid(-x) when `negated`: e = exp(-|x|) and 1 / (1 + e), shared by both.
Halide::Expr sigmoid(Halide::Expr x, bool negated = false);
// sigmoid(softplus(a) - softplus(b)) = (1 + e^a) / ((1 + e^a) + (1 + e^b)), as one quotient of
// terms in [0, 2] (no logarithm, no overflow, finite where both e^a and e^b underflow), from
// ea = exp(-|a|), eb = exp(-|b|) and ed = exp(-|max(b, 0) - max(a, 0)|): exchanging a and b (the
// complement, sigmoid(softplus(b) - softplus(a))) needs the same three.
Halide::Expr sigmoidOfSoftplusDifference(Halide::Expr a, Halide::Expr b, Halide::Expr ea, Halide::Expr eb,
                                         Halide::Expr ed);
// max(b, 0) - max(a, 0): the exponent sigmoidOfSoftplusDifference's `ed` is of.
Halide::Expr softplusDifferenceScale(Halide::Expr a, Halide::Expr b);
// log x: -inf at 0, NaN below 0 and for NaN, inf at inf; subnormal x handled.
Halide::Expr log(Halide::Expr x);
// log(1 + x) for x in [0, 1] (softplus's log(1 + exp(-|a|))), accurate when x is tiny.
Halide::Expr log1p(Halide::Expr x);

}  // namespace scanforge::cpu
