// The training tasks behind one interface: what the model reads and predicts, batches from the
// train and test distributions, the loss, and task metrics (e.g. recall accuracy).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "models/config/TrainConfig.h"
#include "models/data/CharDataset.h"
#include "models/data/SequenceBatch.h"
#include "models/layers/SequenceModel.h"

namespace scanforge::models {

using tasks::CharDataset;
using tasks::SequenceBatch;
using tasks::Split;

class Task {
 public:
  virtual ~Task() = default;
  static std::unique_ptr<Task> create(const config::TaskConfig &config, uint64_t seed);

  virtual SequenceModelShape shape() const = 0;
  virtual SequenceBatch sample(Split split, int64_t batch, Generator &gen) const = 0;
  virtual Variable loss(const Variable &outputs, const Tensor &targets) const = 0;  // a scalar
  virtual std::map<std::string, double> metrics(const Variable &outputs, const Tensor &targets) const { return {}; }
  virtual int64_t tokensPerSequence() const = 0;  // for throughput
  virtual std::string describe() const = 0;
  // Character LM only (sampling text): the dataset.
  virtual const CharDataset *characters() const { return nullptr; }
};

}  // namespace scanforge::models
