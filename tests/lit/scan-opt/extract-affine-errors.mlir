// --scan-extract-affine rejects updates that are not affine in their state, at the culprit.
// RUN: scan-opt %s -split-input-file --scan-extract-affine -verify-diagnostics

scan.recurrence @tanh dims ["d"] {
  %x = scan.input "x" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  // expected-error @+1 {{the update of state 'h' is not linear in 'h': 'math.tanh' is applied to a value that depends on 'h'}}
  %t = math.tanh %h : f32
  %v = arith.addf %t, %x : f32
  %n = scan.next "h" ["d"] %v : f32
}

// -----

scan.recurrence @product dims ["d"] {
  %h = scan.prev "h" ["d"] : f32
  // expected-error @+1 {{it multiplies two values that depend on 'h'}}
  %v = arith.mulf %h, %h : f32
  %n = scan.next "h" ["d"] %v : f32
}

// -----

scan.recurrence @division dims ["d"] {
  %x = scan.input "x" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  // expected-error @+1 {{it divides by a value that depends on 'h'}}
  %v = arith.divf %x, %h : f32
  %n = scan.next "h" ["d"] %v : f32
}

// -----

scan.recurrence @condition dims ["d"] {
  %x = scan.input "x" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  %c = arith.cmpf ogt, %h, %x : f32
  // expected-error @+1 {{the condition of 'arith.select' depends on 'h'}}
  %v = arith.select %c, %h, %x : f32
  %n = scan.next "h" ["d"] %v : f32
}

// -----

scan.recurrence @mixes dims ["d", "n"] {
  %x = scan.input "x" ["d", "n"] : f32
  %s = scan.prev "s" ["d", "n"] : f32
  // expected-error @+1 {{summing over 'n' mixes the elements of state 's'}}
  %r = scan.sum "n" %s : f32
  %v = arith.addf %r, %x : f32
  %n = scan.next "s" ["d", "n"] %v : f32
}

// -----

scan.recurrence @other_state dims ["d"] {
  %x = scan.input "x" ["d"] : f32
  // expected-note @+1 {{the other state is read here}}
  %c = scan.prev "c" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  %nc = scan.next "c" ["d"] %x : f32
  %v = arith.addf %h, %c : f32
  // expected-error @+1 {{the update of state 'h' reads another state}}
  %n = scan.next "h" ["d"] %v : f32
}
