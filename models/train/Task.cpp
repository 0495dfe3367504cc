#include "models/train/Task.h"

#include <cmath>
#include <sstream>

#include "models/data/CopyTasks.h"
#include "models/data/InContextRegression.h"
#include "models/data/LinearAttentionTeacher.h"
#include "runtime/core/Error.h"
#include "runtime/core/Ops.h"

namespace scanforge::models {
namespace {

using namespace tasks;

int64_t argInt(const config::TaskConfig &c, const char *name, int64_t fallback) {
  auto it = c.args.find(name);
  return it == c.args.end() ? fallback : static_cast<int64_t>(it->second);
}

Variable meanSquaredError(const Variable &outputs, const Tensor &targets) {
  Variable diff = sub(outputs, Variable(targets));
  return mean(mul(diff, diff));
}

class CharLm : public Task {
 public:
  explicit CharLm(const config::TaskConfig &c) : data_(CharDataset::fromFile(c.data)), context_(c.context) {}
  SequenceModelShape shape() const override { return {true, data_.vocabSize(), data_.vocabSize()}; }
  SequenceBatch sample(Split split, int64_t batch, Generator &gen) const override {
    return data_.sampleBatch(split, batch, context_, gen);
  }
  Variable loss(const Variable &outputs, const Tensor &targets) const override { return crossEntropy(outputs, targets); }
  int64_t tokensPerSequence() const override { return context_; }
  std::string describe() const override {
    std::ostringstream os;
    os << "character LM: " << data_.tokens(Split::Train).size() << " train / " << data_.tokens(Split::Test).size()
       << " test characters, vocabulary " << data_.vocabSize() << ", context " << context_;
    return os.str();
  }
  const CharDataset *characters() const override { return &data_; }

 private:
  CharDataset data_;
  int64_t context_;
};

class Copying : public Task {
 public:
  Copying(const config::TaskConfig &c, bool selective) {
    config_ = selective ? CopyTaskConfig::selectiveCopying() : CopyTaskConfig::copying();
    config_.vocab = argInt(c, "vocab", config_.vocab);
    config_.dataTokens = argInt(c, "data_tokens", config_.dataTokens);
    config_.blankLength = argInt(c, "blank_length", config_.blankLength);
    config_.selective = selective;
  }
  SequenceModelShape shape() const override { return {true, config_.vocab, config_.vocab}; }
  SequenceBatch sample(Split, int64_t batch, Generator &gen) const override { return sampleCopyTask(config_, batch, gen); }
  Variable loss(const Variable &outputs, const Tensor &targets) const override { return crossEntropy(outputs, targets); }
  // The fraction of recalled tokens predicted exactly (argmax at the marker steps).
  std::map<std::string, double> metrics(const Variable &outputs, const Tensor &targets) const override {
    const Tensor logits = outputs.value().contiguous();
    int64_t V = logits.shape().back(), n = targets.numel(), hit = 0, scored = 0;
    const float *l = logits.data<float>();
    const int64_t *t = targets.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (t[i] == kIgnoreIndex) continue;
      ++scored;
      hit += std::max_element(l + i * V, l + (i + 1) * V) - (l + i * V) == t[i];
    }
    return {{"accuracy", scored ? double(hit) / scored : 0.0}};
  }
  int64_t tokensPerSequence() const override { return config_.length(); }
  std::string describe() const override {
    std::ostringstream os;
    os << (config_.selective ? "selective copying" : "copying") << ": vocabulary " << config_.vocab << ", "
       << config_.dataTokens << " data tokens, " << config_.blankLength << " blanks, length " << config_.length();
    return os.str();
  }

 private:
  CopyTaskConfig config_;
};

class Regression : public Task {
 public:
  explicit Regression(const config::TaskConfig &c) {
    config_.inputDim = argInt(c, "input_dim", config_.inputDim);
    config_.outputDim = argInt(c, "output_dim", config_.outputDim);
    config_.observations = argInt(c, "observations", config_.observations);
  }
  SequenceModelShape shape() const override { return {false, config_.inputDim + config_.outputDim, config_.outputDim}; }
  SequenceBatch sample(Split, int64_t batch, Generator &gen) const override {
    return sampleInContextRegression(config_, batch, gen);
  }
  // Scored on the query step only: the model's output at t = T against W* x_{T+1}.
  Variable loss(const Variable &outputs, const Tensor &targets) const override {
    int64_t B = outputs.shape()[0], T = outputs.shape()[1], dy = config_.outputDim;
    return meanSquaredError(slice(reshape(outputs, {B, T * dy}), (T - 1) * dy, dy), targets);
  }
  int64_t tokensPerSequence() const override { return config_.observations + 1; }
  std::string describe() const override {
    std::ostringstream os;
    os << "in-context linear regression: dx " << config_.inputDim << ", dy " << config_.outputDim << ", "
       << config_.observations << " observations";
    return os.str();
  }

 private:
  InContextRegressionConfig config_;
};

class TeacherStudent : public Task {
 public:
  TeacherStudent(const config::TaskConfig &c, uint64_t seed) : teacher_(makeTeacher(c, seed)) {}
  SequenceModelShape shape() const override { return {false, config_.dim, config_.dim}; }
  SequenceBatch sample(Split, int64_t batch, Generator &gen) const override { return teacher_.sample(batch, gen); }
  Variable loss(const Variable &outputs, const Tensor &targets) const override { return meanSquaredError(outputs, targets); }
  int64_t tokensPerSequence() const override { return config_.steps; }
  std::string describe() const override {
    return "linear-attention teacher-student: d " + std::to_string(config_.dim) + ", " + std::to_string(config_.steps) +
           " steps";
  }

 private:
  LinearAttentionTeacher makeTeacher(const config::TaskConfig &c, uint64_t seed) {
    config_.dim = argInt(c, "dim", config_.dim);
    config_.steps = argInt(c, "steps", config_.steps);
    Generator gen(seed ^ 0x7eac4e5ULL);  // the teacher's weights, fixed by the seed
    return LinearAttentionTeacher(config_, gen);
  }
  LinearAttentionTeacherConfig config_;
  LinearAttentionTeacher teacher_;
};

}  // namespace

std::unique_ptr<Task> Task::create(const config::TaskConfig &c, uint64_t seed) {
  if (c.name == "char_lm") return std::make_unique<CharLm>(c);
  if (c.name == "selective_copy") return std::make_unique<Copying>(c, true);
  if (c.name == "copy") return std::make_unique<Copying>(c, false);
  if (c.name == "in_context_regression") return std::make_unique<Regression>(c);
  if (c.name == "teacher_student") return std::make_unique<TeacherStudent>(c, seed);
  throw RuntimeError("task", "unknown task '" + c.name + "'");
}

}  // namespace scanforge::models
