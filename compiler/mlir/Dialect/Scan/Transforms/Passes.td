// Passes over the `scan` dialect. Each runs alone with `scan-opt --<name>`.
#ifndef SCAN_PASSES_TD
#define SCAN_PASSES_TD

include "mlir/Pass/PassBase.td"

def ScanExtractAffine : Pass<"scan-extract-affine", "::mlir::ModuleOp"> {
  let summary = "Rewrite each state update into the affine form a * prev + b, or reject it";
  let description = [{
    For every `scan.next`, follows the update expression from the state's `scan.prev` and builds
    `a` (the coefficient of the previous value) and `b` (the rest) from the existing ops, then
    replaces it with `scan.update ... a(%a) b(%b)`. An update that is not affine in its state, or
    whose coefficients read any state, is an error located at the offending operation.
  }];
}

def ScanAutodiff : Pass<"scan-autodiff", "::mlir::ModuleOp"> {
  let summary = "Generate the backward recurrence of every forward recurrence";
  let description = [{
    For `scan.recurrence @f` (in affine form) creates `@f.backward`, a recurrence in the opposite
    direction. Its state `s.adj` carries the adjoint flowing into the forward state s_{t-1}:
    with g_t = dL/ds_t = s.adj(t+1) + (direct terms from the outputs at t), the adjoint is
    a_t * g_t, and dL/da_t = g_t * s_{t-1}, dL/db_t = g_t. The chain rule then runs through the
    gate math (recomputed from the inputs and the saved forward states), contractions and
    broadcasts; input gradients are outputs `x.grad`, parameter gradients `scan.accum "p.grad"`.
    The final value of `s.adj` is dL/ds_0; its initial value is the gradient of the final state.
    The new state updates are `scan.next`; run --scan-extract-affine afterwards.
  }];
}

def ScanSimplify : Pass<"scan-simplify", "::mlir::ModuleOp"> {
  let summary = "Simplify element-wise math in recurrences (zero and one operands of generated adjoints)";
  let description = [{
    Removes the arithmetic that autodiff generates around zero and one: x * 0 -> 0, x + 0 -> x,
    0 - x -> -x, x / 1 -> x, 0 / x -> 0, -(-x) -> x, and sums of zero. Assumes finite values
    (x * 0 = 0), as every gradient computation does.
  }];
}

def ScanFactorSums : Pass<"scan-factor-sums", "::mlir::ModuleOp"> {
  let summary = "Take the factors that lack a sum's dimension out of the sum";
  let description = [{
    Rewrites `scan.sum "n" (f * g)` as `f * scan.sum "n" (g)` for every factor f of the summed
    product tree without dimension n, the remaining factors multiplied in the order they are
    defined. Sums that differ only by such factors then compute one sum after --cse (the selective
    SSM's backward: three sums over n become two). One multiply per summed element fewer for
    each factor taken out; the results differ from the unfactored ones by rounding only.
  }];
}

def ScanOrderProducts : Pass<"scan-order-products", "::mlir::ModuleOp"> {
  let summary = "Multiply a product's factors fewest dimensions first";
  let description = [{
    Takes each product tree of `arith.mulf` apart (through multiplies used only by the tree) and
    builds it again: the factors of one dimension set multiplied together first, the sets in order
    of how many dimensions they have, when that makes fewer or narrower multiplies (each multiply
    counted by the dimensions of its result). `delta[d] * B[n] * x[d]` becomes `(delta * x) * B`:
    the [d] product is computed once per d, not once per (d, n). The old trees are left without
    uses for --canonicalize; the results differ by rounding only.
  }];
}

def ScanTransition : Pass<"scan-transition", "::mlir::ModuleOp"> {
  let summary = "Replace every forward recurrence by its slice transition (context parallelism)";
  let description = [{
    For a forward recurrence in affine form, keeps its inputs, parameters and states and rewrites
    every `scan.update s a(%a) b(%b)` to `b(0)`, dropping its outputs: started from ones, its final
    states are the product of `a` over the steps it ran, the factor by which the state entering a
    slice of the sequence reaches the slice's end (h_end = A * h_start + B, with B the final state
    of the recurrence itself started from zeros). Context parallelism combines these per-slice
    pairs across devices (docs/context-parallel.md). Run after --scan-extract-affine.
  }];
}

#endif // SCAN_PASSES_TD
