// --scan-transition needs the affine form that --scan-extract-affine makes.
// RUN: scan-opt %s --scan-transition -verify-diagnostics

scan.recurrence @general dims ["d"] {
  %x = scan.input "x" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  %v = arith.addf %h, %x : f32
  // expected-error @+1 {{--scan-transition needs the affine form of 'h': run --scan-extract-affine first}}
  %n = scan.next "h" ["d"] %v : f32
}
