#include "python/csrc/Registry.h"

#include <c10/util/Exception.h>

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

namespace scanforge::torchext {

namespace {

std::mutex registryMutex;
std::map<std::string, CompiledModule> modules;             // by file and content
std::map<std::string, std::unique_ptr<Loaded>> registry;  // by key; never removed (ops hold keys)
std::map<std::string, std::string> requested;             // file, content and requested name -> key

nlohmann::json portsJson(const std::vector<Port> &ports) {
  nlohmann::json out = nlohmann::json::array();
  for (const Port &p : ports)
    out.push_back({{"name", p.name}, {"dims", p.dims}, {"dtype", p.type == ElemType::BF16 ? "bfloat16" : "float32"}});
  return out;
}

}  // namespace

std::string loadScan(const std::string &path, const std::string &recurrence) {
  std::ifstream file(path);
  if (!file) C10_THROW_ERROR(ValueError, "scanforge.load: cannot read '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  // The same file with the same content gives the same key; an edited file compiles anew.
  std::string prefix = path + "#" + std::to_string(std::hash<std::string>{}(text.str())) + "#";
  std::lock_guard<std::mutex> lock(registryMutex);
  if (auto it = requested.find(prefix + recurrence); it != requested.end()) return it->second;
  try {
    auto module = modules.find(prefix);
    if (module == modules.end()) module = modules.emplace(prefix, compileModuleSource(path, text.str())).first;
    Recurrence cpu = module->second.recurrence(recurrence);
    std::string key = prefix + cpu.signature().name;
    if (!registry.count(key)) registry.emplace(key, std::make_unique<Loaded>(Loaded{key, module->second, cpu}));
    requested[prefix + recurrence] = key;
    return key;
  } catch (const CompileError &e) {
    C10_THROW_ERROR(ValueError, "scanforge.load('" + path + "'): " + e.what());
  }
}

const Loaded &lookup(const std::string &key) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = registry.find(key);
  if (it == registry.end())
    C10_THROW_ERROR(ValueError, "scanforge: no loaded recurrence has the key '" + key + "' (keys come from scanforge.load)");
  return *it->second;
}

std::string signatureJson(const std::string &key) {
  const Signature &sig = lookup(key).cpu.signature();
  nlohmann::json j = {{"name", sig.name},
                      {"reverse", sig.reverse},
                      {"inputs", portsJson(sig.inputs)},
                      {"params", portsJson(sig.params)},
                      {"states", portsJson(sig.states)},
                      {"outputs", portsJson(sig.outputs)}};
  return j.dump();
}

}  // namespace scanforge::torchext
