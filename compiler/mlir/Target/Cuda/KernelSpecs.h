// What the runtime needs to launch a recurrence's kernels: buffers, launch sequences with their
// parameters, grids and shared memory as formulas (see docs/cuda.md for the formula language:
// $B, $T, $L, $NC, dimension names, + - * /, cdiv(a, b)).
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

namespace scanforge::cuda {

struct BufferSpec {
  std::string name;
  std::string role;    // input, param, output, accum, initial_state, final_state, checkpoint,
                       // forward_output, forward_initial_state, workspace
  std::string dtype;   // f32 or bf16
  std::vector<std::string> shape;  // formulas
  bool optional = false;
};

struct LaunchParam {
  enum class Kind { Buffer, Int32, Int64 } kind;
  std::string value;  // a buffer name, or a formula
};

struct Launch {
  std::string kernel;
  std::vector<LaunchParam> params;
  std::array<std::string, 3> grid;
  int block = 0;
  std::string sharedBytes = "0";
};

struct RecurrenceKernels {
  std::string name;            // the recurrence's symbol
  std::string adjointOf;       // a backward: its forward recurrence
  std::string backward;        // a forward: its backward recurrence, if any
  bool descending = false;     // runs from t = T-1 down to 0
  std::vector<std::string> channelDims, registerDims;
  std::string layoutNote;      // why the layout has no channel dimensions, if so
  std::string file;            // the .cu file in the package
  std::string source;
  std::map<std::string, std::string> defines;  // macro -> formula (register dimension sizes)
  std::vector<BufferSpec> buffers;
  std::vector<std::string> zeroInit;           // buffers the runtime zeroes before the launches
  std::vector<Launch> sequential, chunked;     // the two strategies, in launch order
  std::string channels;                        // threads per batch element (formula)
  std::string recomputeBytesPerStep = "0";     // shared memory per chunk step of one block
};

}  // namespace scanforge::cuda
