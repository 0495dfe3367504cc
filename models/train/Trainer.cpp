#include "models/train/Trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/train/Task.h"
#include "runtime/core/AdamW.h"
#include "runtime/core/GradClip.h"
#include "runtime/core/LrSchedule.h"
#include "runtime/core/Ops.h"
#include "runtime/core/Safetensors.h"

namespace scanforge::models {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string modelsDirOf(const config::ModelConfig &m) { return m.modelsDir.empty() ? SCANFORGE_MODELS_DIR : m.modelsDir; }

std::string exact(double v) {  // round-trips: resumed runs compare their metrics bit for bit
  std::ostringstream os;
  os << std::setprecision(17) << v;
  return os.str();
}

std::string duration(double seconds) {
  int64_t s = static_cast<int64_t>(seconds + 0.5);
  std::ostringstream os;
  if (s >= 3600) os << s / 3600 << "h" << std::setw(2) << std::setfill('0') << (s % 3600) / 60 << "m";
  else if (s >= 60) os << s / 60 << "m" << std::setw(2) << std::setfill('0') << s % 60 << "s";
  else os << s << "s";
  return os.str();
}

std::string vocabularyJson(const CharDataset &data) {
  nlohmann::json codes = nlohmann::json::array();
  for (char32_t c : data.vocabulary()) codes.push_back(static_cast<uint32_t>(c));
  return codes.dump();
}

std::string utf8(char32_t c) {
  std::string out;
  if (c < 0x80) out += static_cast<char>(c);
  else if (c < 0x800) out += {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
  else if (c < 0x10000)
    out += {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
  else
    out += {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3F)),
            static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
  return out;
}

// Keeps metrics.jsonl consistent with a checkpoint: on resume, drop what was logged after it.
void truncateMetrics(const fs::path &path, int64_t step) {
  std::ifstream in(path);
  std::vector<std::string> kept;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
    if (!entry.is_discarded() && entry.value("step", int64_t{0}) <= step) kept.push_back(line);
  }
  std::ofstream out(path, std::ios::trunc);
  for (const std::string &line : kept) out << line << "\n";
}

// The train and test loss curves as a PNG, by gnuplot (skipped with a note if it is missing).
void plotLosses(const fs::path &dir, std::ostream &log) {
  fs::path train = dir / "loss-train.dat", test = dir / "loss-test.dat";
  {
    std::ifstream in(dir / "metrics.jsonl");
    std::ofstream tr(train), te(test);
    for (std::string line; std::getline(in, line);) {
      nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
      if (e.is_discarded()) continue;
      if (e.contains("train_loss")) tr << e["step"] << " " << e["train_loss"] << "\n";
      if (e.contains("test_loss")) te << e["step"] << " " << e["test_loss"] << "\n";
    }
  }
  std::string script = "set terminal png size 900,540; set output '" + (dir / "loss.png").string() +
                       "'; set xlabel 'step'; set ylabel 'loss'; set grid; set key top right; "
                       "plot '" + train.string() + "' with lines title 'train', '" + test.string() +
                       "' with linespoints title 'test'";
  std::string command = "gnuplot -e \"" + script + "\" 2>&1";
  FILE *pipe = popen(command.c_str(), "r");
  std::string output;
  char buf[256];
  while (pipe && fgets(buf, sizeof buf, pipe)) output += buf;
  int status = pipe ? pclose(pipe) : -1;
  if (status == 0) log << "loss plot: " << (dir / "loss.png").string() << "\n";
  else log << "note: no loss plot (gnuplot failed: " << (output.empty() ? "not installed?" : output) << ")\n";
  fs::remove(train);
  fs::remove(test);
}

struct Run {
  const config::TrainConfig &config;
  std::unique_ptr<Task> task;
  std::unique_ptr<SequenceModel> model;
  std::unique_ptr<AdamW> optimizer;
  std::vector<Parameter> params;
  Generator data, dropout;
  int64_t step = 0, bestStep = 0, evalsSinceBest = 0;
  double bestTestLoss = INFINITY;

  explicit Run(const config::TrainConfig &c) : config(c), data(c.train.seed), dropout(c.train.seed ^ 0xd0d0ULL) {
    task = Task::create(c.task, c.train.seed);
    model = std::make_unique<SequenceModel>(c.model, task->shape(), c.train.seed, modelsDirOf(c.model));
    ParamGroup decay{{}, c.train.weightDecay}, noDecay{{}, 0.0};
    for (const ModelParam &p : model->parameters()) {
      (p.decay ? decay : noDecay).params.push_back(p.param);
      params.push_back(p.param);
    }
    optimizer = std::make_unique<AdamW>(std::vector<ParamGroup>{decay, noDecay},
                                        AdamWOptions{c.train.lr, c.train.beta1, c.train.beta2, 1e-8});
  }

  Checkpoint weights() const {
    Checkpoint ck;
    storeParameters(ck, params, "model.");
    ck.metadata["format"] = "scanforge-train-1";
    ck.metadata["config"] = config.text;
    ck.metadata["config_overrides"] = nlohmann::json(config.overrides).dump();
    ck.metadata["step"] = std::to_string(step);
    if (const CharDataset *chars = task->characters()) ck.metadata["vocabulary"] = vocabularyJson(*chars);
    return ck;
  }

  void saveState(const fs::path &path) const {
    Checkpoint ck = weights();
    optimizer->saveState(ck, "adamw.");
    ck.metadata["data_rng"] = data.state();
    ck.metadata["dropout_rng"] = dropout.state();
    ck.metadata["best_test_loss"] = exact(bestTestLoss);
    ck.metadata["best_step"] = std::to_string(bestStep);
    ck.metadata["evals_since_best"] = std::to_string(evalsSinceBest);
    saveCheckpoint(path.string(), ck);
  }

  void loadState(const fs::path &path) {
    if (!fs::exists(path)) throw TrainingError("cannot resume: " + path.string() + " does not exist");
    Checkpoint ck = loadCheckpoint(path.string());
    auto meta = [&](const char *key) {
      auto it = ck.metadata.find(key);
      if (it == ck.metadata.end()) throw TrainingError("cannot resume from " + path.string() + ": no '" + key + "' in it");
      return it->second;
    };
    if (meta("format") != "scanforge-train-1") throw TrainingError(path.string() + " is not a scan-train checkpoint");
    restoreParameters(ck, params, "model.");
    optimizer->loadState(ck, "adamw.");
    data.setState(meta("data_rng"));
    dropout.setState(meta("dropout_rng"));
    step = std::stoll(meta("step"));
    bestTestLoss = std::stod(meta("best_test_loss"));
    bestStep = std::stoll(meta("best_step"));
    evalsSinceBest = std::stoll(meta("evals_since_best"));
  }

  // The loss (and metrics) on evalBatches test batches, the same batches at every evaluation.
  std::map<std::string, double> evaluate() {
    NoGradGuard noGrad;
    Generator gen(config.train.seed ^ 0xe7a1ULL);
    std::map<std::string, double> totals;
    for (int64_t i = 0; i < config.train.evalBatches; ++i) {
      SequenceBatch batch = task->sample(Split::Test, config.train.batch, gen);
      Variable out = model->forward(batch.inputs, false, dropout);
      totals["test_loss"] += task->loss(out, batch.targets).item();
      for (auto &[k, v] : task->metrics(out, batch.targets)) totals[k] += v;
    }
    for (auto &[k, v] : totals) v /= static_cast<double>(config.train.evalBatches);
    return totals;
  }
};

}  // namespace

TrainResult train(const config::TrainConfig &config, bool resume, std::ostream &log, int64_t stopAfter) {
  if (config.train.device == "cuda")
    throw TrainingError("train.device = cuda: training on a GPU is not available yet; the runtime's tensors and ops "
                        "run on the CPU (see docs/training.md). Use \"auto\" or \"cpu\".");
  fs::path dir(config.output.dir);
  fs::create_directories(dir);
  auto begin = Clock::now();
  Run run(config);
  fs::path lastPath = dir / "last.safetensors", bestPath = dir / "best.safetensors", metricsPath = dir / "metrics.jsonl";
  if (resume) {
    run.loadState(lastPath);
    truncateMetrics(metricsPath, run.step);
    log << "resumed from " << lastPath.string() << " at step " << run.step << "\n";
  } else {
    std::ofstream(metricsPath, std::ios::trunc);
    saveCheckpoint((dir / "initial.safetensors").string(), run.weights());  // what the run starts from
  }
  {
    std::ofstream saved(dir / "config.json");
    saved << config.text;
    for (const std::string &o : config.overrides) saved << "\n# --set " << o;
    saved << "\n";
  }
  std::ofstream metrics(metricsPath, std::ios::app);
  log << "task: " << run.task->describe() << "\n"
      << "model: " << config.model.recurrence << ", " << config.model.layers << " layers, embedding "
      << config.model.embed << ", " << run.params.size() << " parameter tensors, " << [&] {
           int64_t n = 0;
           for (const Parameter &p : run.params) n += p.variable.value().numel();
           return n;
         }() << " parameters; device cpu\n";

  const config::TrainSection &t = config.train;
  WarmupCosineSchedule schedule(t.lr, t.lr * t.minLrRatio, t.warmup, t.steps);
  TrainResult result;
  int64_t startStep = run.step, lastSaved = run.step;
  double tokensPerStep = double(t.batch * t.accumulate * run.task->tokensPerSequence());
  auto started = Clock::now();
  while (run.step < t.steps) {
    auto stepBegin = Clock::now();
    double lr = schedule.at(run.step);
    run.optimizer->setLearningRate(lr);
    double loss = 0;
    for (int64_t micro = 0; micro < t.accumulate; ++micro) {
      SequenceBatch batch = run.task->sample(Split::Train, t.batch, run.data);
      Variable out = run.model->forward(batch.inputs, true, run.dropout);
      Variable l = scale(run.task->loss(out, batch.targets), 1.0 / static_cast<double>(t.accumulate));
      loss += l.item();
      backward(l);
    }
    if (!std::isfinite(loss))
      throw TrainingError("training diverged at step " + std::to_string(run.step + 1) + ": the loss is " + exact(loss) +
                          ". The last good checkpoint is " + lastPath.string() + " (step " + std::to_string(lastSaved) +
                          "); lower train.lr or raise train.warmup, then --resume.");
    double norm = clipGradNorm(run.params, t.clip > 0 ? t.clip : INFINITY);
    run.optimizer->step();
    run.optimizer->zeroGrad();
    ++run.step;  // from here on, run.step counts this step as done
    result.finalTrainLoss = loss;

    double stepSeconds = std::chrono::duration<double>(Clock::now() - stepBegin).count();
    double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    metrics << "{\"step\": " << run.step << ", \"train_loss\": " << exact(loss) << ", \"lr\": " << exact(lr)
            << ", \"grad_norm\": " << exact(norm) << ", \"tokens_per_s\": " << tokensPerStep / stepSeconds
            << ", \"elapsed_s\": " << elapsed << "}\n";
    if (run.step % t.logEvery == 0 || run.step == t.steps) {
      double perStep = elapsed / static_cast<double>(run.step - startStep);
      log << "step " << run.step << "/" << t.steps << "  loss " << std::fixed << std::setprecision(4) << loss
          << "  lr " << std::scientific << std::setprecision(2) << lr << std::defaultfloat << "  "
          << static_cast<int64_t>(tokensPerStep / perStep) << " tok/s  ETA " << duration(perStep * (t.steps - run.step))
          << std::endl;
    }
    if (run.step % t.evalEvery == 0 || run.step == t.steps) {
      std::map<std::string, double> eval = run.evaluate();
      metrics << "{\"step\": " << run.step;
      for (auto &[k, v] : eval) metrics << ", \"" << k << "\": " << exact(v);
      metrics << "}\n";
      double testLoss = eval.at("test_loss");
      log << "eval  step " << run.step << "  test loss " << std::fixed << std::setprecision(4) << testLoss
          << std::defaultfloat;
      for (auto &[k, v] : eval)
        if (k != "test_loss") log << "  " << k << " " << v;
      if (testLoss < run.bestTestLoss) {
        run.bestTestLoss = testLoss;
        run.bestStep = run.step;
        run.evalsSinceBest = 0;
        saveCheckpoint(bestPath.string(), run.weights());
        log << "  (best)";
      } else {
        ++run.evalsSinceBest;
      }
      log << std::endl;
      if (t.earlyStopping > 0 && run.evalsSinceBest >= t.earlyStopping) {
        result.stoppedEarly = true;
        log << "early stopping: no improvement in " << t.earlyStopping << " evaluations\n";
        break;
      }
    }
    if (t.checkpointEvery > 0 && run.step % t.checkpointEvery == 0) {
      run.saveState(lastPath);
      lastSaved = run.step;
    }
    if (run.step == stopAfter) {
      log << "stopping after step " << run.step << " as asked; continue with --resume\n";
      break;
    }
  }
  metrics.flush();
  run.saveState(lastPath);
  result.steps = run.step;
  result.bestTestLoss = run.bestTestLoss;
  result.bestStep = run.bestStep;
  result.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  log << "done: " << result.steps << " steps in " << duration(result.seconds) << "; best test loss " << std::fixed
      << std::setprecision(4) << result.bestTestLoss << std::defaultfloat << " at step " << result.bestStep
      << "; checkpoints in " << dir.string() << "\n";
  if (config.output.plot) plotLosses(dir, log);
  return result;
}

std::string sampleText(const std::string &checkpointPath, const std::string &prompt, int64_t tokens, double temperature,
                       int64_t topK, uint64_t seed) {
  Checkpoint ck = loadCheckpoint(checkpointPath);
  auto configIt = ck.metadata.find("config"), overridesIt = ck.metadata.find("config_overrides"),
       vocabIt = ck.metadata.find("vocabulary");
  if (configIt == ck.metadata.end() || overridesIt == ck.metadata.end() || vocabIt == ck.metadata.end())
    throw TrainingError(checkpointPath + " is not a character-LM checkpoint of scan-train (no config or vocabulary)");
  config::TrainConfig config = config::parseTrainConfig(configIt->second, checkpointPath + " (stored config)",
                                                        nlohmann::json::parse(overridesIt->second));
  std::string alphabet;
  for (uint32_t code : nlohmann::json::parse(vocabIt->second)) alphabet += utf8(static_cast<char32_t>(code));
  CharDataset chars = CharDataset::fromText(alphabet, checkpointPath);
  SequenceModel model(config.model, {true, chars.vocabSize(), chars.vocabSize()}, config.train.seed,
                      modelsDirOf(config.model));
  std::vector<Parameter> params;
  for (const ModelParam &p : model.parameters()) params.push_back(p.param);
  restoreParameters(ck, params, "model.");

  std::vector<int64_t> ids = chars.encode(prompt.empty() ? "\n" : prompt);
  Generator gen(seed);
  model.resetStream(1);
  Tensor logits = model.stream(Tensor::fromData<int64_t>({1, static_cast<int64_t>(ids.size())}, ids));
  std::vector<int64_t> generated;
  int64_t V = chars.vocabSize();
  for (int64_t i = 0; i < tokens; ++i) {
    // The distribution of the next token: softmax(logits / temperature) over the top-k.
    const float *row = logits.contiguous().data<float>() + (logits.numel() - V);
    std::vector<std::pair<double, int64_t>> scored;
    for (int64_t v = 0; v < V; ++v) scored.push_back({row[v] / std::max(temperature, 1e-6), v});
    std::sort(scored.rbegin(), scored.rend());
    if (topK > 0 && topK < V) scored.resize(static_cast<size_t>(topK));
    double total = 0;
    for (auto &[s, v] : scored) total += s = std::exp(s - scored.front().first);
    double pick = gen.uniform() * total;
    int64_t next = scored.back().second;
    for (auto &[s, v] : scored)
      if ((pick -= s) <= 0) {
        next = v;
        break;
      }
    generated.push_back(next);
    logits = model.stream(Tensor::fromData<int64_t>({1, 1}, {next}));
  }
  return prompt + chars.decode(generated);
}

}  // namespace scanforge::models
