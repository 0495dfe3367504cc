// Recursive-descent parser for .scan files. Syntax errors are reported to the engine and the
// parser resynchronises at the next statement, so one run reports several independent errors.
#pragma once

#include "dsl/AST.h"
#include "dsl/Diagnostics.h"

namespace scanforge::dsl {

// Lexes and parses; check `diags.hasErrors()` before using the result.
Module parse(const SourceFile &file, DiagnosticEngine &diags);

}  // namespace scanforge::dsl
