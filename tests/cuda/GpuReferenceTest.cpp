// On a GPU: every model (both directions, f32 and bf16) and the edge-case recurrences, compiled
// by NVRTC and run on the device, against the float64 reference interpreter, with the shapes,
// plans and bounds of ReferenceCheck.h. Also: a broken launch names kernel, shapes and CUDA error.
#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaError.h"
#include "tests/cuda/ReferenceCheck.h"

namespace scanforge::test {
namespace {

class OnGpu : public ::testing::TestWithParam<ModelVariant> {};

TEST_P(OnGpu, MatchesReference) {
  auto compiled = compileReference(GetParam().source, GetParam().name + ".scan");
  ASSERT_TRUE(compiled);
  cuda::CudaBackend gpu;
  ErrorSummary summary;
  checkAgainstReference(*compiled->module, gpu, summary);
  std::cout << "[ gpu ] " << GetParam().name << " on " << gpu.describe() << ": " << summary.describe() << "\n";
}

INSTANTIATE_TEST_SUITE_P(Models, OnGpu, ::testing::ValuesIn(modelVariants()), variantName);
INSTANTIATE_TEST_SUITE_P(EdgeCases, OnGpu, ::testing::ValuesIn(edgeRecurrences()), variantName);

TEST(OnGpuErrors, LaunchErrorsNameKernelShapesAndCudaError) {
  auto compiled = compileReference(readModel("mingru"), "mingru.scan");
  ASSERT_TRUE(compiled);
  nlohmann::json manifest = manifestOf(*compiled->module);
  manifest["recurrences"][0]["strategies"]["sequential"][0]["block"] = 2048;
  cuda::KernelPackage package = cuda::KernelPackage::fromJson(manifest, sourcesOf(*compiled->module));
  cuda::CudaBackend gpu;
  cuda::RecurrenceRunner runner(package, "mingru", gpu);
  cuda::Shape shape{2, 5, {{"d", 3}}};
  cuda::Plan plan = runner.plan(shape);
  std::map<std::string, cuda::DeviceBuffer> owned;
  cuda::BufferMap buffers;
  for (const char *name : {"k", "u", "h"}) {
    owned[name] = cuda::DeviceBuffer(gpu, runner.bytes(*runner.forwardDesc().buffer(name), shape, plan));
    buffers[name] = owned[name].get();
  }
  try {
    runner.forward(shape, plan, buffers);
    gpu.synchronize(0);
    FAIL() << "the launch did not fail";
  } catch (const cuda::CudaError &e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind("launching sf_mingru_seq of mingru (B=2 T=5 d=3; sequential, L=5; grid 1x2x1, block 2048", 0), 0)
        << what;
    EXPECT_NE(what.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace scanforge::test
