// --scan-factor-sums takes the factors without the summed dimension out of a sum, so that sums
// that differ only by such factors are one sum after --cse (the selective SSM's backward sums
// g * delta * B and g * x * B over n). A sum whose factors all have its dimension is left alone.
// RUN: scan-opt %s --scan-factor-sums --cse | FileCheck %s

// CHECK-LABEL: scan.recurrence @shared
// CHECK-DAG:   %[[X:.*]] = scan.input "x" ["d"]
// CHECK-DAG:   %[[DELTA:.*]] = scan.input "delta" ["d"]
// CHECK-DAG:   %[[B:.*]] = scan.input "B" ["n"]
// CHECK-DAG:   %[[G:.*]] = scan.input "g" ["d", "n"]
// CHECK:       %[[GB:.*]] = arith.mulf %[[B]], %[[G]]
// CHECK-NEXT:  %[[SUM:.*]] = scan.sum "n" %[[GB]]
// CHECK-NEXT:  %[[ONE:.*]] = arith.mulf %[[DELTA]], %[[SUM]]
// CHECK-NOT:   scan.sum "n"
// CHECK:       %[[TWO:.*]] = arith.mulf %[[X]], %[[SUM]]
// CHECK:       %[[ALL:.*]] = arith.mulf %[[G]], %[[G]]
// CHECK-NEXT:  %[[KEPT:.*]] = scan.sum "n" %[[ALL]]
// CHECK:       scan.output "one" ["d"] %[[ONE]]
// CHECK-NEXT:  scan.output "two" ["d"] %[[TWO]]
// CHECK-NEXT:  scan.output "kept" ["d"] %[[KEPT]]
scan.recurrence @shared dims ["d", "n"] {
  %x = scan.input "x" ["d"] : f32
  %delta = scan.input "delta" ["d"] : f32
  %B = scan.input "B" ["n"] : f32
  %g = scan.input "g" ["d", "n"] : f32
  %gd = arith.mulf %g, %delta : f32
  %gdB = arith.mulf %gd, %B : f32
  %one = scan.sum "n" %gdB : f32
  %gx = arith.mulf %g, %x : f32
  %gxB = arith.mulf %gx, %B : f32
  %two = scan.sum "n" %gxB : f32
  %gg = arith.mulf %g, %g : f32
  %kept = scan.sum "n" %gg : f32
  scan.output "one" ["d"] %one : f32
  scan.output "two" ["d"] %two : f32
  scan.output "kept" ["d"] %kept : f32
}

// A factor taken out of a sum over n may itself be summed later, over d.
// CHECK-LABEL: scan.recurrence @nested
// CHECK:       %[[INNER:.*]] = scan.sum "n"
// CHECK-NEXT:  %[[SCALED:.*]] = arith.mulf %{{.*}}, %[[INNER]]
// CHECK-NEXT:  %[[OUTER:.*]] = scan.sum "d" %[[SCALED]]
// CHECK-NEXT:  scan.output "total" [] %[[OUTER]]
scan.recurrence @nested dims ["d", "n"] {
  %x = scan.input "x" ["d"] : f32
  %g = scan.input "g" ["d", "n"] : f32
  %gx = arith.mulf %x, %g : f32
  %inner = scan.sum "n" %gx : f32
  %outer = scan.sum "d" %inner : f32
  scan.output "total" [] %outer : f32
}
