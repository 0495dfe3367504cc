// --scan-simplify removes arithmetic on zeros and ones, and nothing else.
// RUN: scan-opt %s --scan-simplify | FileCheck %s

// CHECK-LABEL: scan.recurrence @zeros
// CHECK-DAG:  %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:  %[[X:.*]] = scan.input "x" ["d", "n"]
// CHECK-DAG:  %[[Y:.*]] = scan.input "y" ["d"]
// CHECK:      %[[NEG:.*]] = arith.negf %[[Y]]
// CHECK-NEXT: scan.output "a" ["d", "n"] %[[ZERO]]
// CHECK-NEXT: scan.output "b" ["d"] %[[Y]]
// CHECK-NEXT: scan.output "c" ["d"] %[[NEG]]
// CHECK-NEXT: scan.output "e" ["d"] %[[ZERO]]
// CHECK-NEXT: scan.output "f" ["d"] %[[Y]]
scan.recurrence @zeros dims ["d", "n"] {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %x = scan.input "x" ["d", "n"] : f32
  %y = scan.input "y" ["d"] : f32
  %a = arith.mulf %x, %zero : f32
  %b = arith.addf %zero, %y : f32
  %c = arith.subf %zero, %y : f32
  %z = arith.mulf %x, %zero : f32
  %e = scan.sum "n" %z : f32
  %f = arith.divf %y, %one : f32
  scan.output "a" ["d", "n"] %a : f32
  scan.output "b" ["d"] %b : f32
  scan.output "c" ["d"] %c : f32
  scan.output "e" ["d"] %e : f32
  scan.output "f" ["d"] %f : f32
}

// Nothing to simplify: the ops stay.
// CHECK-LABEL: scan.recurrence @kept
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.divf
// CHECK: scan.sum "n"
scan.recurrence @kept dims ["d", "n"] {
  %two = arith.constant 2.0 : f32
  %x = scan.input "x" ["d", "n"] : f32
  %m = arith.mulf %x, %two : f32
  %s = arith.addf %m, %two : f32
  %q = arith.divf %two, %s : f32
  %r = scan.sum "n" %q : f32
  scan.output "r" ["d"] %r : f32
}

// x * 0 is a zero over x's dimensions: it stays where, added to a value without d, it reaches a
// sum over d (as 0 + p, p alone would have no d to sum); a zero summed directly is zero.
// CHECK-LABEL: scan.recurrence @zero_under_sum
// CHECK:      %[[Z:.*]] = arith.mulf %[[X:.*]], %{{.*}}
// CHECK-NEXT: %[[W:.*]] = arith.addf %[[Z]], %[[P:.*]]
// CHECK-NEXT: scan.sum "d" %[[W]]
scan.recurrence @zero_under_sum dims ["d", "n"] {
  %zero = arith.constant 0.0 : f32
  %x = scan.input "x" ["d"] : f32
  %p = scan.param "p" ["n"] : f32
  %z = arith.mulf %x, %zero : f32
  %w = arith.addf %z, %p : f32
  %s = scan.sum "d" %w : f32
  scan.output "s" ["n"] %s : f32
}
