// Checkpoints in the safetensors format (https://github.com/huggingface/safetensors), readable by
// PyTorch users with `safetensors.torch.load_file`:
//
//   8 bytes      little-endian u64 N: the length of the header
//   N bytes      JSON object: {"<tensor name>": {"dtype": "F32", "shape": [2, 3],
//                              "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
//                (padded with spaces so that the data starts 8-byte aligned)
//   the rest     the tensors' raw little-endian bytes, row-major; data_offsets are relative to the
//                start of this section, and the tensors tile it exactly, without gaps or overlaps
//
// dtypes: F32, F64, BF16 (and I64). Writing is atomic: a temporary file in the same directory is
// written, fsynced and renamed over the target, so a crash leaves the old checkpoint or the new one,
// never a torn file. Reading validates everything (header length, JSON, dtypes, shapes, offsets,
// file size) and reports what is wrong and where; a corrupt file is an error, never a crash.
#pragma once

#include <map>
#include <string>

#include "runtime/core/Tensor.h"

namespace scanforge {

struct Checkpoint {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  // the header's "__metadata__" (strings only)
};

void saveCheckpoint(const std::string &path, const Checkpoint &checkpoint);
Checkpoint loadCheckpoint(const std::string &path);

}  // namespace scanforge
