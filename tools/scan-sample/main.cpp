// scan-sample: generates text from a character-LM checkpoint of scan-train, one token at a time
// with O(1) state per token (the recurrences' sequential mode).
#include <CLI/CLI.hpp>

#include <iostream>

#include "compiler/api/Scanforge.h"
#include "models/config/TrainConfig.h"
#include "models/train/Trainer.h"
#include "runtime/core/Error.h"

int main(int argc, char **argv) {
  CLI::App app{"scan-sample: generate text from a scan-train character-LM checkpoint", "scan-sample"};
  std::string checkpoint, prompt = "\n";
  int64_t tokens = 300, topK = 0;
  double temperature = 0.8;
  uint64_t seed = 1;
  app.add_option("checkpoint", checkpoint, "e.g. runs/quickstart/best.safetensors")->required()->check(CLI::ExistingFile);
  app.add_option("--prompt", prompt, "text to start from (every character must be in the vocabulary)");
  app.add_option("--tokens", tokens, "characters to generate")->check(CLI::NonNegativeNumber);
  app.add_option("--temperature", temperature, "softmax temperature")->check(CLI::PositiveNumber);
  app.add_option("--top-k", topK, "sample among the k most likely characters (0: all)")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "random seed");
  CLI11_PARSE(app, argc, argv);
  try {
    std::cout << scanforge::models::sampleText(checkpoint, prompt, tokens, temperature, topK, seed) << "\n";
    return 0;
  } catch (const scanforge::config::ConfigError &e) {
    std::cerr << e.what();
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "scan-sample: error: " << e.what() << "\n";
    return 1;
  }
}
