// A stack of blocks between an input map and an output head:
//   tokens [B, T] -> Embedding -> blocks -> Norm -> Linear -> logits [B, T, vocab]   (token tasks)
//   x [B, T, F]   -> Linear    -> blocks -> Norm -> Linear -> y [B, T, outputs]      (real-valued tasks)
// The blocks' time mixer is the compiled recurrence models/<recurrence>.scan, or the sequential
// "gru" / "lstm" baseline.
#pragma once

#include <memory>

#include "models/config/TrainConfig.h"
#include "models/layers/Block.h"

namespace scanforge::models {

struct SequenceModelShape {
  bool tokens = true;
  int64_t inputs = 0;   // vocabulary size (tokens) or features per step
  int64_t outputs = 0;  // vocabulary size (tokens) or values per step
};

class SequenceModel {
 public:
  // modelsDir holds the .scan files. Parameters are drawn from a generator seeded with `seed`.
  SequenceModel(const config::ModelConfig &config, const SequenceModelShape &shape, uint64_t seed,
                const std::string &modelsDir);

  // inputs: i64 token ids [B, T] or f32 values [B, T, F]. Returns [B, T, outputs].
  Variable forward(const Tensor &inputs, bool training, Generator &dropout);
  const ModelParams &parameters() const { return params_; }
  const SequenceModelShape &shape() const { return shape_; }

  // Streaming inference (sequential mode, O(1) state per token): resetStream(B), then stream()
  // on consecutive pieces of the sequences.
  void resetStream(int64_t batch);
  Tensor stream(const Tensor &inputs);

 private:
  Variable embed(const Tensor &inputs) const;
  Variable head(const Variable &x) const;

  SequenceModelShape shape_;
  Variable embedding_;
  LinearLayer inputMap_, head_;
  std::vector<Block> blocks_;
  Norm finalNorm_;
  ModelParams params_;
};

}  // namespace scanforge::models
