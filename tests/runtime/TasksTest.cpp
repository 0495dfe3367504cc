// The tasks of models/data: shapes, layouts, determinism, the Shakespeare split, and the
// statistics the papers rely on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "models/data/CharDataset.h"
#include "models/data/CopyTasks.h"
#include "models/data/InContextRegression.h"
#include "models/data/LinearAttentionTeacher.h"
#include "runtime/core/Error.h"
#include "runtime/core/ops/CrossEntropy.h"
#include "tests/runtime/ErrorOf.h"

namespace scanforge::tasks {
namespace {

using test::errorOf;

std::vector<int64_t> ints(const Tensor &t) {
  const int64_t *p = t.data<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}

TEST(CharDataset, VocabularySplitAndCodec) {
  CharDataset data = CharDataset::fromText("héllo wörld, héllo!");  // 19 characters, 22 bytes
  EXPECT_EQ(data.vocabSize(), 11);  // ' ', '!', ',', 'd', 'h', 'l', 'o', 'r', 'w', 'é', 'ö'
  EXPECT_TRUE(std::is_sorted(data.vocabulary().begin(), data.vocabulary().end()));
  EXPECT_EQ(data.tokens(Split::Train).size(), 17u);  // floor(0.9 * 19)
  EXPECT_EQ(data.tokens(Split::Test).size(), 2u);
  EXPECT_EQ(data.decode(data.tokens(Split::Test)), "o!");
  std::vector<int64_t> ids = data.encode("wörld");
  EXPECT_EQ(data.decode(ids), "wörld");
  EXPECT_NE(errorOf([&] { data.encode("x"); }).find("character U+0078 is not in the vocabulary"), std::string::npos);
  EXPECT_NE(errorOf([&] { data.decode(std::vector<int64_t>{11}); }).find("id 11 is outside"), std::string::npos);
}

TEST(CharDataset, RejectsBadInput) {
  EXPECT_NE(errorOf([] { CharDataset::fromText("ab\xff" "cd"); }).find("invalid UTF-8 at byte 2"), std::string::npos);
  EXPECT_NE(errorOf([] { CharDataset::fromText("ab\xc3"); }).find("truncated UTF-8 sequence at byte 2"), std::string::npos);
  EXPECT_NE(errorOf([] { CharDataset::fromText("\xc0\xaf"); }).find("invalid UTF-8"), std::string::npos);  // overlong
  EXPECT_NE(errorOf([] { CharDataset::fromText("a"); }).find("at least 2 characters"), std::string::npos);
  std::string message = errorOf([] { CharDataset::fromFile("/nonexistent/tiny.txt"); });
  EXPECT_NE(message.find("cannot open '/nonexistent/tiny.txt': No such file or directory"), std::string::npos) << message;
}

TEST(CharDataset, BatchesAreShiftedWindowsOfTheSplit) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += static_cast<char>('a' + i % 26);
  CharDataset data = CharDataset::fromText(text);
  Generator gen(3);
  SequenceBatch batch = data.sampleBatch(Split::Train, 4, 8, gen);
  ASSERT_EQ(batch.inputs.shape(), (Shape{4, 8}));
  ASSERT_EQ(batch.targets.shape(), (Shape{4, 8}));
  std::vector<int64_t> in = ints(batch.inputs), out = ints(batch.targets);
  const std::vector<int64_t> &train = data.tokens(Split::Train);
  for (int64_t b = 0; b < 4; ++b) {
    auto row = in.begin() + b * 8;
    auto start = std::search(train.begin(), train.end(), row, row + 8);
    ASSERT_NE(start, train.end()) << "window " << b << " is not a substring of the train split";
    EXPECT_TRUE(std::equal(out.begin() + b * 8, out.begin() + b * 8 + 8, start + 1)) << "targets are the next tokens";
  }
  Generator again(3), other(4);
  EXPECT_EQ(ints(data.sampleBatch(Split::Train, 4, 8, again).inputs), in);
  EXPECT_NE(ints(data.sampleBatch(Split::Train, 4, 8, other).inputs), in);
  std::string message = errorOf([&] { data.sampleBatch(Split::Test, 1, 5, gen); });
  EXPECT_NE(message.find("the test split of '<text>' has 5 characters, fewer than a window of steps + 1 = 6"),
            std::string::npos) << message;
}

TEST(CharDataset, ReadsFilesAndSplitsShakespeareExactly) {
  const std::string path = SCANFORGE_SHAKESPEARE;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "the Shakespeare corpus is not at " << path;
  CharDataset data = CharDataset::fromFile(path);
  EXPECT_EQ(data.tokens(Split::Train).size(), 1003854u);
  EXPECT_EQ(data.tokens(Split::Test).size(), 111540u);
  EXPECT_EQ(data.vocabSize(), 65);
  EXPECT_EQ(data.decode(std::span(data.tokens(Split::Train)).first(14)), "First Citizen:");
}

TEST(CopyTasks, CopyingLayout) {
  CopyTaskConfig config = CopyTaskConfig::copying(30);  // N = 10, M = 10, T = 30
  EXPECT_EQ(config.length(), 50);
  Generator gen(1);
  SequenceBatch batch = sampleCopyTask(config, 3, gen);
  ASSERT_EQ(batch.inputs.shape(), (Shape{3, 50}));
  std::vector<int64_t> in = ints(batch.inputs), out = ints(batch.targets);
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t t = 0; t < 50; ++t) {
      int64_t x = in[static_cast<size_t>(b * 50 + t)], y = out[static_cast<size_t>(b * 50 + t)];
      if (t < 10) {
        EXPECT_GE(x, 1);
        EXPECT_LE(x, 8);
      } else {
        EXPECT_EQ(x, t < 40 ? 0 : 9);
      }
      EXPECT_EQ(y, t < 40 ? kIgnoreIndex : in[static_cast<size_t>(b * 50 + t - 40)]);
    }
  }
}

TEST(CopyTasks, SelectiveCopyingLayout) {
  CopyTaskConfig config = CopyTaskConfig::selectiveCopying();
  EXPECT_EQ(config.length(), 4096);
  EXPECT_EQ(config.vocab, 16);
  config.blankLength = 100;  // 16 + 100 + 16 steps
  Generator gen(2);
  SequenceBatch batch = sampleCopyTask(config, 8, gen);
  std::vector<int64_t> in = ints(batch.inputs), out = ints(batch.targets);
  int64_t length = config.length();
  bool someNotAtTheStart = false;
  for (int64_t b = 0; b < 8; ++b) {
    std::vector<int64_t> data;
    for (int64_t t = 0; t < 116; ++t) {
      int64_t x = in[static_cast<size_t>(b * length + t)];
      if (x != 0) {
        EXPECT_LE(x, 14);
        data.push_back(x);
        someNotAtTheStart |= t >= 16;
      }
      EXPECT_EQ(out[static_cast<size_t>(b * length + t)], kIgnoreIndex);
    }
    ASSERT_EQ(data.size(), 16u) << "exactly 16 data tokens among the noise";
    for (int64_t i = 0; i < 16; ++i) {
      EXPECT_EQ(in[static_cast<size_t>(b * length + 116 + i)], 15) << "marker";
      EXPECT_EQ(out[static_cast<size_t>(b * length + 116 + i)], data[static_cast<size_t>(i)]) << "targets in order";
    }
  }
  EXPECT_TRUE(someNotAtTheStart);
  Generator a(5), c(5);
  EXPECT_EQ(ints(sampleCopyTask(config, 2, a).inputs), ints(sampleCopyTask(config, 2, c).inputs));
  config.vocab = 2;
  EXPECT_NE(errorOf([&] { sampleCopyTask(config, 2, a); }).find("vocab >= 3"), std::string::npos);
}

// Solves the 3x3 system A w = r by Cramer's rule (enough to recover W* row by row).
std::vector<double> solve3(const double A[3][3], const double r[3]) {
  auto det = [](const double m[3][3]) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  std::vector<double> w(3);
  for (int k = 0; k < 3; ++k) {
    double m[3][3];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) m[i][j] = j == k ? r[i] : A[i][j];
    w[static_cast<size_t>(k)] = det(m) / det(A);
  }
  return w;
}

TEST(InContextRegression, ObservationsAndTargetShareOneLinearMap) {
  InContextRegressionConfig config;  // dx = dy = 3, T = 12
  Generator gen(6);
  SequenceBatch batch = sampleInContextRegression(config, 5, gen, DType::F64);
  ASSERT_EQ(batch.inputs.shape(), (Shape{5, 13, 6}));
  ASSERT_EQ(batch.targets.shape(), (Shape{5, 3}));
  const double *in = batch.inputs.data<double>(), *target = batch.targets.data<double>();
  for (int64_t b = 0; b < 5; ++b) {
    const double *seq = in + b * 13 * 6, *query = seq + 12 * 6;
    for (int o = 0; o < 3; ++o) EXPECT_EQ(query[3 + o], 0.0) << "the query hides its y";
    for (int i = 0; i < 3; ++i) EXPECT_LE(std::abs(query[i]), std::sqrt(3.0));
    // Recover W* from the first three observations, then check every other observation and the target.
    double X[3][3];
    for (int t = 0; t < 3; ++t)
      for (int i = 0; i < 3; ++i) X[t][i] = seq[t * 6 + i];
    for (int o = 0; o < 3; ++o) {
      double r[3] = {seq[0 * 6 + 3 + o], seq[1 * 6 + 3 + o], seq[2 * 6 + 3 + o]};
      std::vector<double> w = solve3(X, r);
      for (int t = 3; t < 13; ++t) {
        const double *row = seq + t * 6;
        double predicted = w[0] * row[0] + w[1] * row[1] + w[2] * row[2];
        EXPECT_NEAR(t < 12 ? row[3 + o] : target[b * 3 + o], predicted, 1e-9) << "sequence " << b << " step " << t;
      }
    }
  }
  EXPECT_EQ(sampleInContextRegression(config, 2, gen).inputs.dtype(), DType::F32);
}

// Paper 001 (Table 2, section 5.2): one optimal gradient-descent step reaches a loss of 0.0947 for
// T = 12, dx = dy = 3 (loss = mean over outputs of (y - yhat)^2 / 2). Analytically it is
// sigma_W^2 * dx * (1 - T eta*) / 2 = (1/3) * 3 * (1 - 12 / 14.8) / 2 = 0.0946. Over 40,000
// sequences the sampling error is < 1%, so a 3% band tests the x and W* distributions, and the
// rate must beat 0.8 and 1.25 times itself.
TEST(InContextRegression, OneOptimalGradientStepReachesThePapersLoss) {
  InContextRegressionConfig config;
  double eta = optimalGradientDescentRate(config);
  EXPECT_DOUBLE_EQ(eta, 1 / 14.8);
  Generator gen(7);
  SequenceBatch batch = sampleInContextRegression(config, 40000, gen, DType::F64);
  auto loss = [&](double lr) {
    std::vector<double> pred = oneStepGradientDescent(batch.inputs, config, lr).toDoubles(),
                        y = batch.targets.toDoubles();
    double total = 0;
    for (size_t i = 0; i < y.size(); ++i) total += 0.5 * (y[i] - pred[i]) * (y[i] - pred[i]);
    return total / static_cast<double>(y.size());
  };
  double best = loss(eta);
  EXPECT_NEAR(best, 0.0946, 0.0946 * 0.03);
  EXPECT_LT(best, loss(0.8 * eta));
  EXPECT_LT(best, loss(1.25 * eta));
}

TEST(LinearAttentionTeacher, MatchesTheAttentionFormula) {
  Generator gen(8);
  LinearAttentionTeacher teacher({}, gen);  // d = 4, T = 32
  SequenceBatch batch = teacher.sample(2, gen, DType::F64);
  ASSERT_EQ(batch.inputs.shape(), (Shape{2, 32, 4}));
  ASSERT_EQ(batch.targets.shape(), (Shape{2, 32, 4}));
  // y_t = sum_{s <= t} v_s (k_s . q_t), computed directly in O(T^2).
  const double *x = batch.inputs.data<double>(), *y = batch.targets.data<double>();
  auto project = [](const Tensor &w, const double *v, int i) {
    double s = 0;
    for (int j = 0; j < 4; ++j) s += w.data<double>()[i * 4 + j] * v[j];
    return s;
  };
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 32; ++t)
      for (int i = 0; i < 4; ++i) {
        double expected = 0;
        for (int s = 0; s <= t; ++s) {
          const double *xs = x + (b * 32 + s) * 4, *xt = x + (b * 32 + t) * 4;
          double kq = 0;
          for (int j = 0; j < 4; ++j) kq += project(teacher.key(), xs, j) * project(teacher.query(), xt, j);
          expected += project(teacher.value(), xs, i) * kq;
        }
        EXPECT_NEAR(y[(b * 32 + t) * 4 + i], expected, 1e-9 * (1 + std::abs(expected)));
      }
  Generator a(1), b(1);
  EXPECT_EQ(LinearAttentionTeacher({}, a).query().toDoubles(), LinearAttentionTeacher({}, b).query().toDoubles());
  EXPECT_EQ(teacher.sample(1, a).inputs.dtype(), DType::F32);
  EXPECT_NE(errorOf([&] { teacher.apply(Tensor::zeros({1, 3, 5}, DType::F32)); }).find("inputs must be [B, T, 4]"),
            std::string::npos);
}

}  // namespace
}  // namespace scanforge::tasks
