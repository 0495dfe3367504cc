#include "models/layers/Block.h"

#include <cmath>

#include "runtime/core/Ops.h"

namespace scanforge::models {

constexpr int64_t kConvWidth = 4;

Block::Block(std::unique_ptr<Mixer> mixer, const config::ModelConfig &config, Generator &gen)
    : mixer_(std::move(mixer)), conv_(config.conv), mlp_(config.mlp), dropout_(config.dropout), embed_(config.embed) {
  norm1_ = Norm(embed_, config.norm);
  if (conv_) {  // PyTorch's Conv1d default: U(+-1/sqrt(fan_in)), fan_in = kernel width for depthwise
    double bound = 1.0 / std::sqrt(static_cast<double>(kConvWidth));
    convWeight_ = uniformParam({embed_, kConvWidth}, bound, gen);
    convBias_ = uniformParam({embed_}, bound, gen);
  }
  if (mlp_) {
    norm2_ = Norm(embed_, config.norm);
    fc1_ = LinearLayer(embed_, config.mlpExpansion * embed_, true, gen);
    fc2_ = LinearLayer(config.mlpExpansion * embed_, embed_, true, gen);
  }
}

Variable Block::convolve(const Variable &h) const { return silu(causalConv1d(h, convWeight_, convBias_)); }

Variable Block::forward(const Variable &x, bool training, Generator &gen) {
  Variable h = norm1_(x);
  if (conv_) h = convolve(h);
  Variable y = add(x, dropout(mixer_->forward(h), dropout_, training, gen));
  if (!mlp_) return y;
  return add(y, dropout(fc2_(gelu(fc1_(norm2_(y)))), dropout_, training, gen));
}

void Block::collect(ModelParams &out, const std::string &prefix) const {
  norm1_.collect(out, prefix + ".norm1");
  if (conv_) {
    out.push_back({{prefix + ".conv.weight", convWeight_}, true});
    out.push_back({{prefix + ".conv.bias", convBias_}, false});
  }
  mixer_->collect(out, prefix + ".mixer");
  if (mlp_) {
    norm2_.collect(out, prefix + ".norm2");
    fc1_.collect(out, prefix + ".mlp.fc1");
    fc2_.collect(out, prefix + ".mlp.fc2");
  }
}

void Block::resetStream(int64_t batch) {
  mixer_->resetStream(batch);
  convHistory_ = Tensor::zeros({batch, kConvWidth - 1, embed_}, DType::F32);
}

// Continues the sequence: the convolution sees the last 3 normalised inputs of earlier calls.
Tensor Block::stream(const Tensor &x) {
  NoGradGuard noGrad;
  int64_t B = x.shape()[0], T = x.shape()[1], E = embed_, H = kConvWidth - 1;
  Variable h = norm1_(Variable(x));
  if (conv_) {
    Variable window = reshape(concat({reshape(Variable(convHistory_), {B, H * E}), reshape(h, {B, T * E})}), {B, H + T, E});
    Variable flat = reshape(convolve(window), {B, (H + T) * E});
    convHistory_ = reshape(slice(reshape(window, {B, (H + T) * E}), T * E, H * E), {B, H, E}).value();
    h = reshape(slice(flat, H * E, T * E), {B, T, E});
  }
  Variable y = add(Variable(x), Variable(mixer_->stream(h.value().contiguous())));
  if (mlp_) y = add(y, fc2_(gelu(fc1_(norm2_(y)))));
  return y.value();
}

}  // namespace scanforge::models
