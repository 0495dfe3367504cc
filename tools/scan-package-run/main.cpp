// scan-package-run: checks a CUDA kernel package (written by `scanc --emit-package`) on this
// machine's GPU against its golden test vectors. Needs no MLIR: it builds in the runtime-only
// preset. Exit codes: 0 every golden passes, 1 a failure or an error, 77 no CUDA driver or GPU
// (printed as "[SKIP] no CUDA driver/GPU: ...", the skip code ctest is told about).
#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Goldens.h"
#include "tools/common/OpenGpu.h"

namespace {

using namespace scanforge::cuda;

constexpr int kPassed = 0, kFailed = 1;

int run(int argc, char **argv) {
  CLI::App app{"scan-package-run: run a kernel package's golden test vectors on the GPU", "scan-package-run"};
  std::string dir, only, cacheDir = KernelCache::defaultDirectory().string();
  int device = 0;
  app.add_option("package", dir, "the package directory (manifest.json, *.cu, goldens/)")->required();
  app.add_option("--recurrence", only, "only the goldens of this forward recurrence");
  app.add_option("--device", device, "CUDA device ordinal (default 0)");
  app.add_option("--cache", cacheDir, "kernel cache directory (default: $SCANFORGE_KERNEL_CACHE or ~/.cache/scanforge/kernels)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? kPassed : kFailed;
  }

  KernelPackage package = KernelPackage::load(dir);
  std::vector<Golden> goldens = loadGoldens(dir);
  if (goldens.empty()) {
    std::cerr << "scan-package-run: error: " << dir << "/goldens holds no golden test vectors\n";
    return kFailed;
  }
  std::unique_ptr<CudaBackend> gpu = scanforge::tools::openGpuOrSkip(device, cacheDir);
  if (!gpu) return scanforge::tools::kNoGpuExit;
  std::cout << "device: " << gpu->describe() << "\n";

  int checked = 0, failed = 0;
  std::map<std::string, std::unique_ptr<RecurrenceRunner>> runners;
  for (const Golden &golden : goldens) {
    if (!only.empty() && golden.forward != only) continue;
    auto &runner = runners[golden.forward];
    if (!runner) runner = std::make_unique<RecurrenceRunner>(package, golden.forward, *gpu);
    for (const PlanChoice &choice : goldenPlans()) {
      Plan plan = choice.planFor(*runner, golden.shape);
      GoldenReport report = runGolden(*runner, golden, plan);
      ++checked;
      failed += !report.passed();
      double worst = 0;  // the largest error as a fraction of its bound
      for (const TensorCheck &c : report.checks) worst = std::max(worst, c.error / c.tolerance);
      std::cout << (report.passed() ? "PASS " : "FAIL ") << golden.forward << " " << golden.shape.describe() << " ["
                << choice.describe() << ": " << describe(plan) << "] worst error "
                << std::setprecision(2) << worst << " of its bound\n" << std::defaultfloat;
      for (const TensorCheck &c : report.checks)
        if (!c.passed() || !report.passed())
          std::cout << "  " << (c.passed() ? "ok   " : "FAIL ") << c.stage << " " << c.name << ": relative error "
                    << std::scientific << std::setprecision(2) << c.error << " (bound " << c.tolerance << ")\n"
                    << std::defaultfloat;
    }
  }
  if (checked == 0) {
    std::cerr << "scan-package-run: error: no golden of recurrence '" << only << "' in " << dir << "\n";
    return kFailed;
  }
  std::cout << (failed ? "FAILED: " : "passed: ") << checked - failed << " of " << checked << " golden runs on "
            << gpu->describe() << "\n";
  return failed ? kFailed : kPassed;
}

}  // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::cerr << "scan-package-run: error: " << e.what() << "\n";
    return kFailed;
  }
}
