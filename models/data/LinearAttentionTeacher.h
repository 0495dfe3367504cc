// The teacher-student task of paper 001 (section 4.1, appendix B): a student learns to reproduce a
// fixed causal linear self-attention layer (eq. 1),
//   y_t = (sum_{t' <= t} (W_V x_t') (W_K x_t')^T) (W_Q x_t),
// on inputs x_t ~ N(0, I). Defaults follow the paper: d = 4, sequences of 32 steps. The paper does
// not give the weights' scale; by default we draw W_Q, W_K, W_V entries from N(0, 1/d) so that
// queries, keys and values have unit variance.
#pragma once

#include <cstdint>
#include <optional>

#include "models/data/SequenceBatch.h"
#include "runtime/core/Random.h"

namespace scanforge::tasks {

struct LinearAttentionTeacherConfig {
  int64_t dim = 4;
  int64_t steps = 32;
  std::optional<double> weightStd;  // unset: 1 / sqrt(dim)
};

class LinearAttentionTeacher {
 public:
  // Draws the teacher's W_Q, W_K, W_V (f64 [d, d], in that order) from `gen`.
  LinearAttentionTeacher(const LinearAttentionTeacherConfig &config, Generator &gen);

  // inputs x: [batch, steps, d] ~ N(0, 1); targets: the teacher's outputs, same shape.
  SequenceBatch sample(int64_t batch, Generator &gen, DType dtype = DType::F32) const;
  // The teacher's outputs for any inputs [B, T, d] (f32 or f64), in the inputs' dtype; computed as
  // the recurrence S_t = S_{t-1} + v_t k_t^T, y_t = S_t q_t.
  Tensor apply(const Tensor &inputs) const;

  const Tensor &query() const { return wq_; }
  const Tensor &key() const { return wk_; }
  const Tensor &value() const { return wv_; }

 private:
  LinearAttentionTeacherConfig config_;
  Tensor wq_, wk_, wv_;
};

}  // namespace scanforge::tasks
