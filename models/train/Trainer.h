// Trains a SequenceModel on a Task from a TrainConfig: AdamW with warm-up + cosine schedule,
// gradient accumulation and clipping, evaluation on held-out batches with early stopping,
// checkpoints (safetensors) that resume bit for bit, metrics as JSONL, and a loss plot.
//
// Files in output.dir: metrics.jsonl, last.safetensors (everything needed to resume),
// best.safetensors (the weights with the best test loss, for sampling), loss.png, config.json.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "models/config/TrainConfig.h"

namespace scanforge::models {

struct TrainResult {
  int64_t steps = 0;            // optimizer steps taken in all (including before a resume)
  double bestTestLoss = 0;
  int64_t bestStep = 0;
  double finalTrainLoss = 0;
  double seconds = 0;
  bool stoppedEarly = false;
};

// A run that cannot continue: a non-finite loss, a missing file, an unusable checkpoint.
struct TrainingError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The training run. The configuration's text and overrides are stored in the checkpoints so that
// scan-sample can rebuild the model. `log` receives the progress lines. With stopAfter > 0 the run saves its state and stops
// after that many steps (in all), as if interrupted; --resume continues it exactly.
TrainResult train(const config::TrainConfig &config, bool resume, std::ostream &log, int64_t stopAfter = 0);

// Generates text from a character-LM checkpoint (best.safetensors or last.safetensors) in
// sequential mode: one token per step, O(1) state. Returns the prompt followed by the new text.
std::string sampleText(const std::string &checkpoint, const std::string &prompt, int64_t tokens, double temperature,
                       int64_t topK, uint64_t seed);

}  // namespace scanforge::models
