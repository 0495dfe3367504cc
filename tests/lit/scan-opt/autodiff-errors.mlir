// --scan-autodiff needs affine form.
// RUN: scan-opt %s --scan-autodiff -verify-diagnostics

scan.recurrence @general dims ["d"] {
  %x = scan.input "x" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  %v = arith.addf %h, %x : f32
  // expected-error @+1 {{state 'h' is not in affine form; run --scan-extract-affine before --scan-autodiff}}
  %n = scan.next "h" ["d"] %v : f32
}
