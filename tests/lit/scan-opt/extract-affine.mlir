// --scan-extract-affine finds a and b in h = a * h + b, through locals, selects and contractions.
// RUN: scan-opt %s --scan-extract-affine | FileCheck %s

// minGRU: h = (1 - z) * h + z * u  =>  a = 1 - z, b = z * u
// CHECK-LABEL: scan.recurrence @mingru
// CHECK:      %[[K:.*]] = scan.input "k"
// CHECK:      %[[U:.*]] = scan.input "u"
// CHECK:      %[[Z:.*]] = scan.sigmoid %[[K]]
// CHECK:      %[[A0:.*]] = arith.subf %{{.*}}, %[[Z]]
// CHECK:      %[[A:.*]] = arith.mulf %{{.*}}, %[[A0]]
// CHECK:      %[[B:.*]] = arith.mulf %[[Z]], %[[U]]
// CHECK:      %[[N:.*]] = scan.update "h" ["d"] a(%[[A]]) b(%[[B]])
// CHECK-NOT:  scan.next
// CHECK:      scan.output "h" ["d"] %[[N]]
scan.recurrence @mingru dims ["d"] {
  %k = scan.input "k" ["d"] : f32
  %u = scan.input "u" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  %one = arith.constant 1.0 : f32
  %z = scan.sigmoid %k : f32
  %omz = arith.subf %one, %z : f32
  %t1 = arith.mulf %omz, %h : f32
  %t2 = arith.mulf %z, %u : f32
  %v = arith.addf %t1, %t2 : f32
  %n = scan.next "h" ["d"] %v : f32
  scan.output "h" ["d"] %n : f32
}

// A select with a state-free condition keeps both branches affine; -h gives a = -1.
// CHECK-LABEL: scan.recurrence @branches
// CHECK:      %[[C:.*]] = arith.cmpf
// CHECK:      %[[SA:.*]] = arith.select %[[C]], %{{.*}}, %{{.*}}
// CHECK:      scan.update "h" ["d"] a(%{{.*}}) b(%{{.*}})
scan.recurrence @branches dims ["d"] {
  %x = scan.input "x" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  %zero = arith.constant 0.0 : f32
  %c = arith.cmpf ogt, %x, %zero : f32
  %neg = arith.negf %h : f32
  %half = arith.mulf %h, %x : f32
  %sel = arith.select %c, %neg, %half : f32
  %v = arith.addf %sel, %x : f32
  %n = scan.next "h" ["d"] %v : f32
}

// A contraction over a dimension the state does not have is fine (a = sum(n: w)).
// CHECK-LABEL: scan.recurrence @contract
// CHECK:      %[[S:.*]] = scan.sum "n"
// CHECK:      scan.update "h" ["d"] a(%[[S]]) b(%{{.*}})
scan.recurrence @contract dims ["d", "n"] {
  %x = scan.input "x" ["d"] : f32
  %w = scan.param "w" ["d", "n"] : f32
  %h = scan.prev "h" ["d"] : f32
  %hw = arith.mulf %h, %w : f32
  %s = scan.sum "n" %hw : f32
  %v = arith.addf %s, %x : f32
  %n = scan.next "h" ["d"] %v : f32
}
