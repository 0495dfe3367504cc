// The recurrences the Python package has loaded, each under a string key that the ops take (a
// string keeps the ops functional: no opaque object crosses the dispatcher, so torch.compile can
// trace them). A .scan file is compiled once per content; its signature comes from the compiler's
// Ports analysis (through Recurrence::signature), never re-derived here.
#pragma once

#include <string>

#include "compiler/api/CompiledModule.h"

namespace scanforge::torchext {

struct Loaded {
  std::string key;
  CompiledModule module;
  Recurrence cpu;  // the Halide backend
};

// Compiles `path` (or reuses the module compiled from the same content) and returns the key of
// its recurrence `recurrence` ("": the file's only one). Throws ValueError with the diagnostics.
std::string loadScan(const std::string &path, const std::string &recurrence);
// The loaded recurrence; ValueError for a key never returned by loadScan.
const Loaded &lookup(const std::string &key);
// The signature as JSON: {"name", "reverse", "inputs"/"params"/"states"/"outputs": [{"name", "dims", "dtype"}]}.
std::string signatureJson(const std::string &key);

}  // namespace scanforge::torchext
