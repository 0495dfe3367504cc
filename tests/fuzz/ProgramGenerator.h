// Random well-typed .scan recurrences for differential testing (Csmith-style), and mutants of them
// that the front end must reject with a located error. Everything is a function of the seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scanforge::fuzz {

struct GenPort {
  std::string name;
  std::vector<std::string> dims;  // canonical order (d, n, e)
  bool bf16 = false;
};

// One body line: `lhs = rhs`. `output` names the output port a line assigns (or "").
struct GenStatement {
  std::string lhs, rhs;
  std::string output;
  bool isState = false;
};

struct Program {
  std::string name = "fz";
  bool reverse = false;
  std::vector<GenPort> inputs, params, outputs;
  std::vector<GenStatement> body;
  std::string text() const;
};

Program generate(uint64_t seed);

// A program made invalid in one way; `kind` names the way (state-squared, unknown-function, ...).
struct Mutant {
  std::string kind;
  Program program;
};
Mutant mutate(const Program &program, uint64_t seed);

}  // namespace scanforge::fuzz
