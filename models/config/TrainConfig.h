// The trainer's configuration: a JSON file (see models/configs/) plus `--set key=value` overrides.
// Every field is checked; an unknown key, a wrong type or an out-of-range value is a ConfigError
// located in the file (or in the override) with a hint.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/config/LocatedJson.h"

namespace scanforge::config {

// How to initialise a parameter or a gate bias (see docs/training.md for the formulas).
struct InitSpec {
  std::string kind;               // zeros ones constant uniform normal s4d_real lru_nu lru_gamma
                                  // standard chrono ugi gumbel
  std::map<std::string, double> args;  // value, low, high, std, r_min, r_max, t_max, alpha, tau, offset, sign
};

struct ModelConfig {
  std::string recurrence = "mingru";   // a model in the models directory (models/<name>.scan)
  std::string modelsDir;               // defaults to the directory of the scanforge sources
  int64_t layers = 3;
  int64_t embed = 384;
  int64_t expansion = 2;               // the recurrence's channel dimension d = expansion * embed
  std::map<std::string, int64_t> dims; // sizes of the recurrence's other dimensions (e.g. n = 16)
  bool conv = true;                    // causal depthwise conv1d (kernel 4) before the recurrence
  bool mlp = true;                     // two-layer MLP after the recurrence
  // Width of the bilinear output gating D((W_m y) * (W_x y)) of the recurrence's outputs y (paper
  // 001, eq. 2); 0: none, the outputs go straight to the down-projection D.
  int64_t outputGating = 0;
  int64_t mlpExpansion = 4;
  std::string norm = "layernorm";      // layernorm, rmsnorm or none
  double dropout = 0.0;
  std::map<std::string, InitSpec> params;     // recurrence parameter -> initialiser
  std::map<std::string, InitSpec> gateBias;   // recurrence input -> initialiser of its projection's bias
  bool gateBiasFirstLayerOnly = false;        // paper 002 applies Gumbel init to the first layer only
};

struct TaskConfig {
  std::string name = "char_lm";  // char_lm selective_copy copy in_context_regression teacher_student
  std::string data;              // char_lm: the text file
  int64_t context = 256;         // char_lm: tokens per training window
  std::map<std::string, double> args;  // task-specific sizes (e.g. vocab, data_tokens, length, dim)
};

struct TrainSection {
  int64_t steps = 5000;
  int64_t batch = 64;
  int64_t accumulate = 1;
  double lr = 1e-3;
  double weightDecay = 0.1;
  double beta1 = 0.9, beta2 = 0.999;
  int64_t warmup = 100;
  double minLrRatio = 0.1;
  double clip = 1.0;             // 0: no clipping
  uint64_t seed = 1;
  int64_t evalEvery = 100;
  int64_t evalBatches = 8;
  int64_t earlyStopping = 0;     // stop after this many evaluations without improvement; 0: never
  int64_t logEvery = 10;
  int64_t checkpointEvery = 0;   // 0: only at evaluations that improve, and at the end
  std::string device = "auto";   // auto cpu cuda
};

struct OutputConfig {
  std::string dir = "runs/run";
  bool plot = true;
  int64_t sampleTokens = 300;    // char_lm: text generated at the end
  std::string samplePrompt = "\n";
};

struct TrainConfig {
  ModelConfig model;
  TaskConfig task;
  TrainSection train;
  OutputConfig output;
  std::string source;                  // the file the configuration came from
  std::string text;                    // its text, and the overrides applied to it: together they
  std::vector<std::string> overrides;  // rebuild this configuration (checkpoints store them)
};

// Loads a configuration file and applies overrides such as "train.steps=200".
TrainConfig loadTrainConfig(const std::string &path, const std::vector<std::string> &overrides = {});
// The same from text (for tests).
TrainConfig parseTrainConfig(const std::string &text, const std::string &name,
                             const std::vector<std::string> &overrides = {});

}  // namespace scanforge::config
