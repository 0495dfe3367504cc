// --scan-transition: a forward recurrence keeps its inputs, parameters and states, its updates lose
// their b, its outputs go; a backward recurrence is left alone (errors: transition-errors.mlir).
// RUN: scan-opt %s --scan-transition --canonicalize | FileCheck %s

// CHECK-LABEL: scan.recurrence @ssm
// CHECK-DAG:  %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:  %[[X:.*]] = scan.input "x" ["d"]
// CHECK-DAG:  %[[DT:.*]] = scan.input "dt" ["d"]
// CHECK-DAG:  %[[A:.*]] = scan.param "A" ["d", "n"]
// CHECK-DAG:  scan.param "D" ["d"]
// CHECK:      %[[DA:.*]] = arith.mulf %[[DT]], %[[A]]
// CHECK-NEXT: %[[DECAY:.*]] = math.exp %[[DA]]
// CHECK:      scan.update "s" ["d", "n"] a(%[[DECAY]]) b(%[[ZERO]])
// CHECK-NOT:  scan.output
// CHECK:      }
scan.recurrence @ssm dims ["d", "n"] {
  %x = scan.input "x" ["d"] : f32
  %dt = scan.input "dt" ["d"] : f32
  %A = scan.param "A" ["d", "n"] : f32
  %D = scan.param "D" ["d"] : f32
  %s = scan.prev "s" ["d", "n"] : f32
  %da = arith.mulf %dt, %A : f32
  %decay = math.exp %da : f32
  %bx = arith.mulf %dt, %x : f32
  %new = scan.update "s" ["d", "n"] a(%decay) b(%bx) : f32
  %sum = scan.sum "n" %new : f32
  %dx = arith.mulf %D, %x : f32
  %y = arith.addf %sum, %dx : f32
  scan.output "y" ["d"] %y : f32
}

// CHECK-LABEL: scan.recurrence @ssm.backward
// CHECK:      scan.update "s.adj" ["d", "n"] a(%{{.*}}) b(%{{.*}}) adjoint_of "s"
// CHECK:      scan.output "x.grad" ["d"]
scan.recurrence @ssm.backward dims ["d", "n"] reverse adjoint_of @ssm {
  %g = scan.input "y.grad" ["d"] adjoint_of "y" : f32
  %adj = scan.prev "s.adj" ["d", "n"] adjoint_of "s" : f32
  %decay = scan.param "A" ["d", "n"] : f32
  %new = scan.update "s.adj" ["d", "n"] a(%decay) b(%g) adjoint_of "s" : f32
  %dx = scan.sum "n" %new : f32
  scan.output "x.grad" ["d"] %dx adjoint_of "x" : f32
}
