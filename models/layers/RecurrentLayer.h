// The paper's recurrent layer around a compiled recurrence: one in-projection from the embedding
// to every input stream of the recurrence (its gates and candidates), the recurrence itself with
// its learned parameters, optionally a bilinear output gating (W_m y) * (W_x y) of its outputs y
// (paper 001, eq. 2), and a down-projection back to the embedding.
#pragma once

#include <optional>

#include "models/config/TrainConfig.h"
#include "models/layers/Mixer.h"
#include "models/layers/ScanOp.h"

namespace scanforge::models {

class RecurrentLayer : public Mixer {
 public:
  // The recurrence's dimension 'd' is expansion * embed; every other dimension needs a size in
  // config.dims. Gate-bias initialisers apply when `gateBiases` is true.
  RecurrentLayer(const ScanOp &scan, const config::ModelConfig &config, bool gateBiases, Generator &gen);

  Variable forward(const Variable &x) override;
  void collect(ModelParams &out, const std::string &prefix) const override;
  Tensor stream(const Tensor &x) override;
  void resetStream(int64_t batch) override;

 private:
  std::vector<Variable> streams(const Variable &x) const;  // in-projection, split per input port
  Variable project(const std::vector<Variable> &outputs) const;

  ScanOp scan_;
  std::map<std::string, int64_t> sizes_;  // every dimension of the recurrence
  std::vector<int64_t> inputSizes_;       // elements per step of each input port
  std::vector<Shape> inputShapes_;        // each input port's dims (without B, T)
  LinearLayer in_, out_;
  std::optional<LinearLayer> gateM_, gateX_;  // the output gating, when configured
  std::vector<Variable> params_;          // the recurrence's parameters, in signature order
  std::vector<Tensor> states_;            // streaming state
};

}  // namespace scanforge::models
