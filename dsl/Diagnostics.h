// Compiler-style diagnostics: "file:line:col: error: message", the source line, a caret range,
// notes at other locations and a hint. Errors are collected so one run reports several.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "dsl/Source.h"

namespace scanforge::dsl {

enum class Severity { Error, Warning };

struct Note {
  SourceRange range;  // may be invalid: a note without a location
  std::string message;
};

struct Diagnostic {
  Severity severity;
  SourceRange range;
  std::string message;
  std::vector<Note> notes;
  std::string hint;
};

class DiagnosticEngine {
 public:
  // Handle to the diagnostic just reported, for attaching notes and a hint.
  class Builder {
   public:
    Builder(DiagnosticEngine &engine, size_t index) : engine_(engine), index_(index) {}
    Builder &note(SourceRange range, std::string message);
    Builder &hint(std::string message);

   private:
    DiagnosticEngine &engine_;
    size_t index_;
  };

  explicit DiagnosticEngine(const SourceFile &file) : file_(file) {}

  Builder error(SourceRange range, std::string message);
  Builder warning(SourceRange range, std::string message);

  bool hasErrors() const { return errorCount_ > 0; }
  size_t errorCount() const { return errorCount_; }
  const std::vector<Diagnostic> &diagnostics() const { return diags_; }
  const SourceFile &file() const { return file_; }

  // Renders every diagnostic in the order reported.
  void render(std::ostream &os) const;
  std::string renderToString() const;

 private:
  void renderLocated(std::ostream &os, SourceRange range, const char *label, const std::string &message) const;

  const SourceFile &file_;
  std::vector<Diagnostic> diags_;
  size_t errorCount_ = 0;
};

// Closest candidate by edit distance, or "" when nothing is close enough to suggest.
std::string closestMatch(const std::string &word, const std::vector<std::string> &candidates);

}  // namespace scanforge::dsl
