// What the model's building blocks share: named trainable parameters (with whether weight decay
// applies to them) and a seeded generator for their initial values.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/Parameter.h"
#include "runtime/core/Random.h"

namespace scanforge::models {

struct ModelParam {
  Parameter param;
  bool decay;  // weight matrices decay; biases, norms, embeddings and recurrence parameters do not
};
using ModelParams = std::vector<ModelParam>;

// A new f32 parameter of `shape`, uniform in [-bound, bound].
Variable uniformParam(const Shape &shape, double bound, Generator &gen);

// y = x W^T + b with PyTorch's default initialisation U(-1/sqrt(in), 1/sqrt(in)).
class LinearLayer {
 public:
  LinearLayer() = default;
  LinearLayer(int64_t in, int64_t out, bool bias, Generator &gen);
  Variable operator()(const Variable &x) const;
  void collect(ModelParams &out, const std::string &prefix) const;
  const Variable &weight() const { return weight_; }
  const Variable &bias() const { return bias_; }
  int64_t in() const { return in_; }

 private:
  int64_t in_ = 0;
  Variable weight_, bias_;
};

// LayerNorm (gamma, beta) or RMSNorm (gamma) over the last dimension, or none: the identity with
// no parameters (paper 001's students). kind: "layernorm", "rmsnorm" or "none" (model.norm).
class Norm {
 public:
  Norm() = default;
  Norm(int64_t dim, const std::string &kind);
  Variable operator()(const Variable &x) const;
  void collect(ModelParams &out, const std::string &prefix) const;

 private:
  enum class Kind { None, Layer, Rms };
  Kind kind_ = Kind::None;
  Variable gamma_, beta_;
};

}  // namespace scanforge::models
