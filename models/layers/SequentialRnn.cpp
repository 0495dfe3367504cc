#include "models/layers/SequentialRnn.h"

#include "runtime/core/Ops.h"

namespace scanforge::models {

SequentialRnn::SequentialRnn(Cell cell, int64_t embed, int64_t hidden, Generator &gen) : cell_(cell), hidden_(hidden) {
  int64_t gates = (cell == Cell::Gru ? 3 : 4) * hidden;
  inputGates_ = LinearLayer(embed, gates, true, gen);
  hiddenGates_ = LinearLayer(hidden, gates, true, gen);
  out_ = LinearLayer(hidden, embed, true, gen);
}

void SequentialRnn::step(const Variable &xProj, Variable &h, Variable &c) const {
  int64_t H = hidden_;
  Variable hProj = hiddenGates_(h);
  if (cell_ == Cell::Gru) {
    // PyTorch's GRU: r, z from x and h; n = tanh(x_n + r * h_n); h = n + z * (h - n).
    std::vector<Variable> xs = split(xProj, {H, H, H}), hs = split(hProj, {H, H, H});
    Variable r = sigmoid(add(xs[0], hs[0])), z = sigmoid(add(xs[1], hs[1]));
    Variable n = tanh(add(xs[2], mul(r, hs[2])));
    h = add(n, mul(z, sub(h, n)));
    return;
  }
  // LSTM: i, f, g, o; c = f c + i g; h = o tanh(c).
  std::vector<Variable> g = split(add(xProj, hProj), {H, H, H, H});
  c = add(mul(sigmoid(g[1]), c), mul(sigmoid(g[0]), tanh(g[2])));
  h = mul(sigmoid(g[3]), tanh(c));
}

Variable SequentialRnn::run(const Variable &x, Variable &h, Variable &c) const {
  int64_t B = x.shape()[0], T = x.shape()[1];
  Variable proj = inputGates_(x);  // all steps at once
  int64_t width = proj.shape()[2];
  Variable flat = reshape(proj, {B, T * width});
  std::vector<Variable> outputs;
  for (int64_t t = 0; t < T; ++t) {
    step(slice(flat, t * width, width), h, c);
    outputs.push_back(h);
  }
  return out_(reshape(outputs.size() == 1 ? outputs.front() : concat(outputs), {B, T, hidden_}));
}

Variable SequentialRnn::forward(const Variable &x) {
  Variable h(Tensor::zeros({x.shape()[0], hidden_}, DType::F32)), c(Tensor::zeros({x.shape()[0], hidden_}, DType::F32));
  return run(x, h, c);
}

void SequentialRnn::collect(ModelParams &out, const std::string &prefix) const {
  inputGates_.collect(out, prefix + ".input_gates");
  hiddenGates_.collect(out, prefix + ".hidden_gates");
  out_.collect(out, prefix + ".out_proj");
}

void SequentialRnn::resetStream(int64_t batch) {
  streamH_ = Tensor::zeros({batch, hidden_}, DType::F32);
  streamC_ = Tensor::zeros({batch, hidden_}, DType::F32);
}

Tensor SequentialRnn::stream(const Tensor &x) {
  NoGradGuard noGrad;
  Variable h(streamH_), c(streamC_);
  Tensor y = run(Variable(x), h, c).value();
  streamH_ = h.value();
  streamC_ = c.value();
  return y;
}

}  // namespace scanforge::models
