// Semantic analysis of parsed recurrences: name resolution, types, named-dimension broadcasting,
// contractions, state discovery and the linearity check (each state update must be affine in the
// state's previous value, with coefficients that read no state). Fills the `checked` parts of the AST.
#pragma once

#include "dsl/AST.h"
#include "dsl/Diagnostics.h"

namespace scanforge::dsl {

// Returns true when the module has no errors (warnings allowed).
bool analyze(Module &module, DiagnosticEngine &diags);

// Parses and analyses a file in one step (recurrences with syntax errors are not analysed).
// Returns true when there are no errors.
bool parseAndCheck(const SourceFile &file, DiagnosticEngine &diags, Module &out);

// "[d, n]" for messages and dumps.
std::string formatDims(const Recurrence &rec, const DimSet &dims);

}  // namespace scanforge::dsl
