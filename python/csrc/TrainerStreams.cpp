// What it takes to replay a scan-train run in PyTorch (examples/train_shakespeare.py --init-from):
// the runtime's random stream for data windows, and its checkpoints.
//
//   random_ints(state, n, count) -> (ints, state)   `count` draws of Generator::uniformInt(n)
//   random_state(seed) -> state                      the state of Generator(seed)
//   load_checkpoint(path) -> (names, tensors, metadata JSON)   a safetensors file (Safetensors.h)
//
// States are Generator::state() strings, so that the stream lives in Python between calls.
#include <c10/util/Exception.h>
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "python/csrc/Errors.h"
#include "runtime/core/Error.h"
#include "runtime/core/Random.h"
#include "runtime/core/Safetensors.h"

namespace scanforge::torchext {

namespace {

std::string randomState(int64_t seed) { return Generator(static_cast<uint64_t>(seed)).state(); }

std::tuple<at::Tensor, std::string> randomInts(const std::string &state, int64_t n, int64_t count) {
  if (n < 1 || count < 0)
    C10_THROW_ERROR(ValueError, "scanforge.random_ints: needs n >= 1 and count >= 0, got n = " + std::to_string(n) +
                                    " and count = " + std::to_string(count));
  Generator gen(0);
  translated<scanforge::RuntimeError, c10::ValueError>("scanforge.random_ints: ", [&] { gen.setState(state); });
  at::Tensor out = at::empty({count}, at::kLong);
  for (int64_t i = 0; i < count; ++i) out.data_ptr<int64_t>()[i] = gen.uniformInt(n);
  return {out, gen.state()};
}

at::ScalarType torchType(DType t) {
  switch (t) {
    case DType::F32: return at::kFloat;
    case DType::F64: return at::kDouble;
    case DType::BF16: return at::kBFloat16;
    case DType::I64: return at::kLong;
  }
  C10_THROW_ERROR(ValueError, "scanforge.load_checkpoint: a tensor of an unknown dtype");
}

std::tuple<std::vector<std::string>, std::vector<at::Tensor>, std::string> loadCheckpointOp(const std::string &path) {
  Checkpoint ck;
  translated<scanforge::RuntimeError, c10::ValueError>("scanforge.load_checkpoint: ", [&] { ck = loadCheckpoint(path); });
  std::vector<std::string> names;
  std::vector<at::Tensor> tensors;
  for (auto &[name, t] : ck.tensors) {
    at::Tensor copy = at::empty(std::vector<int64_t>(t.shape().begin(), t.shape().end()), torchType(t.dtype()));
    std::memcpy(copy.data_ptr(), t.rawData(), copy.nbytes());
    names.push_back(name);
    tensors.push_back(copy);
  }
  return {names, tensors, nlohmann::json(ck.metadata).dump()};
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(scanforge, m) {
  m.def("random_state(int seed) -> str", &randomState);
  m.def("random_ints(str state, int n, int count) -> (Tensor, str)", &randomInts);
  m.def("load_checkpoint(str path) -> (str[], Tensor[], str)", &loadCheckpointOp);
}

}  // namespace scanforge::torchext
