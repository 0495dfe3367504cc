// --scan-autodiff generates the reverse-direction adjoint recurrence.
// RUN: scan-opt %s --scan-autodiff | FileCheck %s
// RUN: scan-opt %s --scan-autodiff --scan-extract-affine --scan-simplify --canonicalize --cse | FileCheck %s --check-prefix=AFFINE

// glu_rnn: h = lambda * h + m * v. With g = h.grad + h.adj (the adjoint of h_t):
// h.adj' = lambda * g, m.grad = g * v, v.grad = g * m, lambda.grad += g * h_{t-1}.
scan.recurrence @glu dims ["d"] {
  %m = scan.input "m" ["d"] : f32
  %v = scan.input "v" ["d"] : f32
  %lambda = scan.param "lambda" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  %b = arith.mulf %m, %v : f32
  %n = scan.update "h" ["d"] a(%lambda) b(%b) : f32
  scan.output "h" ["d"] %n : f32
}

// CHECK-LABEL: scan.recurrence @glu.backward dims ["d"] reverse adjoint_of @glu {
// CHECK-DAG:  %[[M:.*]] = scan.input "m" ["d"]
// CHECK-DAG:  %[[V:.*]] = scan.input "v" ["d"]
// CHECK-DAG:  %[[HG:.*]] = scan.input "h.grad" ["d"] adjoint_of "h"
// CHECK-DAG:  %[[L:.*]] = scan.param "lambda" ["d"]
// CHECK-DAG:  %[[S:.*]] = scan.saved "h" ["d"]
// CHECK-DAG:  %[[ADJ:.*]] = scan.prev "h.adj" ["d"] adjoint_of "h"
// CHECK:      %[[G:.*]] = arith.addf %[[HG]], %[[ADJ]]
// CHECK:      arith.mulf %[[G]], %[[S]]
// CHECK:      scan.output "m.grad" ["d"] %{{.*}} adjoint_of "m"
// CHECK:      scan.output "v.grad" ["d"] %{{.*}} adjoint_of "v"
// CHECK:      scan.accum "lambda.grad" ["d"] %{{.*}} adjoint_of "lambda"
// CHECK:      scan.next "h.adj" ["d"] %{{.*}} adjoint_of "h"

// AFFINE-LABEL: scan.recurrence @glu.backward
// AFFINE:       %[[L:.*]] = scan.param "lambda" ["d"]
// AFFINE:       %[[B:.*]] = arith.mulf %{{.*}}, %[[L]]
// AFFINE:       scan.update "h.adj" ["d"] a(%[[L]]) b(%[[B]]) adjoint_of "h"

// A reverse forward scan gets a forward-direction backward.
// CHECK-LABEL: scan.recurrence @rev.backward dims ["d"] adjoint_of @rev {
scan.recurrence @rev dims ["d"] reverse {
  %x = scan.input "x" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  %half = arith.constant 0.5 : f32
  %n = scan.update "h" ["d"] a(%half) b(%x) : f32
  scan.output "h" ["d"] %n : f32
}

// Broadcasts are summed away: B[n] * x[d] feeds s[d, n], so B.grad sums over d.
// CHECK-LABEL: scan.recurrence @bcast.backward
// CHECK:      %[[SUM:.*]] = scan.sum "d"
// CHECK:      scan.output "B.grad" ["n"] %[[SUM]]
scan.recurrence @bcast dims ["d", "n"] {
  %x = scan.input "x" ["d"] : f32
  %B = scan.input "B" ["n"] : f32
  %s = scan.prev "s" ["d", "n"] : f32
  %half = arith.constant 0.5 : f32
  %b = arith.mulf %B, %x : f32
  %n = scan.update "s" ["d", "n"] a(%half) b(%b) : f32
  %y = scan.sum "n" %n : f32
  scan.output "y" ["d"] %y : f32
}
