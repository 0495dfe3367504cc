// An indenting text writer for generated CUDA C++: one statement per line, braces that indent.
#pragma once

#include <sstream>
#include <string>

namespace scanforge::cuda {

class CodeWriter {
 public:
  // Writes one line at the current indentation.
  CodeWriter &line(const std::string &text) {
    if (text.empty()) {
      out_ << "\n";
      return *this;
    }
    out_ << std::string(2 * depth_, ' ') << text << "\n";
    return *this;
  }
  // Writes `head {` and indents until the matching close().
  CodeWriter &open(const std::string &head) {
    line(head.empty() ? "{" : head + " {");
    ++depth_;
    return *this;
  }
  CodeWriter &close(const std::string &tail = "") {
    --depth_;
    return line("}" + tail);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int depth_ = 0;
};

}  // namespace scanforge::cuda
