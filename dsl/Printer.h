// Prints a module back as .scan source: canonical spacing, minimal parentheses. After sema the
// statements carry comments with what was inferred (kind and dimensions), so the dump of a checked
// AST is both readable and re-parsable.
#pragma once

#include <ostream>
#include <string>

#include "dsl/AST.h"

namespace scanforge::dsl {

std::string printExpr(const Expr &e);
void printModule(std::ostream &os, const Module &module, bool annotate);

}  // namespace scanforge::dsl
