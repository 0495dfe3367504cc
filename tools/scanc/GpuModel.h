// `scanc --gpu-model FILE --shape b=64,t=4096,d=1024 [--arch sm_90]`: the performance model's
// report for every recurrence of FILE, without a GPU. Per kernel of the plan the runtime picks:
// strategy (or the one forced), grid, registers, occupancy, bytes moved vs ideal, sectors per request, instructions
// per byte, the binding limit and the predicted time; per call the predicted fraction of copy
// bandwidth for the forward, the backward and both. Every number from the model says "predicted".
// With `--predictions FILE` the per-call predictions are also added to FILE (tools/common/Predictions.h),
// which scan-gpu-bench prints beside its measurements.
#pragma once

#include <string>

#include "compiler/api/Scanforge.h"
#include "tools/common/ForcedPlan.h"

namespace scanforge::tools {

// Returns scanc's exit code: 0, 1 for a user error (bad shape or arch, missing tools), 2 for a bug.
// `gpu`: the device predicted for, "h100" or "h200" (cuda::deviceSpecNamed), of architecture `arch`.
// `forced`: the plan to predict instead of the planner's (--strategy, --chunk, --lanes).
int gpuModel(const std::string &path, const std::string &shape, const std::string &arch, const std::string &gpu,
             const std::string &predictions, const ForcedPlan &forced, const CompileOptions &compile);

}  // namespace scanforge::tools
