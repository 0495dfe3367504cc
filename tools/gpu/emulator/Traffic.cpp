#include "tools/gpu/emulator/Traffic.h"

namespace scanforge::gpu {

uint64_t KernelTraffic::requests(bool store, bool shared) const {
  uint64_t n = 0;
  for (const InstructionTraffic &i : instructions)
    if (i.store == store && i.shared == shared) n += i.requests;
  return n;
}

uint64_t KernelTraffic::globalSectors() const {
  uint64_t n = 0;
  for (const InstructionTraffic &i : instructions)
    if (!i.shared) n += i.sectors;
  return n;
}

uint64_t KernelTraffic::dramSectors() const {
  uint64_t n = 0;
  for (const InstructionTraffic &i : instructions)
    if (!i.shared) n += i.dramSectors;
  return n;
}

uint64_t KernelTraffic::globalLaneBytes() const {
  uint64_t n = 0;
  for (const InstructionTraffic &i : instructions)
    if (!i.shared) n += i.laneBytes;
  return n;
}

uint64_t KernelTraffic::sharedLaneBytes() const {
  uint64_t n = 0;
  for (const InstructionTraffic &i : instructions)
    if (i.shared) n += i.laneBytes;
  return n;
}

double KernelTraffic::sectorsPerRequest() const {
  uint64_t r = requests(false, false) + requests(true, false);
  return r ? static_cast<double>(globalSectors()) / static_cast<double>(r) : 0.0;
}

double KernelTraffic::sectorEfficiency() const {
  uint64_t s = globalSectors();
  return s ? static_cast<double>(globalLaneBytes()) / (32.0 * static_cast<double>(s)) : 1.0;
}

double KernelTraffic::sharedWavefrontsPerRequest() const {
  uint64_t r = 0, w = 0;
  for (const InstructionTraffic &i : instructions)
    if (i.shared) r += i.requests, w += i.wavefronts;
  return r ? static_cast<double>(w) / static_cast<double>(r) : 0.0;
}

}  // namespace scanforge::gpu
