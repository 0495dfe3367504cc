// A .scan source file held in memory, and positions inside it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scanforge::dsl {

// 1-based line and column (in bytes) plus the byte offset; line 0 means "no location".
struct SourceLoc {
  uint32_t offset = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  bool valid() const { return line != 0; }
};

// Half-open range [begin, end).
struct SourceRange {
  SourceLoc begin;
  SourceLoc end;
  bool valid() const { return begin.valid(); }
  static SourceRange span(const SourceRange &a, const SourceRange &b) { return {a.begin, b.end}; }
};

class SourceFile {
 public:
  SourceFile(std::string path, std::string text);

  // Reads a file; on failure returns nullopt and sets `error` to a readable reason.
  static std::optional<SourceFile> load(const std::string &path, std::string &error);

  const std::string &path() const { return path_; }
  const std::string &text() const { return text_; }
  SourceLoc locAt(uint32_t offset) const;
  std::string_view lineText(uint32_t line) const;  // without the newline
  uint32_t lineCount() const { return static_cast<uint32_t>(lineStarts_.size()); }

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> lineStarts_;
};

}  // namespace scanforge::dsl
