// Trainable parameters: a Variable that requires gradients, with the name it has in checkpoints
// (e.g. "layers.0.in_proj.weight").
#pragma once

#include <string>
#include <vector>

#include "runtime/core/Autograd.h"
#include "runtime/core/Safetensors.h"

namespace scanforge {

struct Parameter {
  std::string name;
  Variable variable;
};

// Puts each parameter's value into the checkpoint as "<prefix><name>" (sharing memory until saved).
void storeParameters(Checkpoint &checkpoint, const std::vector<Parameter> &params, const std::string &prefix = "");

// Copies "<prefix><name>" from the checkpoint into each parameter's value, in place. Every name
// must be present with the parameter's shape; the dtype may differ among floats (a bf16 checkpoint
// loads into f32 parameters).
void restoreParameters(const Checkpoint &checkpoint, const std::vector<Parameter> &params, const std::string &prefix = "");

}  // namespace scanforge
