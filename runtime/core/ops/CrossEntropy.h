// Softmax cross-entropy for classification and language modelling.
#pragma once

#include <cstdint>

#include "runtime/core/Autograd.h"

namespace scanforge {

// PyTorch's default ignore_index: targets with this value contribute neither loss nor gradient.
inline constexpr int64_t kIgnoreIndex = -100;

// logits [..., V] and i64 targets [...] (the logits' shape without the last dimension):
//   loss = (1/N) sum_{i : target_i != ignoreIndex} (logsumexp(logits_i) - logits_i[target_i])
// where N counts the non-ignored targets; the gradient of row i is (softmax(logits_i) - onehot) / N.
// When every target is ignored the loss is 0 with a zero gradient (not PyTorch's NaN), so that a
// micro-batch without targets cannot poison a run. A target outside [0, V) is an error.
Variable crossEntropy(const Variable &logits, const Tensor &targets, int64_t ignoreIndex = kIgnoreIndex);

}  // namespace scanforge
