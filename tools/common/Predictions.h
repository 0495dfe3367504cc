// The performance model's predictions for a kernel package, written by `scanc --gpu-model
// --predictions FILE` and printed by scan-gpu-bench beside what it measures (docs/cuda.md, "Running
// on a GPU machine"): one JSON object {"<recurrence> <shape> <pass>": {"ms", "of_copy", "model"}},
// with the shape as cuda::Shape::describe() writes it ("B=64 T=4096 d=1024") and the pass
// "forward", "backward" or "forward+backward". The peers' timings use the same keys.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace scanforge::tools {

inline std::string resultKey(const std::string &recurrence, const std::string &shape, const std::string &pass) {
  return recurrence + " " + shape + " " + pass;
}

// The predictions in `path`; an empty object when `path` does not exist and `mayBeMissing`.
inline nlohmann::json readPredictions(const std::string &path, bool mayBeMissing = false) {
  std::ifstream in(path);
  if (!in) {
    if (mayBeMissing) return nlohmann::json::object();
    throw std::runtime_error("cannot read the predictions " + path);
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw std::runtime_error(path + " is not a predictions file (a JSON object of \"<recurrence> <shape> <pass>\" keys)");
  for (auto &[key, p] : j.items())
    if (!p.is_object() || !p.contains("ms") || !p["ms"].is_number() || !p.contains("of_copy") || !p["of_copy"].is_number())
      throw std::runtime_error(path + ": the prediction \"" + key + "\" has no numbers \"ms\" and \"of_copy\"");
  return j;
}

// Adds (or replaces) one prediction in `path`, keeping the others.
inline void addPrediction(const std::string &path, const std::string &key, double ms, double ofCopy, const std::string &model) {
  nlohmann::json all = readPredictions(path, /*mayBeMissing=*/true);
  all[key] = {{"ms", ms}, {"of_copy", ofCopy}, {"model", model}};
  std::ofstream out(path);
  out << all.dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write the predictions " + path);
}

}  // namespace scanforge::tools
