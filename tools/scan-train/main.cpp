// scan-train: trains a model from a configuration file (models/configs/*.json).
// Exit codes: 0 success, 1 a problem with the configuration, data or checkpoint (or a diverged
// run), 2 an internal error.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/api/Scanforge.h"
#include "models/config/TrainConfig.h"
#include "models/train/Trainer.h"
#include "runtime/core/Error.h"

int main(int argc, char **argv) {
  CLI::App app{"scan-train: train a recurrent model built from compiled recurrences", "scan-train"};
  app.footer(R"(Examples:
  scan-train models/configs/quickstart.json
  scan-train models/configs/shakespeare_mingru.json --set train.steps=200 --set output.dir=runs/try
  scan-train models/configs/shakespeare_mingru.json --resume      # continue from output.dir/last.safetensors
)");
  std::string configPath;
  std::vector<std::string> overrides;
  bool resume = false;
  app.add_option("config", configPath, "the configuration file (JSON)")->required();
  app.add_option("--set", overrides, "override a setting, e.g. train.steps=200 (repeatable)");
  app.add_flag("--resume", resume, "continue from the last checkpoint in output.dir");
  int64_t stopAfter = 0;
  app.add_option("--stop-after", stopAfter, "save and stop after this many steps (continue later with --resume)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    std::ifstream in(configPath);
    if (!in) throw scanforge::config::ConfigError(configPath + ": error: cannot open the configuration file");
    std::stringstream text;
    text << in.rdbuf();
    scanforge::config::TrainConfig config = scanforge::config::parseTrainConfig(text.str(), configPath, overrides);
    scanforge::models::TrainResult result = scanforge::models::train(config, resume, std::cout, stopAfter);
    if (result.steps < config.train.steps && !result.stoppedEarly) return 0;  // stopped as asked
    if (config.task.name == "char_lm" && config.output.sampleTokens > 0)
      std::cout << "\nsample (" << config.output.sampleTokens << " characters, temperature 0.8):\n"
                << scanforge::models::sampleText(config.output.dir + "/best.safetensors", config.output.samplePrompt,
                                                 config.output.sampleTokens, 0.8, 0, config.train.seed)
                << "\n";
    return 0;
  } catch (const scanforge::config::ConfigError &e) {
    std::cerr << e.what();
    return 1;
  } catch (const scanforge::CompileError &e) {
    std::cerr << e.what();
    return 1;
  } catch (const scanforge::models::TrainingError &e) {
    std::cerr << "scan-train: error: " << e.what() << "\n";
    return 1;
  } catch (const scanforge::RuntimeError &e) {
    std::cerr << "scan-train: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "scan-train: internal error: " << e.what() << "\n";
    return 2;
  }
}
