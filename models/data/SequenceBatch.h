// One batch of a sequence task: what the model reads and what its outputs are scored against.
#pragma once

#include "runtime/core/Tensor.h"

namespace scanforge::tasks {

struct SequenceBatch {
  Tensor inputs;
  Tensor targets;
};

}  // namespace scanforge::tasks
