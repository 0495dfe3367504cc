// Every scan op prints and parses back unchanged.
// RUN: scan-opt %s | scan-opt | FileCheck %s

// CHECK-LABEL: scan.recurrence @ssm dims ["d", "n"] {
// CHECK: scan.input "x" ["d"] storage bf16 : f32
// CHECK: scan.param "A" ["d", "n"] : f32
// CHECK: scan.prev "s" ["d", "n"] : f32
// CHECK: scan.softplus
// CHECK: scan.update "s" ["d", "n"] a(%{{.*}}) b(%{{.*}}) : f32
// CHECK: scan.sum "n" %{{.*}} : f32
// CHECK: scan.output "y" ["d"] %{{.*}} storage bf16 : f32
scan.recurrence @ssm dims ["d", "n"] {
  %x = scan.input "x" ["d"] storage bf16 : f32
  %dt = scan.input "dt" ["d"] : f32
  %A = scan.param "A" ["d", "n"] : f32
  %s = scan.prev "s" ["d", "n"] : f32
  %delta = scan.softplus %dt : f32
  %da = arith.mulf %delta, %A : f32
  %a = math.exp %da : f32
  %b = arith.mulf %delta, %x : f32
  %new = scan.update "s" ["d", "n"] a(%a) b(%b) : f32
  %y = scan.sum "n" %new : f32
  scan.output "y" ["d"] %y storage bf16 : f32
}

// CHECK-LABEL: scan.recurrence @f.backward dims ["d"] reverse adjoint_of @f {
// CHECK: scan.input "h.grad" ["d"] adjoint_of "h" : f32
// CHECK: scan.saved "h" ["d"] : f32
// CHECK: scan.prev "h.adj" ["d"] adjoint_of "h" : f32
// CHECK: scan.next "h.adj" ["d"] %{{.*}} adjoint_of "h" : f32
// CHECK: scan.accum "p.grad" ["d"] %{{.*}} adjoint_of "p" : f32
scan.recurrence @f.backward dims ["d"] reverse adjoint_of @f {
  %g = scan.input "h.grad" ["d"] adjoint_of "h" : f32
  %p = scan.param "p" ["d"] : f32
  %h = scan.saved "h" ["d"] : f32
  %adj = scan.prev "h.adj" ["d"] adjoint_of "h" : f32
  %sig = scan.sigmoid %g : f32
  %gg = scan.g %sig : f32
  %sum = arith.addf %adj, %gg : f32
  %next = scan.next "h.adj" ["d"] %sum adjoint_of "h" : f32
  %acc = arith.mulf %h, %p : f32
  scan.accum "p.grad" ["d"] %acc adjoint_of "p" : f32
}
