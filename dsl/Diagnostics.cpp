#include "dsl/Diagnostics.h"

#include <algorithm>
#include <sstream>

namespace scanforge::dsl {

DiagnosticEngine::Builder &DiagnosticEngine::Builder::note(SourceRange range, std::string message) {
  engine_.diags_[index_].notes.push_back({range, std::move(message)});
  return *this;
}

DiagnosticEngine::Builder &DiagnosticEngine::Builder::hint(std::string message) {
  engine_.diags_[index_].hint = std::move(message);
  return *this;
}

DiagnosticEngine::Builder DiagnosticEngine::error(SourceRange range, std::string message) {
  diags_.push_back({Severity::Error, range, std::move(message), {}, {}});
  ++errorCount_;
  return Builder(*this, diags_.size() - 1);
}

DiagnosticEngine::Builder DiagnosticEngine::warning(SourceRange range, std::string message) {
  diags_.push_back({Severity::Warning, range, std::move(message), {}, {}});
  return Builder(*this, diags_.size() - 1);
}

void DiagnosticEngine::renderLocated(std::ostream &os, SourceRange range, const char *label,
                                     const std::string &message) const {
  if (!range.valid()) {
    os << file_.path() << ": " << label << ": " << message << "\n";
    return;
  }
  const SourceLoc &b = range.begin;
  os << file_.path() << ":" << b.line << ":" << b.col << ": " << label << ": " << message << "\n";
  std::string_view line = file_.lineText(b.line);
  std::string lineNo = std::to_string(b.line);
  std::string gutter(lineNo.size(), ' ');
  std::string shown(line);
  std::replace(shown.begin(), shown.end(), '\t', ' ');
  os << " " << lineNo << " | " << shown << "\n";
  // The caret marks the start; tildes run to the end of the range on the same line.
  uint32_t startCol = std::min<uint32_t>(b.col, static_cast<uint32_t>(line.size()) + 1);
  uint32_t endCol = range.end.line == b.line ? range.end.col : static_cast<uint32_t>(line.size()) + 1;
  endCol = std::max(endCol, startCol + 1);
  std::string marker(startCol - 1, ' ');
  marker += '^';
  marker.append(endCol - startCol - 1, '~');
  os << " " << gutter << " | " << marker << "\n";
}

void DiagnosticEngine::render(std::ostream &os) const {
  for (const Diagnostic &d : diags_) {
    renderLocated(os, d.range, d.severity == Severity::Error ? "error" : "warning", d.message);
    for (const Note &n : d.notes) renderLocated(os, n.range, "note", n.message);
    if (!d.hint.empty()) os << "hint: " << d.hint << "\n";
  }
}

std::string DiagnosticEngine::renderToString() const {
  std::ostringstream os;
  render(os);
  return os.str();
}

static size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closestMatch(const std::string &word, const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestDist = std::max<size_t>(1, word.size() / 3) + 1;
  for (const std::string &c : candidates) {
    size_t dist = editDistance(word, c);
    if (dist < bestDist) {
      bestDist = dist;
      best = c;
    }
  }
  return best;
}

}  // namespace scanforge::dsl
