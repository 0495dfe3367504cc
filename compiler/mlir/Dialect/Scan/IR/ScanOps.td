// The `scan` dialect: linear recurrences h_t = a_t * h_{t-1} + b_t over named dimensions.
//
// A `scan.recurrence` holds the computation of ONE time step, for one batch element. Every SSA value
// in its body is a field over a set of the recurrence's named dimensions (e.g. [d] or [d, n]); the
// dimensions of a value are those of its operands, united (broadcasting by name), except where
// `scan.sum` removes one. Ports (inputs, parameters, states, outputs) are ops that name the tensor
// they read or write; they have effects, so canonicalization never drops a declared port.
#ifndef SCAN_OPS_TD
#define SCAN_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Scan_Dialect : Dialect {
  let name = "scan";
  let cppNamespace = "::scanforge::scan";
  let summary = "Linear recurrences over named dimensions, with generated backward passes";
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

class Scan_Op<string mnemonic, list<Trait> traits = []> : Op<Scan_Dialect, mnemonic, traits>;

// Every port op names a tensor (or state) and the dimensions it ranges over; analyses and targets
// read ports through this interface instead of looking attributes up by name.
def Scan_PortOpInterface : OpInterface<"PortOpInterface"> {
  let cppNamespace = "::scanforge::scan";
  let description = "An op that reads or writes a named port of its recurrence.";
  let methods = [
    InterfaceMethod<"the port's name", "::llvm::StringRef", "getName">,
    InterfaceMethod<"the port's dimensions, in layout order", "::mlir::ArrayAttr", "getDims">,
  ];
}

// A port of a generated backward recurrence that stands for the adjoint of a forward port carries
// `adjoint_of` = the forward port's name: an output gradient (scan.input), an input gradient
// (scan.output), a parameter gradient (scan.accum) or a state's adjoint (scan.prev, scan.next,
// scan.update). Its own name is for display and buffer names only (AdjointNames.h makes it).
class Scan_PortOp<string mnemonic, list<Trait> traits = []>
    : Scan_Op<mnemonic, !listconcat(traits, [Scan_PortOpInterface])>;

def Scan_RecurrenceOp : Scan_Op<"recurrence",
    [Symbol, IsolatedFromAbove, NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "one step of a scan over time, for one batch element";
  let description = [{
    The body runs once per (b, t), in time order (or reversed with `reverse`). `dims` lists the named
    dimensions the body's values range over. A backward recurrence names its forward recurrence with
    `adjoint_of`; its `scan.saved` ops read the forward states, and its states carry the adjoints.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$dims, UnitAttr:$reverse,
                       OptionalAttr<FlatSymbolRefAttr>:$adjoint_of);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `dims` $dims (`reverse` $reverse^)? (`adjoint_of` $adjoint_of^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

// ---- ports ----

def Scan_InputOp : Scan_PortOp<"input"> {
  let summary = "the value of an input tensor [b, t, dims...] at the current step";
  let arguments = (ins StrAttr:$name, StrArrayAttr:$dims, OptionalAttr<TypeAttr>:$storage,
                       OptionalAttr<StrAttr>:$adjoint_of);
  let results = (outs F32:$result);
  let assemblyFormat = "$name $dims (`storage` $storage^)? (`adjoint_of` $adjoint_of^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Scan_ParamOp : Scan_PortOp<"param"> {
  let summary = "a parameter tensor [dims...], the same at every step; its gradient sums over b and t";
  let arguments = (ins StrAttr:$name, StrArrayAttr:$dims);
  let results = (outs F32:$result);
  let assemblyFormat = "$name $dims attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Scan_PrevOp : Scan_PortOp<"prev"> {
  let summary = "a state's value at the previous step (its initial value at the first step)";
  let arguments = (ins StrAttr:$name, StrArrayAttr:$dims, OptionalAttr<StrAttr>:$adjoint_of);
  let results = (outs F32:$result);
  let assemblyFormat = "$name $dims (`adjoint_of` $adjoint_of^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Scan_SavedOp : Scan_PortOp<"saved"> {
  let summary = "in a backward recurrence: the forward state's value before the forward step";
  let description = [{
    At step t of the backward scan this is the forward state s_{t-1} (the forward state before step t
    in the forward direction). Backends may store the forward states or recompute them from checkpoints.
  }];
  let arguments = (ins StrAttr:$name, StrArrayAttr:$dims);
  let results = (outs F32:$result);
  let assemblyFormat = "$name $dims attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Scan_NextOp : Scan_PortOp<"next"> {
  let summary = "a state's new value, in general form (before affine extraction)";
  let arguments = (ins StrAttr:$name, StrArrayAttr:$dims, F32:$value, OptionalAttr<StrAttr>:$adjoint_of);
  let results = (outs F32:$result);
  let assemblyFormat = "$name $dims $value (`adjoint_of` $adjoint_of^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Scan_UpdateOp : Scan_PortOp<"update"> {
  let summary = "a state's new value a * prev + b, with a and b free of any state";
  let arguments = (ins StrAttr:$name, StrArrayAttr:$dims, F32:$a, F32:$b, OptionalAttr<StrAttr>:$adjoint_of);
  let results = (outs F32:$result);
  let assemblyFormat = "$name $dims `a` `(` $a `)` `b` `(` $b `)` (`adjoint_of` $adjoint_of^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Scan_OutputOp : Scan_PortOp<"output"> {
  let summary = "writes an output tensor [b, t, dims...] at the current step (broadcast to its dims)";
  let arguments = (ins StrAttr:$name, StrArrayAttr:$dims, F32:$value, OptionalAttr<TypeAttr>:$storage,
                       OptionalAttr<StrAttr>:$adjoint_of);
  let assemblyFormat = "$name $dims $value (`storage` $storage^)? (`adjoint_of` $adjoint_of^)? attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Scan_AccumOp : Scan_PortOp<"accum"> {
  let summary = "adds a value into a parameter-shaped gradient [dims...], summed over b and t";
  let arguments = (ins StrAttr:$name, StrArrayAttr:$dims, F32:$value, OptionalAttr<StrAttr>:$adjoint_of);
  let assemblyFormat = "$name $dims $value (`adjoint_of` $adjoint_of^)? attr-dict `:` type($value)";
  let hasVerifier = 1;
}

// ---- element-wise math that arith/math lack, and the contraction ----

def Scan_SumOp : Scan_Op<"sum", [Pure, SameOperandsAndResultType]> {
  let summary = "contracts one named dimension of its operand";
  let arguments = (ins StrAttr:$dim, F32:$operand);
  let results = (outs F32:$result);
  let assemblyFormat = "$dim $operand attr-dict `:` type($result)";
}

class Scan_UnaryMathOp<string mnemonic, string formula>
    : Scan_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = formula;
  let arguments = (ins F32:$operand);
  let results = (outs F32:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Scan_SigmoidOp : Scan_UnaryMathOp<"sigmoid", "1 / (1 + exp(-x))">;
def Scan_SoftplusOp : Scan_UnaryMathOp<"softplus", "log(1 + exp(x)), without overflow">;
def Scan_GOp : Scan_UnaryMathOp<"g", "x + 0.5 for x >= 0, sigmoid(x) otherwise (minGRU's positive candidate)">;

#endif // SCAN_OPS_TD
