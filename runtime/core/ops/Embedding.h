// Token embedding lookup.
#pragma once

#include "runtime/core/Autograd.h"

namespace scanforge {

// ids: i64 of any shape [...] with values in [0, V); table [V, D]. Returns table[ids], [..., D].
// The table's gradient is the scatter-add of the output gradient rows into the rows of their ids.
Variable embedding(const Tensor &ids, const Variable &table);

}  // namespace scanforge
