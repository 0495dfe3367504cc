#include "models/data/CopyTasks.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "runtime/core/Error.h"
#include "runtime/core/ops/CrossEntropy.h"

namespace scanforge::tasks {

CopyTaskConfig CopyTaskConfig::copying(int64_t blankLength) { return {10, 10, blankLength, false}; }

CopyTaskConfig CopyTaskConfig::selectiveCopying(int64_t blankLength) { return {16, 16, blankLength, true}; }

SequenceBatch sampleCopyTask(const CopyTaskConfig &config, int64_t batch, Generator &gen) {
  const char *op = "sampleCopyTask";
  if (config.vocab < 3 || config.dataTokens < 1 || config.blankLength < 0 || batch < 1)
    throw RuntimeError(op, "needs vocab >= 3 (blank, marker and a data token), dataTokens >= 1, blankLength >= 0 and "
                           "batch >= 1, got vocab " + std::to_string(config.vocab) + ", dataTokens " +
                               std::to_string(config.dataTokens) + ", blankLength " + std::to_string(config.blankLength) +
                               ", batch " + std::to_string(batch));
  int64_t m = config.dataTokens, length = config.length(), region = m + config.blankLength;
  SequenceBatch out{Tensor::zeros({batch, length}, DType::I64), Tensor::full({batch, length}, kIgnoreIndex, DType::I64)};
  for (int64_t b = 0; b < batch; ++b) {
    int64_t *inputs = out.inputs.data<int64_t>() + b * length, *targets = out.targets.data<int64_t>() + b * length;
    // Positions of the data tokens: the first M steps, or M distinct sorted steps of the region
    // (Floyd's sampling: exactly M draws).
    std::vector<int64_t> positions;
    if (config.selective) {
      std::set<int64_t> chosen;
      for (int64_t j = region - m; j < region; ++j) {
        int64_t t = gen.uniformInt(j + 1);
        chosen.insert(chosen.count(t) ? j : t);
      }
      positions.assign(chosen.begin(), chosen.end());
    } else {
      for (int64_t i = 0; i < m; ++i) positions.push_back(i);
    }
    for (int64_t i = 0; i < m; ++i) {
      int64_t token = 1 + gen.uniformInt(config.vocab - 2);
      inputs[positions[static_cast<size_t>(i)]] = token;
      inputs[region + i] = config.vocab - 1;
      targets[region + i] = token;
    }
  }
  return out;
}

}  // namespace scanforge::tasks
