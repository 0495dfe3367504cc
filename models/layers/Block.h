// The papers' block (paper 000, App. C; Mamba-style):
//   h = Norm(x); h = SiLU(CausalConv4(h)) [optional]; x = x + Dropout(Mixer(h))
//   x = x + Dropout(W2 GELU(W1 Norm(x)))     [optional MLP]
#pragma once

#include <memory>

#include "models/config/TrainConfig.h"
#include "models/layers/Mixer.h"

namespace scanforge::models {

class Block {
 public:
  Block(std::unique_ptr<Mixer> mixer, const config::ModelConfig &config, Generator &gen);

  Variable forward(const Variable &x, bool training, Generator &dropout);
  void collect(ModelParams &out, const std::string &prefix) const;
  Tensor stream(const Tensor &x);
  void resetStream(int64_t batch);

 private:
  Variable convolve(const Variable &h) const;

  std::unique_ptr<Mixer> mixer_;
  bool conv_, mlp_;
  double dropout_;
  int64_t embed_;
  Norm norm1_, norm2_;
  Variable convWeight_, convBias_;
  LinearLayer fc1_, fc2_;
  Tensor convHistory_;  // streaming: the last 3 normalised inputs, [B, 3, E]
};

}  // namespace scanforge::models
