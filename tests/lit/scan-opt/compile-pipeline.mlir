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
