// Helpers for DSL tests: run the front end on a string and list its errors as "line:col: message".
#pragma once

#include <string>
#include <vector>

#include "dsl/Sema.h"

namespace scanforge::dsl::test {

struct CheckResult {
  bool ok;
  std::vector<std::string> errors;    // "line:col: message"
  std::vector<std::string> warnings;  // "line:col: message"
  std::string rendered;               // everything as the user sees it
  Module module;
};

inline CheckResult checkSource(const std::string &text, const std::string &path = "test.scan") {
  SourceFile file(path, text);
  DiagnosticEngine diags(file);
  CheckResult result;
  result.ok = parseAndCheck(file, diags, result.module);
  for (const Diagnostic &d : diags.diagnostics()) {
    std::string line = std::to_string(d.range.begin.line) + ":" + std::to_string(d.range.begin.col) + ": " + d.message;
    (d.severity == Severity::Error ? result.errors : result.warnings).push_back(line);
  }
  result.rendered = diags.renderToString();
  return result;
}

}  // namespace scanforge::dsl::test
