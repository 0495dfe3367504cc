#include "runtime/core/Parameter.h"

#include "runtime/core/Error.h"

namespace scanforge {

void storeParameters(Checkpoint &checkpoint, const std::vector<Parameter> &params, const std::string &prefix) {
  for (const Parameter &p : params) checkpoint.tensors[prefix + p.name] = p.variable.value();
}

void restoreParameters(const Checkpoint &checkpoint, const std::vector<Parameter> &params, const std::string &prefix) {
  const char *op = "restoreParameters";
  for (const Parameter &p : params) {
    auto it = checkpoint.tensors.find(prefix + p.name);
    if (it == checkpoint.tensors.end()) throw RuntimeError(op, "the checkpoint has no tensor '" + prefix + p.name + "'");
    if (it->second.shape() != p.variable.shape())
      throw RuntimeError(op, "'" + prefix + p.name + "' is " + it->second.describe() + " in the checkpoint but the parameter is " +
                                 p.variable.value().describe());
    p.variable.value().copyFrom(it->second);
  }
}

}  // namespace scanforge
