#include "tools/gpu/emulator/DeviceMemory.h"

#include <sstream>

#include "runtime/cuda/CudaError.h"

namespace scanforge::gpu {

cuda::DevicePtr DeviceMemory::allocate(size_t bytes, bool zeroed) {
  size_t padded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  Allocation a;
  a.storage = zeroed ? std::make_unique<std::byte[]>(padded + 2 * kGuard + kAlignment)
                     : std::make_unique_for_overwrite<std::byte[]>(padded + 2 * kGuard + kAlignment);
  auto raw = reinterpret_cast<uintptr_t>(a.storage.get()) + kGuard;
  a.begin = (raw + kAlignment - 1) / kAlignment * kAlignment;
  a.end = a.begin + bytes;
  uintptr_t begin = a.begin;
  allocations_.emplace(begin, std::move(a));
  return begin;
}

void DeviceMemory::release(cuda::DevicePtr ptr) noexcept {
  last_ = nullptr;
  allocations_.erase(ptr);
}

Allocation *DeviceMemory::find(uintptr_t address) {
  if (last_ && address >= last_->begin && address < last_->end) return last_;
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return nullptr;
  Allocation &a = std::prev(it)->second;
  if (address >= a.end) return nullptr;
  return last_ = &a;
}

std::string DeviceMemory::describeStray(uintptr_t address, size_t bytes) const {
  std::ostringstream os;
  os << bytes << " bytes at 0x" << std::hex << address << std::dec;
  auto it = allocations_.upper_bound(address);
  const Allocation *before = it == allocations_.begin() ? nullptr : &std::prev(it)->second;
  const Allocation *after = it == allocations_.end() ? nullptr : &it->second;
  if (before && address < before->end)
    os << ", " << (address + bytes - before->end) << " bytes of it past the end of a " << (before->end - before->begin)
       << "-byte allocation";
  else if (before && address - before->end < kGuard)
    os << ", " << (address - before->end) << " bytes past the end of a " << (before->end - before->begin)
       << "-byte allocation";
  else if (after && after->begin - address <= kGuard)
    os << ", " << (after->begin - address) << " bytes before the start of a " << (after->end - after->begin)
       << "-byte allocation";
  else
    os << ", in no device allocation";
  return os.str();
}

void DeviceMemory::checkRange(cuda::DevicePtr ptr, size_t bytes, const char *what) const {
  auto it = allocations_.upper_bound(ptr);
  if (it == allocations_.begin() || ptr + bytes > std::prev(it)->second.end)
    throw cuda::CudaError(std::string(what) + " of " + std::to_string(bytes) + " bytes is outside every emulated allocation");
}

void DeviceMemory::forgetAccesses() {
  for (auto &[begin, a] : allocations_) a.shadow.reset();
}

}  // namespace scanforge::gpu
