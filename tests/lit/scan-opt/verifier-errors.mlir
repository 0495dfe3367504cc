// The dialect's verifiers reject malformed recurrences with a message naming the problem.
// RUN: scan-opt %s -split-input-file -verify-diagnostics

scan.recurrence @unknown_dim dims ["d"] {
  // expected-error @+1 {{names a dimension that the recurrence does not declare, or one twice}}
  %x = scan.input "x" ["n"] : f32
}

// -----

scan.recurrence @sum_absent dims ["d", "n"] {
  %x = scan.input "x" ["d"] : f32
  // expected-error @+1 {{sums over 'n', which its operand (dimensions [d]) does not have}}
  %y = scan.sum "n" %x : f32
}

// -----

scan.recurrence @coefficient_reads_state dims ["d"] {
  %x = scan.input "x" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  %a = arith.mulf %h, %x : f32
  // expected-error @+1 {{coefficient of state 'h' depends on a state}}
  %n = scan.update "h" ["d"] a(%a) b(%x) : f32
}

// -----

scan.recurrence @saved_in_forward dims ["d"] {
  // expected-error @+1 {{reads a forward state, so it belongs in a backward recurrence}}
  %s = scan.saved "h" ["d"] : f32
}

// -----

scan.recurrence @twice dims ["d"] {
  %x = scan.input "x" ["d"] : f32
  // expected-error @+1 {{declares an input 'x' a second time}}
  %y = scan.input "x" ["d"] : f32
}

// -----

scan.recurrence @too_wide dims ["d", "n"] {
  %x = scan.input "x" ["d", "n"] : f32
  // expected-error @+1 {{writes a value with dimensions [d, n] to 'y', which has dimensions [d]}}
  scan.output "y" ["d"] %x : f32
}

// -----

scan.recurrence @bad_storage dims ["d"] {
  // expected-error @+1 {{storage type must be f32 or bf16, not 'f16'}}
  %x = scan.input "x" ["d"] storage f16 : f32
}

// -----

scan.recurrence @never_updated dims ["d"] {
  // expected-error @+1 {{reads state 'h', which is never updated}}
  %h = scan.prev "h" ["d"] : f32
}

// -----

scan.recurrence @state_dims_disagree dims ["d", "n"] {
  %x = scan.input "x" ["d"] : f32
  %h = scan.prev "h" ["d"] : f32
  // expected-error @+1 {{gives state 'h' dimensions ["d", "n"], but it has ["d"]}}
  %n = scan.next "h" ["d", "n"] %x : f32
}

// -----

scan.recurrence @integer dims ["d"] {
  // expected-error @+1 {{produces 'i32'; values in a recurrence are f32 (or i1 conditions)}}
  %c = arith.constant 1 : i32
}

// -----

// `adjoint_of` on a port says it stands for the adjoint of a forward port: backwards only.
scan.recurrence @adjoint_port_in_forward dims ["d"] {
  // expected-error @+1 {{is the adjoint of 'y', so it belongs in a backward recurrence (one with 'adjoint_of')}}
  %g = scan.input "y.grad" ["d"] adjoint_of "y" : f32
}
