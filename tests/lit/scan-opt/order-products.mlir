// --scan-order-products multiplies a product's factors fewest dimensions first: delta[d] * B[n] *
// x[d] becomes (delta * x) * B, once per d and then once per (d, n). A product that is used twice
// stays one value (not taken apart into its users' trees), and a tree that no order makes cheaper
// is left alone.
// RUN: scan-opt %s --scan-order-products --canonicalize --cse | FileCheck %s

// CHECK-LABEL: scan.recurrence @ordered
// CHECK-DAG:   %[[X:.*]] = scan.input "x" ["d"]
// CHECK-DAG:   %[[DELTA:.*]] = scan.input "delta" ["d"]
// CHECK-DAG:   %[[B:.*]] = scan.input "B" ["n"]
// CHECK-DAG:   %[[G:.*]] = scan.input "g" ["d", "n"]
// CHECK:       %[[XD:.*]] = arith.mulf %[[X]], %[[DELTA]]
// CHECK-NEXT:  %[[XDB:.*]] = arith.mulf %[[XD]], %[[B]]
// CHECK:       %[[XDG:.*]] = arith.mulf %[[XD]], %[[G]]
// CHECK:       scan.output "one" ["d", "n"] %[[XDB]]
// CHECK-NEXT:  scan.output "two" ["d", "n"] %[[XDG]]
scan.recurrence @ordered dims ["d", "n"] {
  %x = scan.input "x" ["d"] : f32
  %delta = scan.input "delta" ["d"] : f32
  %B = scan.input "B" ["n"] : f32
  %g = scan.input "g" ["d", "n"] : f32
  %dB = arith.mulf %delta, %B : f32
  %one = arith.mulf %dB, %x : f32
  %gx = arith.mulf %g, %x : f32
  %two = arith.mulf %gx, %delta : f32
  scan.output "one" ["d", "n"] %one : f32
  scan.output "two" ["d", "n"] %two : f32
}

// CHECK-LABEL: scan.recurrence @kept
// CHECK-DAG:   %[[X:.*]] = scan.input "x" ["d"]
// CHECK-DAG:   %[[B:.*]] = scan.input "B" ["n"]
// CHECK-DAG:   %[[G:.*]] = scan.input "g" ["d", "n"]
// CHECK:       %[[GB:.*]] = arith.mulf %[[G]], %[[B]]
// CHECK-NEXT:  %[[SHARED:.*]] = arith.mulf %[[GB]], %[[G]]
// CHECK-NEXT:  %[[USE:.*]] = arith.mulf %[[SHARED]], %[[X]]
// CHECK-NEXT:  scan.output "shared" ["d", "n"] %[[SHARED]]
// CHECK-NEXT:  scan.output "use" ["d", "n"] %[[USE]]
scan.recurrence @kept dims ["d", "n"] {
  %x = scan.input "x" ["d"] : f32
  %B = scan.input "B" ["n"] : f32
  %g = scan.input "g" ["d", "n"] : f32
  %gB = arith.mulf %g, %B : f32
  %shared = arith.mulf %gB, %g : f32
  %use = arith.mulf %shared, %x : f32
  scan.output "shared" ["d", "n"] %shared : f32
  scan.output "use" ["d", "n"] %use : f32
}
