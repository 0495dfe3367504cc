// Runs a command (a benchmark's Python peer) and parses the JSON it prints on stdout.
#pragma once

#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace scanforge::tools {

// The command's JSON output; on failure (not started, non-zero exit, no JSON) a discarded value
// and `error` saying which.
inline nlohmann::json runJsonCommand(const std::string &command, std::string &error) {
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe) {
    error = "could not start: " + command;
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  std::string out;
  std::array<char, 4096> chunk;
  while (size_t n = fread(chunk.data(), 1, chunk.size(), pipe)) out.append(chunk.data(), n);
  int status = pclose(pipe);
  nlohmann::json result = nlohmann::json::parse(out, nullptr, false);
  if (status != 0) error = "exit status " + std::to_string(status) + ": " + command;
  else if (result.is_discarded()) error = "no JSON on stdout: " + command;
  return status != 0 ? nlohmann::json(nlohmann::json::value_t::discarded) : result;
}

}  // namespace scanforge::tools
