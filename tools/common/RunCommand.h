// Runs a shell command and returns what it printed (stdout and stderr together).
#pragma once

#include <array>
#include <cstdio>
#include <string>

namespace scanforge::tools {

// `status` gets pclose's status (0: success; -1: the command could not be started).
inline std::string runCommand(const std::string &command, int &status) {
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    status = -1;
    return "cannot run: " + command;
  }
  std::string out;
  std::array<char, 4096> chunk;
  while (size_t n = fread(chunk.data(), 1, chunk.size(), pipe)) out.append(chunk.data(), n);
  status = pclose(pipe);
  return out;
}

}  // namespace scanforge::tools
