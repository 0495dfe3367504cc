#include "tools/gpu/emulator/EmulatedBackend.h"

#include <cstring>
#include <mutex>

#include "runtime/cuda/CudaError.h"

namespace scanforge::gpu {

class EmulatedModule : public cuda::LoadedModule {
 public:
  EmulatedModule(EmulatedBackend &device, std::shared_ptr<const KernelLibrary> library)
      : device_(device), library_(std::move(library)) {}

  void launch(const std::string &kernel, const cuda::LaunchConfig &c, void **args, cuda::Stream) override {
    // The library's thread and hook slots are process-wide: one launch of it at a time.
    static std::mutex serial;
    std::lock_guard<std::mutex> lock(serial);
    const EmulatorOptions &o = device_.options_;
    // A GPU refuses a grid beyond its limits (CUDA_ERROR_INVALID_VALUE); so does the emulator.
    for (int axis : {1, 2})
      if (c.grid[axis] > static_cast<uint64_t>(o.maxGridYZ))
        throw cuda::CudaError("launch of " + kernel + ": grid " + (axis == 1 ? "y" : "z") + " = " +
                              std::to_string(c.grid[axis]) + " exceeds the device's limit of " +
                              std::to_string(o.maxGridYZ));
    LaunchOptions options{o.seed + device_.launches_++, o.residentBlocks, o.detectRaces, o.recordTraffic, o.onlyBlock};
    EmulatedBackend::KernelRecord &record = device_.kernels_[kernel];
    record.library = library_;
    ++record.launches;
    record.blocks += uint64_t{c.grid[0]} * c.grid[1] * c.grid[2];
    record.threads += uint64_t{c.grid[0]} * c.grid[1] * c.grid[2] * c.block;
    runLaunch(*library_, kernel, c, args, device_.memory_, device_.fibers_, options, record.byPc);
  }

 private:
  EmulatedBackend &device_;
  std::shared_ptr<const KernelLibrary> library_;
};

std::string EmulatorOptions::defaultCompiler() { return SCANFORGE_EMULATOR_CXX; }
std::string EmulatorOptions::defaultFlags() { return SCANFORGE_EMULATOR_FLAGS; }
std::string EmulatorOptions::defaultLauncher() { return SCANFORGE_EMULATOR_LAUNCHER; }

EmulatedBackend::EmulatedBackend(EmulatorOptions options) : options_(std::move(options)) {}

EmulatedBackend::~EmulatedBackend() = default;

// Empty buffers (a workspace a plan does not use, such as warp rows with atomic sums) may be null:
// nothing to move, and memset/memcpy must not see the null pointer.
void EmulatedBackend::zero(cuda::DevicePtr ptr, size_t bytes, cuda::Stream) {
  memory_.checkRange(ptr, bytes, "zeroing");
  if (bytes) std::memset(reinterpret_cast<void *>(ptr), 0, bytes);
}

void EmulatedBackend::upload(cuda::DevicePtr dst, const void *src, size_t bytes) {
  memory_.checkRange(dst, bytes, "an upload");
  if (bytes) std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
}

void EmulatedBackend::download(void *dst, cuda::DevicePtr src, size_t bytes) {
  memory_.checkRange(src, bytes, "a download");
  if (bytes) std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
}

std::unique_ptr<cuda::LoadedModule> EmulatedBackend::load(const cuda::ModuleSource &module) {
  BuildOptions build{options_.cacheDir, options_.compiler, options_.flags, options_.launcher};
  return std::make_unique<EmulatedModule>(*this, KernelLibrary::build(module, build));
}

std::vector<KernelTraffic> EmulatedBackend::traffic() const {
  std::vector<KernelTraffic> out;
  for (const auto &[kernel, record] : kernels_) {
    KernelTraffic k;
    k.kernel = kernel;
    k.launches = record.launches;
    k.blocks = record.blocks;
    k.threads = record.threads;
    std::vector<uint32_t> offsets;
    for (const auto &[pc, t] : record.byPc) offsets.push_back(record.library->offsetOf(reinterpret_cast<const void *>(pc)));
    std::map<uint32_t, std::string> sites = record.library->sites(offsets);
    std::map<std::tuple<std::string, bool, bool>, InstructionTraffic> bySite;
    for (const auto &[pc, t] : record.byPc) {
      const std::string &site = sites.at(record.library->offsetOf(reinterpret_cast<const void *>(pc)));
      InstructionTraffic &i = bySite[{site, t.store, t.shared}];
      i.site = site;
      i.store = t.store;
      i.shared = t.shared;
      i.bytesPerLane = std::max(i.bytesPerLane, t.bytesPerLane);
      i.requests += t.requests;
      i.sectors += t.sectors;
      i.dramSectors += t.dramSectors;
      i.laneBytes += t.laneBytes;
      i.wavefronts += t.wavefronts;
    }
    for (auto &[key, i] : bySite) k.instructions.push_back(i);
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace scanforge::gpu
