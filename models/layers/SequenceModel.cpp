#include "models/layers/SequenceModel.h"

#include "models/layers/RecurrentLayer.h"
#include "models/layers/SequentialRnn.h"
#include "runtime/core/Error.h"
#include "runtime/core/Ops.h"

namespace scanforge::models {

SequenceModel::SequenceModel(const config::ModelConfig &config, const SequenceModelShape &shape, uint64_t seed,
                             const std::string &modelsDir)
    : shape_(shape) {
  Generator gen(seed);
  if (shape.tokens) {
    Tensor table = Tensor::empty({shape.inputs, config.embed}, DType::F32);
    fillNormal(table, 0.0, 1.0, gen);  // PyTorch's nn.Embedding
    embedding_ = Variable(table, true);
  } else {
    inputMap_ = LinearLayer(shape.inputs, config.embed, true, gen);
  }
  std::unique_ptr<ScanOp> scan;
  if (config.recurrence != "gru" && config.recurrence != "lstm") {
    std::string path = modelsDir + "/" + config.recurrence + ".scan";
    scan = std::make_unique<ScanOp>(compile(path));
  }
  int64_t hidden = config.expansion * config.embed;
  for (int64_t i = 0; i < config.layers; ++i) {
    std::unique_ptr<Mixer> mixer;
    if (config.recurrence == "gru") mixer = std::make_unique<SequentialRnn>(SequentialRnn::Cell::Gru, config.embed, hidden, gen);
    else if (config.recurrence == "lstm") mixer = std::make_unique<SequentialRnn>(SequentialRnn::Cell::Lstm, config.embed, hidden, gen);
    else mixer = std::make_unique<RecurrentLayer>(*scan, config, i == 0 || !config.gateBiasFirstLayerOnly, gen);
    blocks_.emplace_back(std::move(mixer), config, gen);
  }
  finalNorm_ = Norm(config.embed, config.norm);
  head_ = LinearLayer(config.embed, shape.outputs, true, gen);

  if (shape.tokens) params_.push_back({{"embedding.weight", embedding_}, false});
  else inputMap_.collect(params_, "input");
  for (size_t i = 0; i < blocks_.size(); ++i) blocks_[i].collect(params_, "layers." + std::to_string(i));
  finalNorm_.collect(params_, "norm");
  head_.collect(params_, "head");
}

Variable SequenceModel::embed(const Tensor &inputs) const {
  if (shape_.tokens) {
    if (inputs.dtype() != DType::I64 || inputs.dim() != 2)
      throw RuntimeError("model input", "the model reads token ids, i64 [B, T]; got " + inputs.describe());
    return embedding(inputs, embedding_);
  }
  if (inputs.dim() != 3 || inputs.shape()[2] != shape_.inputs)
    throw RuntimeError("model input", "the model reads [B, T, " + std::to_string(shape_.inputs) + "] values; got " + inputs.describe());
  return inputMap_(Variable(inputs));
}

Variable SequenceModel::head(const Variable &x) const { return head_(finalNorm_(x)); }

Variable SequenceModel::forward(const Tensor &inputs, bool training, Generator &dropout) {
  Variable x = embed(inputs);
  for (Block &b : blocks_) x = b.forward(x, training, dropout);
  return head(x);
}

void SequenceModel::resetStream(int64_t batch) {
  for (Block &b : blocks_) b.resetStream(batch);
}

Tensor SequenceModel::stream(const Tensor &inputs) {
  NoGradGuard noGrad;
  Tensor x = embed(inputs).value();
  for (Block &b : blocks_) x = b.stream(x);
  return head(Variable(x)).value();
}

}  // namespace scanforge::models
