// --scan-compile: the whole pipeline on the selective SSM as lowered from the DSL.
// RUN: scanc --dump=scan %models/selective_ssm.scan | tail -n +2 > %t.mlir
// RUN: scan-opt %t.mlir --scan-compile | FileCheck %s

// CHECK-LABEL: scan.recurrence @selective_ssm dims ["d", "n"] {
// CHECK:       scan.update "s" ["d", "n"]
// CHECK:       scan.output "y" ["d"]
// CHECK-LABEL: scan.recurrence @selective_ssm.backward dims ["d", "n"] reverse adjoint_of @selective_ssm {
// CHECK-DAG:   scan.input "y.grad" ["d"]
// CHECK-DAG:   scan.saved "s" ["d", "n"]
// CHECK-DAG:   scan.prev "s.adj" ["d", "n"]
// CHECK-DAG:   scan.output "x.grad" ["d"]
// CHECK-DAG:   scan.output "dt.grad" ["d"]
// CHECK-DAG:   scan.output "B.grad" ["n"]
// CHECK-DAG:   scan.output "C.grad" ["n"]
// CHECK-DAG:   scan.accum "A.grad" ["d", "n"]
// CHECK-DAG:   scan.accum "D.grad" ["d"]
// CHECK:       scan.update "s.adj" ["d", "n"] a(%{{.*}}) b(%{{.*}})
// CHECK-NOT:   scan.next

// The backward's three sums over n (x.grad's, dt.grad's two) are two: x.grad and dt.grad share
// the sum of (s.adj + C y.grad) * B, times delta and times x (--scan-factor-sums).
// RUN: scan-opt %t.mlir --scan-compile | FileCheck %s --check-prefix=SUMS
// SUMS-LABEL:   scan.recurrence @selective_ssm.backward
// SUMS-COUNT-2: scan.sum "n"
// SUMS-NOT:     scan.sum "n"
// SUMS:         scan.update "s.adj"
