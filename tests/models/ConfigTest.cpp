// Trainer configurations: every mistake is located in the file (or in the --set override) with a
// hint, and valid files bind to the expected values.
#include <gtest/gtest.h>

#include "models/config/TrainConfig.h"

namespace scanforge::config {
namespace {

std::string errorOf(const std::string &text, const std::vector<std::string> &overrides = {}) {
  try {
    parseTrainConfig(text, "run.json", overrides);
  } catch (const ConfigError &e) {
    return e.what();
  }
  return "no error";
}

TEST(TrainConfig, BindsEveryField) {
  TrainConfig c = parseTrainConfig(R"({
    // comments are allowed
    "task": {"name": "char_lm", "data": "shakespeare.txt", "context": 64},
    "model": {"recurrence": "selective_ssm", "layers": 2, "embed": 32, "dims": {"n": 8},
              "params": {"A": "s4d_real"}, "gate_bias": {"dt": {"init": "gumbel", "alpha": 0.5, "tau": 0.25}}},
    "train": {"steps": 10, "lr": 0.002, "warmup": 2, "early_stopping": 3},
    "output": {"dir": "runs/x", "plot": false}
  })", "run.json", {"train.batch=7", "output.dir=runs/y"});
  EXPECT_EQ(c.task.context, 64);
  EXPECT_EQ(c.model.recurrence, "selective_ssm");
  EXPECT_EQ(c.model.dims.at("n"), 8);
  EXPECT_EQ(c.model.params.at("A").kind, "s4d_real");
  EXPECT_EQ(c.model.gateBias.at("dt").kind, "gumbel");
  EXPECT_DOUBLE_EQ(c.model.gateBias.at("dt").args.at("tau"), 0.25);
  EXPECT_EQ(c.train.batch, 7);
  EXPECT_EQ(c.output.dir, "runs/y");
  EXPECT_FALSE(c.output.plot);
}

TEST(TrainConfig, UnknownKeyIsLocatedWithASuggestion) {
  EXPECT_EQ(errorOf("{\n  \"train\": {\"stepz\": 10}\n}\n"),
            "run.json:2:13: error: unknown key 'stepz' in 'train'\n"
            " 2 |   \"train\": {\"stepz\": 10}\n"
            "   |             ^\n"
            "hint: did you mean 'steps'?\n");
}

TEST(TrainConfig, WrongTypesAndRangesAreLocated) {
  EXPECT_NE(errorOf("{\"train\": {\"lr\": \"fast\"}}").find("run.json:1:18: error: 'lr' must be a number, not a string"),
            std::string::npos);
  EXPECT_NE(errorOf("{\"train\": {\"steps\": 2.5}}").find("run.json:1:21: error: 'steps' must be a whole number"),
            std::string::npos);
  EXPECT_NE(errorOf("{\"model\": {\"dropout\": 1.5}}").find("'dropout' must be in [0, 0.99], not 1.5"), std::string::npos);
  EXPECT_NE(errorOf("{\"model\": {\"norm\": \"batchnorm\"}}").find("'norm' must be one of layernorm, rmsnorm, none, not 'batchnorm'"),
            std::string::npos);
}

TEST(TrainConfig, UnknownInitialiserSuggestsOne) {
  std::string e = errorOf("{\"model\": {\"gate_bias\": {\"k\": \"gumble\"}}}");
  EXPECT_NE(e.find("run.json:1:31: error: unknown initialiser 'gumble' for gate_bias.k"), std::string::npos) << e;
  EXPECT_NE(e.find("hint: did you mean 'gumbel'?"), std::string::npos) << e;
}

TEST(TrainConfig, SyntaxErrorsAreLocated) {
  EXPECT_EQ(errorOf("{\n  \"train\": {\"steps\": 10,}\n}\n"),
            "run.json:2:25: error: expected a key in double quotes\n"
            " 2 |   \"train\": {\"steps\": 10,}\n"
            "   |                         ^\n"
            "hint: JSON has no trailing commas\n");
  EXPECT_NE(errorOf("{\"train\": {\"steps\": 1, \"steps\": 2}}").find("duplicate key 'steps'"), std::string::npos);
}

TEST(TrainConfig, OverridesAreCheckedLikeTheFile) {
  std::string e = errorOf("{}", {"train.steps=many"});
  EXPECT_NE(e.find("<--set 1>:1:13: error: 'steps' must be a whole number"), std::string::npos) << e;
  EXPECT_NE(errorOf("{}", {"train.stepz=3"}).find("unknown key 'stepz' in 'train'"), std::string::npos);
  EXPECT_NE(errorOf("{}", {"steps"}).find("an override has the form section.key=value"), std::string::npos);
}

TEST(TrainConfig, CharLmNeedsData) {
  EXPECT_NE(errorOf("{\"task\": {\"name\": \"char_lm\"}}").find("the char_lm task needs 'data'"), std::string::npos);
}

}  // namespace
}  // namespace scanforge::config
