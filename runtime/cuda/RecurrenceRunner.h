// Launches a recurrence's forward and backward kernels, from a kernel package, on a device.
//
// The caller owns the tensors (inputs, parameters, outputs, gradients, optional initial and final
// states, and the forward's checkpoints for the backward) and passes them by buffer name; the
// runner compiles the kernels for the shape's register-dimension sizes (once per size), keeps
// its own scratch buffers, zeroes what the kernels accumulate into, and launches the strategy the
// plan names. A backward must use the plan of the forward that wrote its checkpoints (its chunk
// length is the checkpoint interval); a forward whose checkpoints no backward reads is planned for
// itself (Passes::Forward) and passed no checkpoints. Not for concurrent use from several threads or
// streams.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "runtime/cuda/DeviceBackend.h"
#include "runtime/cuda/Formula.h"
#include "runtime/cuda/KernelPackage.h"
#include "runtime/cuda/Planner.h"

namespace scanforge::cuda {

struct Shape {
  int64_t batch = 1, steps = 1;
  std::map<std::string, int64_t> dims;
  std::string describe() const;  // "B=2 T=37 d=3 n=16"
};

using BufferMap = std::map<std::string, DevicePtr>;

// A launch as a plan runs it: its configuration at a call's formula variables.
struct PlannedLaunch {
  const LaunchDesc *desc;
  LaunchConfig config;
};
// The launches of `plan`'s strategy of `rec` at `vars`, in order. One whose grid is empty is left
// out: the plan does not need it (the sums of warps' rows with $ATOMIC = 1).
std::vector<PlannedLaunch> plannedLaunches(const RecurrenceDesc &rec, const Plan &plan, const Variables &vars);

// The kernels a plan serves: a forward alone (inference, or a forward whose backward runs its own
// forward again), or a forward and the backward that reads its checkpoints.
enum class Passes { Forward, ForwardAndBackward };

class RecurrenceRunner {
 public:
  // `package` must outlive the runner.
  RecurrenceRunner(const KernelPackage &package, const std::string &forward, DeviceBackend &device);

  DeviceBackend &device() const { return device_; }
  const RecurrenceDesc &forwardDesc() const { return fwd_; }
  const RecurrenceDesc *backwardDesc() const { return bwd_; }

  // The planner's choice (Planner.h); with a lane dimension it also picks the lanes per channel
  // (Plan::lanes) by the same cost model, among the powers of two up to 32 that divide the
  // dimension's size and leave at most kMaxStateRegisters floats of state per thread. `lanes`
  // forces that choice for both directions (a CudaError if it does not divide the size); without
  // it, a pair's forward gets the lanes fastest for its own kernels (Plan::forwardLanes). `stash`
  // forces the chunked kernels' stash on or off where they have one (Plan::stash). `passes`: the
  // kernels the plan is for; with Passes::Forward it weighs the forward's kernels alone and writes
  // no checkpoints.
  Plan plan(const Shape &shape, std::optional<Strategy> strategy = {}, std::optional<int64_t> chunk = {},
            std::optional<int64_t> lanes = {}, std::optional<bool> stash = {},
            Passes passes = Passes::ForwardAndBackward) const;
  // Per-step outputs summed over channels added atomically in the plans made from now on
  // (Plan::atomicSums): faster where many warps add to an element (linear attention's k.grad with
  // 16 lanes per channel), at the price of bits that vary from run to run. Off by default.
  void allowAtomicSums(bool allow) { atomicSums_ = allow; }
  // The values of the manifest's formula variables ($B, $T, $L, $NC, $LANES, $STASH, $ATOMIC, dimension sizes) for a
  // call; a CudaError names a missing, unknown or out-of-range size.
  Variables variables(const Shape &shape, const Plan &plan) const;
  // The size in bytes of a buffer of the forward or backward.
  size_t bytes(const BufferDesc &buffer, const Shape &shape, const Plan &plan) const;

  // The forward runs plan.forwardPlan() (the forward's own lanes, Plan::forwardLanes), the
  // backward the pair's lanes; both the same strategy, chunk length and stash.
  void forward(const Shape &shape, const Plan &plan, const BufferMap &buffers, Stream stream = 0);
  void backward(const Shape &shape, const Plan &plan, const BufferMap &buffers, Stream stream = 0);

 private:
  void run(const RecurrenceDesc &rec, const Shape &shape, const Plan &plan, const BufferMap &buffers, Stream stream);
  // The launches for batch elements [first, first + slice.batch) of a call of `batch` elements.
  void runSlice(const RecurrenceDesc &rec, const Shape &slice, int64_t first, int64_t batch, const Plan &plan,
                const BufferMap &buffers, Stream stream);
  // What the planner is told about a call at `shape` with `lanes` threads per channel, running
  // the forward and `bwd` (null: the forward alone).
  PlanRequest planRequest(const Shape &shape, int64_t lanes, std::optional<Strategy> strategy,
                          std::optional<int64_t> chunk, std::optional<bool> stash, const RecurrenceDesc *bwd) const;
  LoadedModule &module(const RecurrenceDesc &rec, const Variables &vars);
  DevicePtr resolve(const RecurrenceDesc &rec, const BufferDesc &buffer, const BufferMap &given, const Variables &vars);

  DeviceBackend &device_;
  const RecurrenceDesc &fwd_;
  const RecurrenceDesc *bwd_ = nullptr;
  std::map<std::string, std::unique_ptr<LoadedModule>> modules_;  // by source file and defines
  std::map<std::string, DeviceBuffer> scratch_;                  // by buffer name
  mutable std::map<std::string, Plan> plans_;                    // by plan()'s arguments
  bool atomicSums_ = false;
};

}  // namespace scanforge::cuda
