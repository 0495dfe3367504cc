// AdamW (Loshchilov & Hutter), with PyTorch's torch.optim.AdamW update. For each parameter p with
// gradient g, at its t-th update:
//   p  <- p * (1 - lr * weightDecay)                 (decoupled weight decay, per group)
//   m  <- beta1 * m + (1 - beta1) * g
//   v  <- beta2 * v + (1 - beta2) * g^2
//   p  <- p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// A parameter without a gradient (none reached it since zeroGrad) is skipped and its t does not
// advance. Moments have the parameter's dtype and the arithmetic runs in it.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/Parameter.h"
#include "runtime/core/Safetensors.h"

namespace scanforge {

struct ParamGroup {
  std::vector<Parameter> params;
  double weightDecay = 0;  // e.g. 0.1 for weight matrices, 0 for biases, norms and embeddings
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

class AdamW {
 public:
  AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});

  void step();
  void zeroGrad();  // drops every parameter's gradient
  void setLearningRate(double lr);
  double learningRate() const { return options_.lr; }
  std::vector<Parameter> parameters() const;  // every group's, in order

  // The moments and step counts, as tensors "<prefix><param>.exp_avg" / ".exp_avg_sq" and metadata
  // "<prefix><param>.step", so that a resumed run continues bit for bit.
  void saveState(Checkpoint &checkpoint, const std::string &prefix = "adamw.") const;
  void loadState(const Checkpoint &checkpoint, const std::string &prefix = "adamw.");

 private:
  struct Moments {
    Tensor expAvg, expAvgSq;
    int64_t step = 0;
  };
  std::vector<ParamGroup> groups_;
  std::vector<std::vector<Moments>> moments_;  // parallel to groups_[i].params
  AdamWOptions options_;
};

}  // namespace scanforge
