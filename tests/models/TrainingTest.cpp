// The layers and the trainer end to end on the CPU: the compiled scan op's gradients through the
// autograd tape, initialisers, a loss that falls, exact resume, and sampling.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/layers/Init.h"
#include "models/layers/Module.h"
#include "models/layers/RecurrentLayer.h"
#include "models/layers/ScanOp.h"
#include "models/train/Trainer.h"
#include "runtime/core/Ops.h"

namespace scanforge::models {
namespace {

namespace fs = std::filesystem;

// The scan op inside an autograd graph: d/d(inputs, params, h0) of sum(w * y) against central
// differences of the op's forward, in f32 (so the bound is loose: 2e-2 relative).
TEST(ScanOp, GradientsThroughTheTapeMatchFiniteDifferences) {
  ScanOp op(compile(std::string(SCANFORGE_SOURCE_DIR) + "/models/selective_ssm.scan"));
  Generator gen(3);
  auto make = [&](const Shape &shape, double lo, double hi) {
    Tensor t = Tensor::empty(shape, DType::F32);
    fillUniform(t, lo, hi, gen);
    return Variable(t, true);
  };
  int64_t B = 2, T = 9, D = 3, N = 2;
  std::vector<Variable> inputs = {make({B, T, D}, -1, 1), make({B, T, D}, -1, 1), make({B, T, N}, -1, 1), make({B, T, N}, -1, 1)};
  std::vector<Variable> params = {make({D, N}, -1.5, -0.5), make({D}, -1, 1)};
  std::vector<Variable> initial = {make({B, D, N}, -1, 1)};
  Tensor w = Tensor::empty({B, T, D}, DType::F32);
  fillUniform(w, -1, 1, gen);
  auto lossOf = [&] { return sum(mul(op(inputs, params, initial)[0], Variable(w))); };
  backward(lossOf());
  std::vector<Variable> all = inputs;
  all.insert(all.end(), params.begin(), params.end());
  all.insert(all.end(), initial.begin(), initial.end());
  for (const Variable &v : all) {
    std::vector<double> analytic = v.grad().toDoubles(), numeric;
    float *x = v.value().data<float>();
    for (int64_t i = 0; i < v.value().numel(); ++i) {
      NoGradGuard noGrad;
      float saved = x[i], h = 1e-2f;
      x[i] = saved + h;
      double plus = lossOf().item();
      x[i] = saved - h;
      double minus = lossOf().item();
      x[i] = saved;
      numeric.push_back((plus - minus) / (2 * h));
    }
    double num = 0, den = 0;
    for (size_t i = 0; i < numeric.size(); ++i) {
      num += (analytic[i] - numeric[i]) * (analytic[i] - numeric[i]);
      den += numeric[i] * numeric[i];
    }
    EXPECT_GT(den, 0.0);
    EXPECT_LE(std::sqrt(num / den), 2e-2) << "gradient of a " << v.value().describe();
  }
}

TEST(Init, GumbelBiasFollowsPaper002) {
  Generator gen(5);
  Tensor bias = Tensor::empty({4000}, DType::F32);
  initGateBias(bias, {"gumbel", {{"alpha", 0.0}, {"tau", 0.5}}}, 64, "test", gen);
  // sigmoid(b) = G(0, 0.5) = sigmoid(2 logit(u)): bimodal, mostly near 0 or 1, symmetric.
  int64_t extreme = 0;
  double mean = 0;
  for (double b : bias.toDoubles()) {
    double g = 1 / (1 + std::exp(-b));
    extreme += g < 0.1 || g > 0.9;
    mean += g / 4000;
  }
  EXPECT_GT(extreme, 1600);          // uniform u would give 20%; the trick gives ~45%
  EXPECT_NEAR(mean, 0.5, 0.02);
  initGateBias(bias, {"ugi", {}}, 64, "test", gen);  // UGI = gumbel(0, 1): sigmoid(b) = u, uniform
  extreme = 0;
  for (double b : bias.toDoubles()) extreme += std::abs(1 / (1 + std::exp(-b)) - 0.5) > 0.4;
  EXPECT_NEAR(extreme / 4000.0, 0.2, 0.03);
}

TEST(Init, S4dRealAndLruRing) {
  Generator gen(7);
  Tensor A = Tensor::empty({3, 4}, DType::F32);
  initParameter(A, {"s4d_real", {}}, "A", gen);
  EXPECT_EQ(A.toDoubles(), (std::vector<double>{-1, -2, -3, -4, -1, -2, -3, -4, -1, -2, -3, -4}));
  Tensor nu = Tensor::empty({500}, DType::F32), gamma = Tensor::empty({500}, DType::F32);
  initParameter(nu, {"lru_nu", {{"r_min", 0.9}, {"r_max", 0.99}}}, "nu_log", gen);
  initParameter(gamma, {"lru_gamma", {}}, "gamma_log", gen, &nu);
  std::vector<double> n = nu.toDoubles(), g = gamma.toDoubles();
  for (size_t i = 0; i < n.size(); ++i) {
    double r = std::exp(-std::exp(n[i]));
    EXPECT_GE(r, 0.9 - 1e-6);
    EXPECT_LE(r, 0.99 + 1e-6);
    EXPECT_NEAR(std::exp(2 * g[i]), 1 - r * r, 1e-5);
  }
}

// Paper 001's gated RNN layer (eq. 2): in-projection to the recurrence's inputs, the scan, then the
// bilinear output gating D((W_m y) * (W_x y)), recomputed here from the layer's own parameters.
TEST(RecurrentLayer, BilinearOutputGatingIsDOfTheProductOfTwoMaps) {
  ScanOp op(compile(std::string(SCANFORGE_SOURCE_DIR) + "/models/glu_rnn.scan"));
  config::ModelConfig config;
  config.embed = 4;
  config.expansion = 2;
  config.outputGating = 5;
  Generator gen(11);
  RecurrentLayer layer(op, config, false, gen);
  ModelParams params;
  layer.collect(params, "l");
  std::map<std::string, Variable> p;
  for (const ModelParam &mp : params) p[mp.param.name] = mp.param.variable;
  ASSERT_EQ(p.count("l.out_gate_m.weight") + p.count("l.out_gate_x.weight"), 2u);
  EXPECT_EQ(p.at("l.out_gate_m.weight").shape(), (Shape{5, 8}));
  EXPECT_EQ(p.at("l.out_proj.weight").shape(), (Shape{4, 5}));

  Tensor x = Tensor::empty({2, 7, 4}, DType::F32);
  fillUniform(x, -1, 1, gen);
  std::vector<double> got = layer.forward(Variable(x)).value().toDoubles();
  std::vector<Variable> mv = split(linear(Variable(x), p.at("l.in_proj.weight"), p.at("l.in_proj.bias")), {8, 8});
  Variable y = op(mv, {p.at("l.scan.lambda")})[0];
  Variable gated = mul(linear(y, p.at("l.out_gate_m.weight"), p.at("l.out_gate_m.bias")),
                       linear(y, p.at("l.out_gate_x.weight"), p.at("l.out_gate_x.bias")));
  std::vector<double> want = linear(gated, p.at("l.out_proj.weight"), p.at("l.out_proj.bias")).value().toDoubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * (1 + std::abs(want[i])));
}

// norm = "none" is the identity and has no parameters (paper 001's students have no normalisation).
TEST(Norm, NoneIsTheIdentity) {
  Norm none(3, "none");
  ModelParams params;
  none.collect(params, "n");
  EXPECT_TRUE(params.empty());
  Generator gen(2);
  Tensor x = Tensor::empty({2, 3}, DType::F32);
  fillUniform(x, -1, 1, gen);
  EXPECT_EQ(none(Variable(x)).value().toDoubles(), x.toDoubles());
}

std::string writeText(const fs::path &path) {
  std::ofstream out(path);
  for (int i = 0; i < 400; ++i) out << "the quick brown fox jumps over the lazy dog. " << (i % 7 ? "" : "\n");
  return path.string();
}

config::TrainConfig tinyConfig(const fs::path &dir, const std::string &data, int64_t steps) {
  std::string text = "{\"task\": {\"name\": \"char_lm\", \"data\": \"" + data + "\", \"context\": 32},"
                     "\"model\": {\"recurrence\": \"mingru\", \"layers\": 1, \"embed\": 32, \"expansion\": 1},"
                     "\"train\": {\"steps\": " + std::to_string(steps) + ", \"batch\": 8, \"lr\": 0.01, \"warmup\": 2,"
                     " \"eval_every\": 10, \"eval_batches\": 2, \"log_every\": 100, \"checkpoint_every\": 10},"
                     "\"output\": {\"dir\": \"" + dir.string() + "\", \"plot\": false}}";
  config::TrainConfig c = config::parseTrainConfig(text, "tiny.json");
  c.model.modelsDir = std::string(SCANFORGE_SOURCE_DIR) + "/models";
  return c;
}

std::vector<std::string> metricLines(const fs::path &dir) {
  std::ifstream in(dir / "metrics.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    size_t cut = line.find(", \"tokens_per_s\"");  // timings differ between runs; losses must not
    lines.push_back(cut == std::string::npos ? line : line.substr(0, cut));
  }
  return lines;
}

TEST(Trainer, LossFallsResumesExactlyAndSamples) {
  fs::path root = fs::temp_directory_path() / ("scanforge-train-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::string data = writeText(root / "text.txt");
  std::ostringstream log;

  TrainResult full = train(tinyConfig(root / "full", data, 40), false, log);
  std::vector<std::string> uninterrupted = metricLines(root / "full");
  EXPECT_EQ(full.steps, 40);
  EXPECT_LT(full.bestTestLoss, 2.0) << log.str();  // starts near log(vocabulary) = 3.0

  train(tinyConfig(root / "resumed", data, 40), false, log, /*stopAfter=*/20);
  train(tinyConfig(root / "resumed", data, 40), true, log);
  EXPECT_EQ(metricLines(root / "resumed"), uninterrupted);  // bit for bit, evaluations included

  std::string text = sampleText((root / "full" / "best.safetensors").string(), "the ", 50, 0.8, 0, 1);
  EXPECT_EQ(text.size(), 54u);
  EXPECT_EQ(text.substr(0, 4), "the ");
  fs::remove_all(root);
}

TEST(Trainer, DivergenceStopsWithTheLastGoodCheckpoint) {
  fs::path root = fs::temp_directory_path() / ("scanforge-diverge-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::string data = writeText(root / "text.txt");
  config::TrainConfig c = tinyConfig(root / "run", data, 30);
  c.train.lr = 1e6;  // guaranteed to blow up
  c.train.clip = 0;
  std::ostringstream log;
  try {
    train(c, false, log);
    ADD_FAILURE() << "a diverging run finished";
  } catch (const TrainingError &e) {
    EXPECT_NE(std::string(e.what()).find("training diverged at step"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("The last good checkpoint is"), std::string::npos);
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace scanforge::models
