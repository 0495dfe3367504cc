// The baselines of the speed comparison (papers 000/003): a GRU and an LSTM stepped one time
// step at a time, trained with backpropagation through time. Same interface and projections as
// the recurrent layer: hidden size d = expansion * embed, a down-projection back to the embedding.
#pragma once

#include "models/layers/Mixer.h"

namespace scanforge::models {

class SequentialRnn : public Mixer {
 public:
  enum class Cell { Gru, Lstm };
  SequentialRnn(Cell cell, int64_t embed, int64_t hidden, Generator &gen);

  Variable forward(const Variable &x) override;
  void collect(ModelParams &out, const std::string &prefix) const override;
  Tensor stream(const Tensor &x) override;
  void resetStream(int64_t batch) override;

 private:
  // One step: updates h (and c) from the input projection of this step, [B, gates * H].
  void step(const Variable &xProj, Variable &h, Variable &c) const;
  Variable run(const Variable &x, Variable &h, Variable &c) const;

  Cell cell_;
  int64_t hidden_;
  LinearLayer inputGates_, hiddenGates_, out_;
  Tensor streamH_, streamC_;
};

}  // namespace scanforge::models
