#include "runtime/cuda/DeviceSpec.h"

#include <stdexcept>

namespace scanforge::cuda {

const DeviceSpec &h100() {
  static const DeviceSpec spec{
      .arch = "sm_90",
      .name = "H100 SXM",
      .multiprocessors = 132,
      .registersPerSm = 65536,
      .registerUnit = 256,
      .maxRegistersPerThread = 255,
      .threadsPerSm = 2048,
      .blocksPerSm = 32,
      .sharedPerSm = 228 * 1024,
      .sharedReservedPerBlock = 1024,
      .sharedPerBlock = 227 * 1024,
      .schedulersPerSm = 4,
      .clockHz = 1.98e9,
      .copyBandwidth = 2.85e12,
      // Loaded HBM3 latency, about 650 ns (idle latency is near 500 ns).
      .memoryLatency = 650e-9,
      // Dependent issue: about 4 cycles for integer and FP32 pipes, a MUFU result about 16, a
      // branch or convergence barrier (BRA, BSSY, BSYNC, CALL) about 8.
      .aluCycles = 4,
      .mufuCycles = 16,
      .controlCycles = 8,
      .launchOverhead = 3e-6,
      // Not measured: a fenced flag store and a spinning load that sees it, two L2 round trips.
      .chainHop = 2 * 650e-9,
      // Measured on an H200 (2026-11-26, docs/benchmarks.md): minGRU and minLSTM forward+backward
      // at B=8 T=16384 D=1024 with forced chunks of 16 to 128 steps lose 4.1-4.8 ns per tile more
      // than their bytes explain, 0.54-0.63 us of one of 132 SMs.
      .tileOverhead = 0.6e-6,
      .l2Bytes = 50u << 20,
  };
  return spec;
}

const DeviceSpec &h200() {
  static const DeviceSpec spec = [] {
    DeviceSpec s = h100();  // the same SMs, clocks and limits
    s.name = "H200 SXM";
    // scan-gpu-bench's 1 GiB device-to-device copy on H200s lent here: 3.84-3.89 TB/s on
    // 2026-11-25, 2026-11-26 and 2026-11-27 (docs/benchmarks.md).
    s.copyBandwidth = 3.87e12;
    s.l2Bytes = 60u << 20;  // as PyTorch reports it there (50 MB on the H100)
    // Memory latency: the H100's 650 ns, assumed (HBM3e, not measured here).
    return s;
  }();
  return spec;
}

const DeviceSpec &deviceSpec(const std::string &arch) {
  if (arch == h100().arch) return h100();
  throw std::invalid_argument("no GPU model for architecture '" + arch + "' (known: sm_90, the H100)");
}

const DeviceSpec &deviceSpecNamed(const std::string &name) {
  if (name == "h100") return h100();
  if (name == "h200") return h200();
  throw std::invalid_argument("no GPU model named '" + name + "' (known: h100, h200)");
}

}  // namespace scanforge::cuda
