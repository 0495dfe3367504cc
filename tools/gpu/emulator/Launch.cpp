#include "tools/gpu/emulator/Launch.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "runtime/cuda/CudaError.h"
#include "tools/gpu/model/Occupancy.h"

namespace scanforge::gpu {

namespace {

using cuda::CudaError;

constexpr unsigned kWarp = 32;
constexpr unsigned kAccessesPerTurn = 32;   // plain accesses a lane makes before it yields
constexpr size_t kStackBytes = 256 * 1024;  // per emulated thread (the kernel and the emulator's hooks)
constexpr size_t kSharedGuard = 4096;       // around each block's shared memory
constexpr size_t kStaticSharedBytes = 48 * 1024;
constexpr size_t kMaxReports = 8;

enum class State { Runnable, Barrier, Collective, Exited };

struct Block;

struct Thread {
  SfEmuThread info;
  Block *block = nullptr;
  unsigned tid = 0, lane = 0;
  uint32_t global = 0;
  Fiber *fiber = nullptr;
  State state = State::Runnable;
  const void *waitPc = nullptr;
  uint32_t releases = 0;
  bool fenced = true;                    // no plain global write since the last __threadfence
  std::shared_ptr<Knowledge> knowledge;  // what it acquired; shared until it acquires more
  // The location it last acquired and that location's release count then: acquiring it again
  // before anyone releases it adds nothing (a thread's Knowledge only grows).
  uintptr_t acquiredAddress = 0;
  uint64_t acquiredVersion = 0;
  bool spinning = false;                 // its last yield was at a volatile or atomic access
  unsigned accessesThisTurn = 0;
  uint64_t collectiveResult = 0;
  std::vector<LaneAccess> log;
};

struct Warp {
  uint32_t epoch = 0;
  unsigned mask = 0, arrived = 0, op = 0, width = 32;
  unsigned exited = 0;  // lanes that have exited
  const void *pc = nullptr;
  uint64_t values[kWarp] = {};
  int arguments[kWarp] = {};
  unsigned runnable = 0;
};

struct Block {
  dim3 index;
  uint32_t linear = 0;
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  std::unique_ptr<std::byte[]> sharedStorage;
  uintptr_t sharedBase = 0;
  size_t sharedUsed = 0;  // dynamic + static allocated so far
  std::map<unsigned, uintptr_t> staticShared;
  std::unique_ptr<Shadow> sharedShadow;
  uint32_t epoch = 0;
  unsigned arrived = 0, live = 0, runnable = 0;
};

const char *collectiveName(unsigned op) {
  switch (op) {
    case kSfEmuSyncWarp:
      return "__syncwarp";
    case kSfEmuShflIdx:
      return "__shfl_sync";
    case kSfEmuShflXor:
      return "__shfl_xor_sync";
    case kSfEmuShflUp:
      return "__shfl_up_sync";
    case kSfEmuShflDown:
      return "__shfl_down_sync";
    case kSfEmuBallot:
      return "__ballot_sync";
    case kSfEmuAny:
      return "__any_sync";
    default:
      return "__all_sync";
  }
}

std::string hexMask(unsigned mask) {
  std::ostringstream os;
  os << "0x" << std::hex << mask;
  return os.str();
}

class Launch {
 public:
  Launch(const KernelLibrary &library, const std::string &kernel, const cuda::LaunchConfig &config, void **args,
         DeviceMemory &memory, FiberPool &fibers, const LaunchOptions &options, std::map<uintptr_t, PcTraffic> &traffic)
      : lib_(library),
        kernel_(kernel),
        config_(config),
        args_(args),
        memory_(memory),
        fibers_(fibers),
        options_(options),
        traffic_(traffic),
        recorder_(traffic, sectorOwners_, [this](const LaneAccess &a) { return lineKey(a); }),
        entry_(library.entry(kernel)) {
    grid_ = {config.grid[0], config.grid[1], config.grid[2]};
    blockDim_ = {config.block, 1, 1};
    std::seed_seq seq{options.seed, static_cast<uint64_t>(std::hash<std::string>{}(kernel))};
    rng_.seed(seq);
  }

  void run();

  // ---- hooks, on the running emulated thread ----
  void access(const void *address, unsigned size, unsigned kind, const void *pc);
  void syncthreads(const void *pc);
  uint64_t collective(unsigned op, unsigned mask, uint64_t value, int argument, unsigned width, const void *pc);
  void threadfence() { current_->fenced = true; }
  void *dynamicShared() { return reinterpret_cast<void *>(current_->block->sharedBase); }
  void *staticShared(unsigned id, size_t bytes, size_t align);

  static thread_local Launch *active;

 private:
  static void body(void *thread);
  void setError(const std::string &message);
  [[noreturn]] void abandon();
  // setError(message()) and abandon(), out of line with the message's strings: inline, they gave
  // the hooks that run on every access a frame of kilobytes, which AddressSanitizer poisons and
  // clears on every call (a third of the emulator's time in the sanitized build).
  template <class Message>
  [[noreturn, gnu::noinline, gnu::cold]] void fail(const Message &message) {
    setError(message());
    abandon();
  }
  std::string where(const Thread &t) const;
  std::string line(const void *pc) const { return lib_.site(lib_.offsetOf(pc)); }
  uintptr_t lineKey(const LaneAccess &access);
  void setState(Thread &t, State s);
  void yield(Thread &t);
  void dispatch(uint32_t linear);
  void retire(Block &b);
  void completeBarrier(Block &b);
  void completeCollective(Block &b, Warp &w);
  void exited(Thread &t);
  void runWarp(Block &b, unsigned warp);
  [[gnu::noinline, gnu::cold]] void reportRace(const Race &race, uintptr_t address, const char *space, size_t offset);
  std::string deadlockReport(const std::string &what) const;
  std::string describeThread(uint32_t global) const;
  Stamp stampOf(const Thread &t, const void *pc, bool write, bool sync, uint8_t bytes) const;
  void recordWord(Shadow &shadow, size_t offset, const Thread &t, const Stamp &stamp, uintptr_t address,
                  const char *space);
  // Out of line, as fail(): only volatile and atomic accesses take them.
  [[gnu::noinline]] void acquire(Thread &t, uintptr_t address);
  [[gnu::noinline]] void release(Thread &t, uintptr_t address);

  const KernelLibrary &lib_;
  std::string kernel_;
  cuda::LaunchConfig config_;
  void **args_;
  DeviceMemory &memory_;
  FiberPool &fibers_;
  LaunchOptions options_;
  std::map<uintptr_t, PcTraffic> &traffic_;
  SectorOwners sectorOwners_;  // this launch's first toucher of each global sector
  TrafficRecorder recorder_;
  // pc -> the first pc seen of its source line and kind (an access's pc has one kind)
  std::unordered_map<uintptr_t, uintptr_t> lineKeys_;
  std::map<std::tuple<std::string, bool, bool>, uintptr_t> firstPcOfLine_;
  KernelLibrary::Entry entry_;
  dim3 grid_, blockDim_;
  std::mt19937_64 rng_;

  std::vector<std::unique_ptr<Block>> resident_;
  Thread *current_ = nullptr;
  std::string error_;
  uint64_t progress_ = 0, spinsSinceProgress_ = 0;
  size_t notStarted_ = 0;
  // Per released location: what its releasers had acquired (shared, not copied: a thread's
  // Knowledge is never changed once shared; thousands of locations may hold the same one) and
  // their own epochs and release counts.
  static constexpr size_t kSharedClockParts = 8;
  struct SyncClock {
    std::vector<std::shared_ptr<Knowledge>> acquired;
    Knowledge own;
    uint64_t version = 0;  // releases of the launch when it was last released (0: never)
  };
  std::map<uintptr_t, SyncClock> syncClocks_;
  uint64_t releases_ = 0;
  // Scratch of the scheduler, kept to spare an allocation per scheduling step.
  std::vector<Block *> ready_;
  std::vector<unsigned> runnableWarps_;
  std::vector<std::vector<LaneAccess> *> logs_;
  std::vector<Knowledge *> distinctKnowledge_;
  std::vector<std::string> races_;
  std::set<std::pair<uint32_t, uint32_t>> racePcs_;
};

thread_local Launch *Launch::active = nullptr;

// ---- threads and blocks ----

void Launch::body(void *argument) {
  auto &t = *static_cast<Thread *>(argument);
  active->entry_(active->args_);
  active->exited(t);
}

void Launch::setState(Thread &t, State s) {
  bool was = t.state == State::Runnable, is = s == State::Runnable;
  t.state = s;
  if (was == is) return;
  int delta = is ? 1 : -1;
  t.block->runnable += delta;
  t.block->warps[t.tid / kWarp].runnable += delta;
}

void Launch::yield(Thread &t) {
  t.accessesThisTurn = 0;
  t.fiber->yield();
}

std::string Launch::where(const Thread &t) const {
  std::ostringstream os;
  os << "block (" << t.block->index.x << ", " << t.block->index.y << ", " << t.block->index.z << ") thread " << t.tid;
  return os.str();
}

std::string Launch::describeThread(uint32_t global) const {
  uint32_t block = global / config_.block, tid = global % config_.block;
  uint32_t x = block % grid_.x, y = block / grid_.x % grid_.y, z = block / grid_.x / grid_.y;
  std::ostringstream os;
  os << "block (" << x << ", " << y << ", " << z << ") thread " << tid;
  return os.str();
}

void Launch::setError(const std::string &message) {
  if (error_.empty()) error_ = kernel_ + ": " + message;
}

// After setError: the failing thread never runs again; the scheduler stops the launch and the
// thread's stack is reused as it is (the kernel's frames cannot be unwound: compilers take the
// instrumentation's callbacks to never throw). So no object may be alive in the caller's frame.
void Launch::abandon() {
  for (;;) current_->fiber->yield();
}

void Launch::dispatch(uint32_t linear) {
  auto b = std::make_unique<Block>();
  b->linear = linear;
  b->index = {linear % grid_.x, linear / grid_.x % grid_.y, linear / grid_.x / grid_.y};
  // Shared memory, guarded on both sides: NaN (0xff bytes) wherever the block may read it.
  b->sharedStorage.reset(new std::byte[config_.sharedBytes + kStaticSharedBytes + 2 * kSharedGuard]);
  b->sharedBase = reinterpret_cast<uintptr_t>(b->sharedStorage.get()) + kSharedGuard;
  b->sharedUsed = config_.sharedBytes;
  std::memset(reinterpret_cast<void *>(b->sharedBase), 0xff, config_.sharedBytes);
  if (options_.detectRaces) b->sharedShadow = std::make_unique<Shadow>(config_.sharedBytes);
  unsigned n = config_.block;
  b->threads.resize(n);
  b->warps.resize((n + kWarp - 1) / kWarp);
  b->live = n;
  for (unsigned i = 0; i < n; ++i) {
    Thread &t = b->threads[i];
    t.info = {grid_, blockDim_, b->index, {i, 0, 0}};
    t.block = b.get();
    t.tid = i;
    t.lane = i % kWarp;
    t.global = linear * n + i;
    t.fiber = fibers_.take();
    t.fiber->start(&Launch::body, &t);
    ++b->runnable;
    ++b->warps[i / kWarp].runnable;
  }
  resident_.push_back(std::move(b));
  ++progress_;
}

void Launch::retire(Block &b) {
  for (Thread &t : b.threads) fibers_.give(t.fiber);
}

void Launch::exited(Thread &t) {
  Block &b = *t.block;
  setState(t, State::Exited);
  --b.live;
  ++progress_;
  Warp &w = b.warps[t.tid / kWarp];
  w.exited |= 1u << t.lane;
  if (w.arrived && (w.mask >> t.lane & 1u)) {
    fail([&] {
      return where(t) + " exited while lanes " + hexMask(w.arrived) + " of its warp wait for it in " +
             collectiveName(w.op) + " at " + line(w.pc) + " with mask " + hexMask(w.mask) + " (divergence)";
    });
  }
  if (b.arrived && b.arrived == b.live) completeBarrier(b);
}

// The block's threads share what any of them acquired. Most hold the same Knowledge (the last
// barrier's): each distinct one is joined once, and a single one is shared as it is.
void Launch::completeBarrier(Block &b) {
  ++b.epoch;
  b.arrived = 0;
  std::shared_ptr<Knowledge> joined;
  distinctKnowledge_.clear();
  for (Thread &t : b.threads)
    if (t.knowledge) {
      if (!joined) joined = t.knowledge;
      distinctKnowledge_.push_back(t.knowledge.get());
    }
  std::sort(distinctKnowledge_.begin(), distinctKnowledge_.end());
  distinctKnowledge_.erase(std::unique(distinctKnowledge_.begin(), distinctKnowledge_.end()), distinctKnowledge_.end());
  if (distinctKnowledge_.size() > 1) {
    joined = std::make_shared<Knowledge>();
    for (const Knowledge *k : distinctKnowledge_) joined->join(*k);
  }
  for (Thread &t : b.threads) {
    t.knowledge = joined;
    if (t.state == State::Barrier) setState(t, State::Runnable);
  }
  ++progress_;
}

void Launch::syncthreads(const void *pc) {
  Thread &t = *current_;
  Block &b = *t.block;
  t.waitPc = pc;
  setState(t, State::Barrier);
  if (++b.arrived == b.live) completeBarrier(b);
  yield(t);  // also when it completed the barrier: the warp's lanes go on together
}

// ---- warp collectives ----

uint64_t Launch::collective(unsigned op, unsigned mask, uint64_t value, int argument, unsigned width, const void *pc) {
  Thread &t = *current_;
  Block &b = *t.block;
  Warp &w = b.warps[t.tid / kWarp];
  unsigned lanes = std::min(kWarp, config_.block - (t.tid / kWarp) * kWarp);
  unsigned present = lanes == kWarp ? 0xffffffffu : (1u << lanes) - 1u;
  if (!(mask >> t.lane & 1u)) {
    fail([&] { return where(t) + " calls " + collectiveName(op) + " at " + line(pc) + " with mask " + hexMask(mask) +
             ", which excludes its own lane " + std::to_string(t.lane); });
  }
  if (mask & ~present) {
    fail([&] { return where(t) + " calls " + collectiveName(op) + " at " + line(pc) + " with mask " + hexMask(mask) +
             " naming lanes its warp does not have (the block has " + std::to_string(config_.block) + " threads)"; });
  }
  if (width == 0 || width > kWarp || (width & (width - 1))) {
    fail([&] {
      return where(t) + " calls " + collectiveName(op) + " at " + line(pc) + " with width " + std::to_string(width) +
             " (a power of two up to 32)";
    });
  }
  if (unsigned gone = mask & w.exited) {
    fail([&] { return where(t) + " calls " + collectiveName(op) + " at " + line(pc) + " with mask " + hexMask(mask) +
             ", but lane " + std::to_string(std::countr_zero(gone)) + " has exited (divergence)"; });
  }
  if (w.arrived == 0) {
    w.mask = mask;
    w.op = op;
    w.width = width;
    w.pc = pc;
  } else if (w.mask != mask || w.op != op) {
    fail([&] { return where(t) + " calls " + collectiveName(op) + " at " + line(pc) + " with mask " + hexMask(mask) +
             " while lanes " + hexMask(w.arrived) + " of its warp wait in " + collectiveName(w.op) + " at " +
             line(w.pc) + " with mask " + hexMask(w.mask) + " (divergence)"; });
  }
  w.values[t.lane] = value;
  w.arguments[t.lane] = argument;
  w.arrived |= 1u << t.lane;
  t.waitPc = pc;
  setState(t, State::Collective);
  if (w.arrived == w.mask) completeCollective(b, w);
  yield(t);
  return t.collectiveResult;
}

void Launch::completeCollective(Block &b, Warp &w) {
  uint64_t ballot = 0;
  bool any = false, all = true;
  for (unsigned l = 0; l < kWarp; ++l)
    if (w.mask >> l & 1u) {
      ballot |= (w.values[l] ? 1ull : 0ull) << l;
      any = any || w.values[l];
      all = all && w.values[l];
    }
  unsigned begin = static_cast<unsigned>(&w - b.warps.data()) * kWarp;
  for (unsigned i = begin; i < std::min<unsigned>(begin + kWarp, config_.block); ++i) {
    Thread &t = b.threads[i];
    if (!(w.mask >> t.lane & 1u)) continue;
    unsigned lane = t.lane, segment = lane / w.width * w.width, arg = static_cast<unsigned>(w.arguments[lane]);
    unsigned source = lane;
    switch (w.op) {
      case kSfEmuShflIdx:
        source = segment + arg % w.width;
        break;
      case kSfEmuShflXor:
        source = lane ^ arg;
        source = source / w.width == lane / w.width ? source : lane;
        break;
      case kSfEmuShflUp:
        source = lane >= segment + arg ? lane - arg : lane;
        break;
      case kSfEmuShflDown:
        source = lane + arg < segment + w.width ? lane + arg : lane;
        break;
      default:
        break;
    }
    if (source >= kWarp || !(w.mask >> source & 1u)) {
      fail([&] { return where(t) + " reads lane " + std::to_string(source) + " in " + collectiveName(w.op) + " at " +
               line(w.pc) + ", which is not in the mask " + hexMask(w.mask); });
    }
    switch (w.op) {
      case kSfEmuBallot:
        t.collectiveResult = ballot;
        break;
      case kSfEmuAny:
        t.collectiveResult = any;
        break;
      case kSfEmuAll:
        t.collectiveResult = all;
        break;
      case kSfEmuSyncWarp:
        t.collectiveResult = 0;
        break;
      default:
        t.collectiveResult = w.values[source];
        break;
    }
    setState(t, State::Runnable);
  }
  ++w.epoch;
  w.arrived = 0;
}

// ---- memory ----

Stamp Launch::stampOf(const Thread &t, const void *pc, bool write, bool sync, uint8_t bytes) const {
  Stamp s;
  s.thread = t.global + 1;
  s.epoch = t.block->epoch;
  s.warpEpoch = t.block->warps[t.tid / kWarp].epoch;
  s.release = t.releases;
  s.pc = lib_.offsetOf(pc);
  s.bytes = bytes;
  s.sync = sync;
  s.write = write;
  return s;
}

void Launch::recordWord(Shadow &shadow, size_t offset, const Thread &t, const Stamp &stamp, uintptr_t address,
                        const char *space) {
  Accessor who{t.global,   t.block->linear,  config_.block, t.block->epoch, t.block->warps[t.tid / kWarp].epoch,
               t.releases, t.knowledge.get()};
  Race race;
  if (checkAndRecord(shadow.word(offset), who, stamp, race)) reportRace(race, address, space, offset);
}

void Launch::reportRace(const Race &race, uintptr_t address, const char *space, size_t offset) {
  if (races_.size() >= kMaxReports || !racePcs_.insert({race.earlier.pc, race.later.pc}).second) return;
  auto verb = [](const Stamp &s) { return std::string(s.write ? (s.sync ? "atomically wrote" : "wrote") : "read"); };
  std::ostringstream os;
  os << "data race on " << space << " memory at 0x" << std::hex << address << std::dec << " (offset " << offset
     << "): " << describeThread(race.earlier.thread - 1) << " " << verb(race.earlier) << " it at "
     << lib_.site(race.earlier.pc) << ", then " << describeThread(race.later.thread - 1) << " " << verb(race.later)
     << " it at " << lib_.site(race.later.pc) << ", with no __syncthreads, warp sync or fenced flag ordering them";
  races_.push_back(os.str());
}

void Launch::acquire(Thread &t, uintptr_t address) {
  auto it = syncClocks_.find(address);
  if (it == syncClocks_.end()) return;
  if (t.acquiredAddress == address && t.acquiredVersion == it->second.version) return;  // a spin: nothing new
  t.acquiredAddress = address;
  t.acquiredVersion = it->second.version;
  auto k = std::make_shared<Knowledge>(t.knowledge ? *t.knowledge : Knowledge{});
  for (const std::shared_ptr<Knowledge> &part : it->second.acquired) k->join(*part);
  k->join(it->second.own);
  t.knowledge = std::move(k);
}

// A volatile or atomic write after a __threadfence publishes everything the thread's block did
// before its last barrier, everything the thread did, and everything it had acquired.
void Launch::release(Thread &t, uintptr_t address) {
  if (!t.fenced) return;
  SyncClock &clock = syncClocks_[address];
  if (t.knowledge && std::find(clock.acquired.begin(), clock.acquired.end(), t.knowledge) == clock.acquired.end())
    clock.acquired.push_back(t.knowledge);
  if (clock.acquired.size() > kSharedClockParts) {  // a location many threads release (a ticket counter): merged
    for (const std::shared_ptr<Knowledge> &part : clock.acquired) clock.own.join(*part);
    clock.acquired.clear();
  }
  clock.own.blockEpochs.raise(t.block->linear, t.block->epoch);
  clock.own.releases.raise(t.global + 1, t.releases + 1);
  ++t.releases;
  clock.version = ++releases_;
}

void Launch::access(const void *address, unsigned size, unsigned kind, const void *pc) {
  Thread &t = *current_;
  Block &b = *t.block;
  auto a = reinterpret_cast<uintptr_t>(address);
  bool write = kind == kSfEmuWrite || kind == kSfEmuVolatileWrite || kind == kSfEmuAtomic;
  bool sync = kind != kSfEmuRead && kind != kSfEmuWrite;
  const char *space = nullptr;
  Shadow *shadow = nullptr;
  size_t offset = 0;
  if (a + size > b.sharedBase - kSharedGuard &&
      a < b.sharedBase + config_.sharedBytes + kStaticSharedBytes + kSharedGuard) {
    if (a < b.sharedBase || a + size > b.sharedBase + b.sharedUsed) {
      fail([&] { return where(t) + (write ? " writes " : " reads ") + std::to_string(size) +
               " bytes of shared memory at offset " + std::to_string(static_cast<long long>(a - b.sharedBase)) +
               " at " + line(pc) + ", outside the block's " + std::to_string(b.sharedUsed) + " bytes"; });
    }
    space = "shared";
    shadow = b.sharedShadow.get();
    offset = a - b.sharedBase;
  } else if (t.fiber->onStack(address) ||
             (a >= reinterpret_cast<uintptr_t>(&t.info) && a < reinterpret_cast<uintptr_t>(&t.info + 1))) {
    return;  // the thread's registers and local memory
  } else if (Allocation *alloc = memory_.find(a)) {
    if (a + size > alloc->end) {
      fail([&] { return where(t) + (write ? " writes " : " reads ") + memory_.describeStray(a, size) + " at " +
                        line(pc); });
    }
    space = "global";
    if (options_.detectRaces) shadow = &alloc->shadowed();
    offset = a - alloc->begin;
  } else if (lib_.holds(address)) {
    return;  // the library's static data
  } else {
    fail([&] { return where(t) + (write ? " writes " : " reads ") + memory_.describeStray(a, size) + " at " + line(pc) +
             " (out of bounds)"; });
  }

  if (sync) {
    // Let other threads move first: a spinning thread must not starve the one it waits for.
    t.spinning = !write;
    t.waitPc = pc;
    yield(t);
  }
  if (shadow) {
    for (uintptr_t word = a & ~uintptr_t{3}; word < a + size; word += 4) {
      uintptr_t lo = std::max(word, a), hi = std::min(word + 4, a + size);
      uint8_t bytes = static_cast<uint8_t>(((1u << (hi - lo)) - 1u) << (lo - word));
      recordWord(*shadow, offset - (a - word), t, stampOf(t, pc, write, sync, bytes), word, space);
    }
  }
  if (options_.recordTraffic && kind != kSfEmuAtomic)
    t.log.push_back({reinterpret_cast<uintptr_t>(pc), a, size, write, space[0] == 's'});
  if (write) ++progress_;
  if (sync) {
    // What threads acquire and release orders their accesses for the race detector only.
    if (options_.detectRaces && kind != kSfEmuVolatileWrite) acquire(t, a);
    if (options_.detectRaces && write) release(t, a);
    return;
  }
  if (write && space[0] == 'g') t.fenced = false;
  if (++t.accessesThisTurn >= kAccessesPerTurn) {
    t.spinning = false;
    ++progress_;
    yield(t);
  }
}

void *Launch::staticShared(unsigned id, size_t bytes, size_t align) {
  Block &b = *current_->block;
  auto it = b.staticShared.find(id);
  if (it != b.staticShared.end()) return reinterpret_cast<void *>(it->second);
  size_t offset = (b.sharedUsed + align - 1) / align * align;
  if (offset + bytes > config_.sharedBytes + kStaticSharedBytes) {
    fail([&] {
      return where(*current_) + ": static __shared__ arrays exceed " + std::to_string(kStaticSharedBytes) + " bytes";
    });
  }
  b.sharedUsed = offset + bytes;
  std::memset(reinterpret_cast<void *>(b.sharedBase + offset), 0xff, bytes);
  if (b.sharedShadow) b.sharedShadow->grow(b.sharedUsed);
  return reinterpret_cast<void *>(b.staticShared[id] = b.sharedBase + offset);
}

// ---- the scheduler ----

void Launch::runWarp(Block &b, unsigned warp) {
  unsigned begin = warp * kWarp, end = std::min<unsigned>(begin + kWarp, config_.block);
  std::vector<std::vector<LaneAccess> *> &logs = logs_;
  logs.clear();
  for (unsigned i = begin; i < end; ++i) {
    Thread &t = b.threads[i];
    logs.push_back(t.state == State::Exited ? nullptr : &t.log);  // a lane waiting at a barrier: an empty log
    if (t.state != State::Runnable) continue;
    current_ = &t;
    lib_.setThread(&t.info);
    uint64_t before = progress_;
    t.fiber->resume();
    if (!error_.empty()) return;
    if (t.spinning && progress_ == before) {
      ++spinsSinceProgress_;
    } else {
      spinsSinceProgress_ = 0;
    }
  }
  if (!options_.recordTraffic) return;
  // Source lines of program counters not seen yet, in one addr2line run.
  std::set<uint32_t> unseen;
  for (const std::vector<LaneAccess> *log : logs)
    if (log)
      for (const LaneAccess &a : *log)
        if (!lineKeys_.count(a.pc)) unseen.insert(lib_.offsetOf(reinterpret_cast<const void *>(a.pc)));
  if (!unseen.empty()) lib_.sites({unseen.begin(), unseen.end()});
  uint64_t warpsPerBlock = (config_.block + kWarp - 1) / kWarp, id = uint64_t{b.linear} * warpsPerBlock + warp;
  recorder_.addTurn(id, logs);
  unsigned lanes = end - begin;
  if (b.warps[warp].exited == (lanes == kWarp ? 0xffffffffu : (1u << lanes) - 1u)) recorder_.finishWarp(id);
}

uintptr_t Launch::lineKey(const LaneAccess &a) {
  auto it = lineKeys_.find(a.pc);
  if (it != lineKeys_.end()) return it->second;
  std::tuple<std::string, bool, bool> kind{line(reinterpret_cast<const void *>(a.pc)), a.store, a.shared};
  uintptr_t key = firstPcOfLine_.emplace(std::move(kind), a.pc).first->second;
  lineKeys_[a.pc] = key;
  return key;
}

std::string Launch::deadlockReport(const std::string &what) const {
  std::ostringstream os;
  os << "deadlock: " << what;
  for (const auto &b : resident_) {
    std::map<std::pair<int, std::string>, unsigned> waits;  // (state, line) -> threads
    for (const Thread &t : b->threads) {
      if (t.state == State::Exited) continue;
      int s = t.state == State::Barrier ? 0 : t.state == State::Collective ? 1 : 2;
      waits[{s, t.waitPc ? line(t.waitPc) : "?"}]++;
    }
    os << "\n  block (" << b->index.x << ", " << b->index.y << ", " << b->index.z << "):";
    for (auto &[key, n] : waits)
      os << " " << n << " thread(s) "
         << (key.first == 0   ? "wait at __syncthreads"
             : key.first == 1 ? "wait in a warp collective"
                              : "spin")
         << " at " << key.second << ";";
  }
  if (notStarted_)
    os << "\n  " << notStarted_ << " block(s) not started: the emulated GPU holds " << resident_.size()
       << " blocks at once, and a block may wait only for blocks that started before it (take block indices from an "
          "atomic counter, not blockIdx)";
  return os.str();
}

void Launch::run() {
  uint32_t total = grid_.x * grid_.y * grid_.z;
  unsigned slots =
      options_.residentBlocks ? options_.residentBlocks : residentBlocksPerSm(config_.block, config_.sharedBytes);
  std::vector<uint32_t> order;
  if (const auto &only = options_.onlyBlock) {
    if ((*only)[0] >= grid_.x || (*only)[1] >= grid_.y || (*only)[2] >= grid_.z)
      throw CudaError(kernel_ + ": the block to run alone lies outside the grid");
    order = {((*only)[2] * grid_.y + (*only)[1]) * grid_.x + (*only)[0]};
  } else {
    order.resize(total);
    for (uint32_t i = 0; i < total; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng_);
  }
  size_t next = 0;
  active = this;
  SfEmuHooks hooks{
      [](const void *a, unsigned s, unsigned k, const void *pc) { active->access(a, s, k, pc); },
      [](const void *pc) { active->syncthreads(pc); },
      [](unsigned op, unsigned m, uint64_t v, int arg, unsigned w, const void *pc) {
        return active->collective(op, m, v, arg, w, pc);
      },
      [](const void *) { active->threadfence(); },
      []() { return active->dynamicShared(); },
      [](unsigned id, size_t bytes, size_t align) { return active->staticShared(id, bytes, align); },
  };
  lib_.setHooks(&hooks);
  auto cleanup = [&] {
    for (auto &b : resident_) retire(*b);
    resident_.clear();
    active = nullptr;
    memory_.forgetAccesses();
  };
  try {
    while (true) {
      while (resident_.size() < slots && next < order.size()) dispatch(order[next++]);
      notStarted_ = order.size() - next;
      if (resident_.empty()) break;
      std::vector<Block *> &ready = ready_;
      ready.clear();
      for (auto &b : resident_)
        if (b->runnable) ready.push_back(b.get());
      if (ready.empty()) {
        error_ = kernel_ + ": " + deadlockReport("every resident thread waits at a barrier or in a warp collective");
        break;
      }
      Block &b = *ready[rng_() % ready.size()];
      std::vector<unsigned> &warps = runnableWarps_;
      warps.clear();
      for (unsigned w = 0; w < b.warps.size(); ++w)
        if (b.warps[w].runnable) warps.push_back(w);
      runWarp(b, warps[rng_() % warps.size()]);
      if (!error_.empty()) break;
      size_t running = 0;
      for (auto &r : resident_) running += r->runnable;
      if (spinsSinceProgress_ > 1000 + 64 * running) {
        error_ = kernel_ + ": " +
                 deadlockReport(
                     "the running threads spin on volatile or atomic loads that no resident "
                     "thread will change");
        break;
      }
      for (size_t i = 0; i < resident_.size();)
        if (resident_[i]->live == 0) {
          retire(*resident_[i]);
          resident_.erase(resident_.begin() + static_cast<long>(i));
        } else {
          ++i;
        }
    }
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  if (!error_.empty()) throw CudaError(error_);
  if (!races_.empty()) {
    std::string message = kernel_ + ": " + std::to_string(races_.size()) + " data race(s)";
    for (const std::string &r : races_) message += "\n  " + r;
    throw CudaError(message);
  }
}

}  // namespace

Fiber *FiberPool::take() {
  if (free_.empty()) {
    all_.push_back(std::make_unique<Fiber>(kStackBytes));
    free_.push_back(all_.back().get());
  }
  Fiber *f = free_.back();
  free_.pop_back();
  return f;
}

unsigned residentBlocksPerSm(unsigned threads, size_t sharedBytes) {
  // Registers are unknown here (no SASS): threads, blocks and shared memory limit.
  return occupancy(h100(), {threads, 0, sharedBytes}).blocksPerSm;
}

void runLaunch(const KernelLibrary &library, const std::string &kernel, const cuda::LaunchConfig &config, void **args,
               DeviceMemory &memory, FiberPool &fibers, const LaunchOptions &options,
               std::map<uintptr_t, PcTraffic> &traffic) {
  if (config.block == 0 || config.block > 1024)
    throw CudaError(kernel + ": a block of " + std::to_string(config.block) + " threads (1 to 1024)");
  if (config.grid[0] == 0 || config.grid[1] == 0 || config.grid[2] == 0 || config.grid[1] > 65535 ||
      config.grid[2] > 65535)
    throw CudaError(kernel + ": grid (" + std::to_string(config.grid[0]) + ", " + std::to_string(config.grid[1]) +
                    ", " + std::to_string(config.grid[2]) + ") is empty or beyond the limits (y and z at most 65535)");
  if (config.sharedBytes > h100().sharedPerBlock)
    throw CudaError(kernel + ": launch asks for " + std::to_string(config.sharedBytes) + " bytes of shared memory, more than the " +
                    std::to_string(h100().sharedPerBlock) + " an H100 block may use");
  Launch launch(library, kernel, config, args, memory, fibers, options, traffic);
  launch.run();
}

}  // namespace scanforge::gpu
