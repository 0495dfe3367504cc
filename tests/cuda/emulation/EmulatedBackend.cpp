#include "tests/cuda/emulation/EmulatedBackend.h"

#include <dlfcn.h>
#include <unistd.h>

#include <barrier>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Sha256.h"
#include "tests/cuda/emulation/EmulationAbi.h"

namespace scanforge::test {

namespace {

using cuda::CudaError;

constexpr unsigned kWarp = 32;

// 32 host threads that run the lanes of one warp at a time, for the whole process.
class LanePool {
 public:
  static LanePool &get() {
    static LanePool pool;
    return pool;
  }
  ~LanePool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (std::thread &t : threads_) t.join();
  }

  // Runs task(lane) for every lane concurrently and waits for all of them.
  void run(const std::function<void(unsigned)> &task) {
    std::unique_lock<std::mutex> lock(mutex_);
    task_ = &task;
    pending_ = kWarp;
    ++generation_;
    start_.notify_all();
    done_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  LanePool() {
    for (unsigned lane = 0; lane < kWarp; ++lane) threads_.emplace_back([this, lane] { work(lane); });
  }
  void work(unsigned lane) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(unsigned)> *task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        start_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        task = task_;
      }
      (*task)(lane);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(unsigned)> *task_ = nullptr;
  unsigned pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

// The lanes of one warp exchange shuffled values through two alternating slot rows, one barrier
// per shuffle. A lane that has finished drops out of the barrier, so a divergent kernel cannot
// hang the test; the shuffle counts then disagree and the launch fails.
struct Warp {
  std::barrier<> sync{kWarp};
  float slots[2][kWarp] = {};
  unsigned parity[kWarp] = {}, shuffles[kWarp] = {};
};

float shuffleXor(void *state, unsigned lane, float value, int laneMask) {
  Warp &w = *static_cast<Warp *>(state);
  ++w.shuffles[lane];
  unsigned row = w.parity[lane];
  w.parity[lane] ^= 1u;
  w.slots[row][lane] = value;
  w.sync.arrive_and_wait();
  return w.slots[row][(lane ^ static_cast<unsigned>(laneMask)) % kWarp];
}

class EmulatedModule : public cuda::LoadedModule {
 public:
  EmulatedModule(void *handle, std::map<std::string, SfEmuEntry> entries, std::string name)
      : handle_(handle), entries_(std::move(entries)), name_(std::move(name)) {}
  ~EmulatedModule() override { dlclose(handle_); }

  void launch(const std::string &kernel, const cuda::LaunchConfig &c, void **args, cuda::Stream) override {
    auto it = entries_.find(kernel);
    if (it == entries_.end()) throw CudaError("the emulated " + name_ + " has no kernel '" + kernel + "'");
    if (c.block == 0 || c.block % kWarp != 0)
      throw CudaError("the emulation runs whole warps; block " + std::to_string(c.block) + " is not a multiple of 32");
    if (c.sharedBytes > 48 * 1024) throw CudaError("launch asks for " + std::to_string(c.sharedBytes) + " bytes of shared memory");
    SfEmuEntry entry = it->second;
    dim3 grid{c.grid[0], c.grid[1], c.grid[2]}, block{c.block, 1, 1};
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x)
          for (unsigned base = 0; base < c.block; base += kWarp) {
            Warp warp;
            LanePool::get().run([&](unsigned lane) {
              SfEmuThread t{grid, block, {x, y, z}, {base + lane, 0, 0}, &warp, &shuffleXor};
              entry(args, &t);
              warp.sync.arrive_and_drop();
            });
            for (unsigned lane = 1; lane < kWarp; ++lane)
              if (warp.shuffles[lane] != warp.shuffles[0])
                throw CudaError(kernel + ": lanes 0 and " + std::to_string(lane) + " of a warp in block (" +
                                std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) +
                                ") made " + std::to_string(warp.shuffles[0]) + " and " +
                                std::to_string(warp.shuffles[lane]) + " warp shuffles (divergence)");
          }
  }

 private:
  void *handle_;
  std::map<std::string, SfEmuEntry> entries_;
  std::string name_;
};

std::string run(const std::string &command, int &status) {
  std::string output;
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    status = -1;
    return "cannot run: " + command;
  }
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  status = pclose(pipe);
  return output;
}

}  // namespace

EmulatedBackend::EmulatedBackend(std::filesystem::path cacheDir, std::string compiler, std::string flags)
    : cacheDir_(std::move(cacheDir)), compiler_(std::move(compiler)), flags_(std::move(flags)) {}

EmulatedBackend::~EmulatedBackend() = default;

cuda::DevicePtr EmulatedBackend::allocate(size_t bytes) {
  auto block = std::make_unique<std::byte[]>(bytes == 0 ? 1 : bytes);
  cuda::DevicePtr ptr = reinterpret_cast<cuda::DevicePtr>(block.get());
  memory_[ptr] = std::move(block);
  sizes_[ptr] = bytes;
  return ptr;
}

void EmulatedBackend::release(cuda::DevicePtr ptr) noexcept {
  memory_.erase(ptr);
  sizes_.erase(ptr);
}

void EmulatedBackend::checkRange(cuda::DevicePtr ptr, size_t bytes, const char *what) const {
  auto it = sizes_.upper_bound(ptr);
  if (it == sizes_.begin() || ptr + bytes > std::prev(it)->first + std::prev(it)->second)
    throw CudaError(std::string(what) + " of " + std::to_string(bytes) + " bytes is outside every emulated allocation");
}

void EmulatedBackend::zero(cuda::DevicePtr ptr, size_t bytes, cuda::Stream) {
  checkRange(ptr, bytes, "zeroing");
  std::memset(reinterpret_cast<void *>(ptr), 0, bytes);
}

void EmulatedBackend::upload(cuda::DevicePtr dst, const void *src, size_t bytes) {
  checkRange(dst, bytes, "an upload");
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
}

void EmulatedBackend::download(void *dst, cuda::DevicePtr src, size_t bytes) {
  checkRange(src, bytes, "a download");
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
}

std::unique_ptr<cuda::LoadedModule> EmulatedBackend::load(const cuda::ModuleSource &module) {
  std::string text = "#include \"CudaEmulation.h\"\n#line 1 \"" + module.name + "\"\n" + module.source +
                     "\n// ---- emulation entry points ----\n";
  for (auto &[kernel, arity] : module.kernels) {
    text += "extern \"C\" void sf_emu_entry_" + kernel + "(void **a, const SfEmuThread *t) {\n  sf_emu_enter(t);\n  " +
            kernel + "(";
    for (size_t i = 0; i < arity; ++i) text += (i ? ", " : "") + std::string("SfEmuArg{a[") + std::to_string(i) + "]}";
    text += ");\n}\n";
  }
  std::string command = compiler_ + " -std=c++20 -O1 -fPIC -shared -w " + flags_ + " -I" SCANFORGE_EMULATION_INCLUDE;
  for (const std::string &o : module.options) command += " " + o;
  std::string key = cuda::hex(cuda::sha256(command + "\n" + text)).substr(0, 32);
  std::filesystem::path library = cacheDir_ / (key + ".so");
  if (!std::filesystem::exists(library)) {
    std::filesystem::create_directories(cacheDir_);
    std::filesystem::path source = cacheDir_ / (key + ".cpp");
    std::string temp = library.string() + ".tmp." + std::to_string(::getpid());
    std::ofstream(source) << text;
    int status = 0;
    std::string output = run(command + " " + source.string() + " -o " + temp, status);
    if (status != 0) throw CudaError("the host compiler rejected the emulated " + module.name + ":\n" + output);
    std::filesystem::rename(temp, library);  // atomic: parallel test processes may build it too
  }
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw CudaError("cannot load the emulated " + module.name + ": " + dlerror());
  std::map<std::string, SfEmuEntry> entries;
  for (auto &[kernel, arity] : module.kernels) {
    void *symbol = dlsym(handle, ("sf_emu_entry_" + kernel).c_str());
    if (!symbol) {
      dlclose(handle);
      throw CudaError("the emulated " + module.name + " lacks kernel " + kernel);
    }
    entries[kernel] = reinterpret_cast<SfEmuEntry>(symbol);
  }
  return std::make_unique<EmulatedModule>(handle, std::move(entries), module.name);
}

}  // namespace scanforge::test
