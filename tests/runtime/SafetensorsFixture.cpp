// Writes a checkpoint for read_with_pytorch.py: every dtype, a scalar, an empty tensor, a strided
// source and metadata, plus expected.json with the values (exact decimal) the Python side must read.
// Usage: safetensors_fixture <output directory>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "runtime/core/Random.h"
#include "runtime/core/Safetensors.h"

using namespace scanforge;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: safetensors_fixture <output directory>\n";
    return 2;
  }
  std::string dir = argv[1];
  Generator gen(2024);
  Checkpoint ckpt;
  Tensor f32 = Tensor::empty({3, 4}, DType::F32);
  fillNormal(f32, 0, 1, gen);
  ckpt.tensors["layers.0.weight"] = f32;
  ckpt.tensors["layers.0.bias"] = Tensor::fromData<double>({3}, {1.0 / 3, -1e-300, 1e300});
  // Values whose bf16 rounding is a tie, just above or below one, or special: PyTorch's own
  // float32 -> bfloat16 conversion must give the same bits.
  std::vector<float> bf16Source = {1.0f, 1.00390625f, 1.01171875f, -1.01171875f, 1.0039064f, 3.14159265f,
                                   65504.0f, 1e-40f, -0.0f, 3.0e38f, 0.1f, -7.3e-5f};
  Tensor bf16Values = Tensor::fromData<float>({static_cast<int64_t>(bf16Source.size())}, bf16Source);
  ckpt.tensors["embedding.bf16"] = bf16Values.to(DType::BF16);
  ckpt.tensors["tokens"] = Tensor::fromData<int64_t>({2, 2}, {0, -5, int64_t{1} << 50, 64});
  ckpt.tensors["scalar"] = Tensor::full({}, -2.5, DType::F32);
  ckpt.tensors["empty"] = Tensor::zeros({0, 5}, DType::F64);
  Tensor wide = Tensor::empty({2, 6}, DType::F32);
  fillUniform(wide, -1, 1, gen);
  ckpt.tensors["strided"] = wide.slice(1, 1, 3);  // written as its contiguous [2, 3] values
  ckpt.metadata = {{"step", "1234"}, {"format", "scanforge"}, {"note", "ünïcode ✓"}};
  saveCheckpoint(dir + "/fixture.safetensors", ckpt);

  nlohmann::json expected;
  for (const auto &[name, t] : ckpt.tensors)
    expected["tensors"][name] = {{"dtype", nameOf(t.dtype())}, {"shape", t.shape()}, {"values", t.toDoubles()}};
  expected["bf16_source"] = std::vector<double>(bf16Source.begin(), bf16Source.end());
  expected["metadata"] = ckpt.metadata;
  std::ofstream(dir + "/expected.json") << expected.dump(1);
  return 0;
}
