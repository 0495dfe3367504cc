// Where a tensor's memory lives. Only the CPU exists today; runtime/cuda will add a kind with its
// allocator (Storage is the one place that allocates), so tensors already carry their device.
#pragma once

namespace scanforge {

enum class DeviceKind { Cpu };

struct Device {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;

  static Device cpu() { return Device{}; }
  friend bool operator==(const Device &, const Device &) = default;
};

}  // namespace scanforge
