// scanforge.load: a .scan file compiled in this process (builds with the compiler).
#include <c10/util/Exception.h>

#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "python/csrc/Registry.h"

namespace scanforge::torchext {

namespace {

std::mutex compileMutex;
std::map<std::string, CompiledModule> modules;  // by file and content
std::map<std::string, std::string> requested;   // file, content and requested name -> key
thread_local std::vector<std::string> pendingWarnings;  // takeWarnings

}  // namespace

std::vector<std::string> takeWarnings() { return std::exchange(pendingWarnings, {}); }

void checkParameters(const Loaded &rec, at::TensorList params) {
  if (!rec.cpu || rec.deviceParametersChecked.exchange(true)) return;
  TensorViews views;
  std::vector<at::Tensor> host;  // keeps the copies alive for the check
  for (const std::string &name : rec.cpu->checkedParameters())
    for (size_t i = 0; i < rec.signature.params.size(); ++i) {
      if (rec.signature.params[i].name != name) continue;
      host.push_back(params[i].detach().to(at::kCPU, at::kFloat).contiguous());
      views[name] = TensorView{host.back().data_ptr(), host.back().sizes().vec(), ElemType::F32};
    }
  if (!views.empty()) rec.cpu->checkParameters(views);
}

std::string loadScan(const std::string &path, const std::string &recurrence, bool transitions) {
  // The API's warnings (a decay above 1) wait on their thread for takeWarnings. (TORCH_WARN from
  // an op reaches Python's warnings only in some torch versions; 1.13 logs it to stderr.)
  static std::once_flag handler;
  std::call_once(handler, [] { setWarningHandler([](const std::string &message) { pendingWarnings.push_back(message); }); });
  std::ifstream file(path);
  if (!file) C10_THROW_ERROR(ValueError, "scanforge.load: cannot read '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  // The same file with the same content gives the same key; an edited file compiles anew.
  std::string prefix = path + "#" + std::to_string(std::hash<std::string>{}(text.str())) + (transitions ? "#transition#" : "#");
  std::lock_guard<std::mutex> lock(compileMutex);
  if (auto it = requested.find(prefix + recurrence); it != requested.end()) return it->second;
  try {
    auto module = modules.find(prefix);
    if (module == modules.end()) {
      CompileOptions options;
      options.transitions = transitions;
      module = modules.emplace(prefix, compileModuleSource(path, text.str(), options)).first;
    }
    auto loaded = std::make_unique<Loaded>();
    loaded->module = module->second;
    loaded->cpu = module->second.recurrence(recurrence);
    loaded->signature = loaded->cpu->signature();
    loaded->key = prefix + loaded->signature.name;
    return requested[prefix + recurrence] = add(std::move(loaded));
  } catch (const CompileError &e) {
    C10_THROW_ERROR(ValueError, "scanforge.load('" + path + "'): " + e.what());
  }
}

}  // namespace scanforge::torchext
