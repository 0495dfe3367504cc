// --strategy, --chunk, --lanes, --stash, --atomic-sums: a plan the user forces instead of the
// planner's, for tools that time it (scan-gpu-bench) or predict it (scanc --gpu-model); the planner
// fills in the rest.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Planner.h"
#include "runtime/cuda/RecurrenceRunner.h"

namespace scanforge::tools {

struct ForcedPlan {
  std::optional<cuda::Strategy> strategy;
  std::optional<int64_t> chunk, lanes;  // lanes: only where a recurrence has a lane dimension
  std::optional<bool> stash;            // the kernels' stash, where they have one
  bool atomicSums = false;              // per-step sums over channels added atomically (Plan::atomicSums)
  bool any() const { return strategy || chunk || lanes || stash || atomicSums; }

  // The runner's plan at `shape` with what is forced (the lane count only for a recurrence with a
  // lane dimension; the others run with one lane); a CudaError names a forced value that cannot be.
  // Allows the runner atomic sums (RecurrenceRunner::allowAtomicSums) where they are forced.
  cuda::Plan planFor(cuda::RecurrenceRunner &runner, const cuda::Shape &shape) const {
    runner.allowAtomicSums(atomicSums);
    return runner.plan(shape, strategy, chunk, runner.forwardDesc().laneDim.empty() ? std::nullopt : lanes, stash);
  }
  // A predictions file (tools/common/Predictions.h) holds the planner's plans: a CudaError when
  // one is asked for with a forced plan.
  void refusePredictions(const std::string &predictionsFile) const {
    if (any() && !predictionsFile.empty())
      throw cuda::CudaError(
          "--predictions holds the planner's plans: leave it out with --strategy, --chunk, --lanes, --stash or --atomic-sums");
  }
};

// The options as parsed; `forced()` checks and converts them after CLI::App::parse.
class ForcedPlanOptions {
 public:
  // `what` says what the plan is forced for, e.g. "time every case" or "predict".
  ForcedPlanOptions(CLI::App &app, const std::string &what, CLI::Option *needs = nullptr) {
    auto *s = app.add_option("--strategy", strategy_, what + " with this strategy, sequential or chunked, instead of the planner's")
                  ->check(CLI::IsMember({"sequential", "chunked"}));
    chunk_ = app.add_option("--chunk", chunkSteps_, what + " with chunks (checkpoint intervals) of this many steps");
    lanes_ = app.add_option("--lanes", laneCount_,
                            what + " with this many threads per channel where a recurrence has a lane dimension "
                                   "(selective_ssm's n): a power of two up to 32 that divides it, instead of the planner's");
    auto *stash = app.add_option("--stash", stash_,
                                 what + " with the kernels' stash on or off (where they have one), instead of the planner's")
                      ->check(CLI::IsMember({"on", "off"}));
    auto *atomic = app.add_flag("--atomic-sums", atomicSums_,
                                what + " with per-step sums over channels (the selective SSM's B.grad) added atomically: "
                                       "no rows of partial sums, but bits that vary from run to run");
    if (needs)
      for (CLI::Option *o : {s, chunk_, lanes_, stash, atomic}) o->needs(needs);
  }

  ForcedPlan forced() const {
    ForcedPlan plan;
    if (!strategy_.empty()) plan.strategy = strategy_ == "chunked" ? cuda::Strategy::Chunked : cuda::Strategy::Sequential;
    if (chunk_->count()) {
      if (chunkSteps_ < 1) throw cuda::CudaError("--chunk must be at least 1, not " + std::to_string(chunkSteps_));
      plan.chunk = chunkSteps_;
    }
    if (lanes_->count()) plan.lanes = laneCount_;
    if (!stash_.empty()) plan.stash = stash_ == "on";
    plan.atomicSums = atomicSums_;
    return plan;
  }

 private:
  std::string strategy_, stash_;
  int64_t chunkSteps_ = 0, laneCount_ = 0;
  bool atomicSums_ = false;
  CLI::Option *chunk_ = nullptr, *lanes_ = nullptr;
};

}  // namespace scanforge::tools
