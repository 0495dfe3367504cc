// libFuzzer target for the whole front end (lexer, parser, sema, diagnostics rendering, printer).
// Beyond "never crash": whatever checks cleanly must print to text that checks again and prints
// identically, so the AST dump stays re-parsable for every accepted program.
#include <cstdint>
#include <sstream>
#include <string>

#include "dsl/Printer.h"
#include "dsl/Sema.h"

using namespace scanforge::dsl;

static std::string checkAndPrint(const std::string &text, bool &ok) {
  SourceFile file("fuzz.scan", text);
  DiagnosticEngine diags(file);
  Module module;
  ok = parseAndCheck(file, diags, module);
  (void)diags.renderToString();
  std::ostringstream out;
  if (ok) printModule(out, module, /*annotate=*/true);
  return out.str();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  bool ok = false;
  std::string printed = checkAndPrint(std::string(reinterpret_cast<const char *>(data), size), ok);
  if (!ok) return 0;
  bool again = false;
  std::string reprinted = checkAndPrint(printed, again);
  if (!again || reprinted != printed) __builtin_trap();
  return 0;
}
