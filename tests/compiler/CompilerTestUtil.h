// Helpers for compiler tests: compile a recurrence (forward + generated backward), make random
// tensors that are never zero, and run the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler/mlir/Driver.h"
#include "compiler/mlir/Target/Reference/Gradients.h"

namespace scanforge::test {

using reference::Tensor;
using reference::TensorMap;

inline std::string readModel(const std::string &name) {
  std::ifstream in(std::string(SCANFORGE_SOURCE_DIR) + "/models/" + name + ".scan");
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// The source of a model with its direction flipped to `reverse`.
inline std::string reversed(const std::string &source) {
  std::string out = source;
  size_t at = out.find("recurrence ");
  while (at != std::string::npos && at > 0 && out[at - 1] != '\n') at = out.find("recurrence ", at + 1);
  out.insert(at, "reverse ");
  return out;
}

struct Compiled {
  scan::Session session;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  scan::RecurrenceOp forward, backward;
};

// Compiles source text through the full pipeline; fails the test on any error.
inline std::unique_ptr<Compiled> compileReference(const std::string &source, const std::string &name = "test.scan") {
  auto c = std::make_unique<Compiled>();
  std::ostringstream errs;
  c->module = c->session.loadText(name, source, errs);
  EXPECT_TRUE(c->module) << errs.str();
  if (!c->module) return nullptr;
  bool ok = mlir::succeeded(c->session.compile(*c->module));
  EXPECT_TRUE(ok);
  if (!ok) return nullptr;
  for (auto rec : c->module->getOps<scan::RecurrenceOp>()) (rec.getAdjointOf() ? c->backward : c->forward) = rec;
  return c;
}

class Random {
 public:
  explicit Random(uint32_t seed) : gen_(seed) {}
  // Uniform in [lo, hi], but never within 0.05 of zero (random inputs are never zeros).
  Tensor tensor(std::vector<int64_t> shape, double lo = -1.0, double hi = 1.0) {
    Tensor t(std::move(shape));
    std::uniform_real_distribution<double> dist(lo, hi);
    for (double &v : t.data) {
      do v = dist(gen_);
      while (std::fabs(v) < 0.05);
    }
    return t;
  }

 private:
  std::mt19937 gen_;
};

// ||a - b|| / ||b||, over all elements.
inline double relativeError(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.shape, b.shape);
  double num = 0, den = 0;
  for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
    num += (a.data[i] - b.data[i]) * (a.data[i] - b.data[i]);
    den += b.data[i] * b.data[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace scanforge::test
