// Calibration of the performance model against the only GPU measurements the project has: a
// hand-written minGRU probe (one thread per channel walking t) timed on an H100, 2026-11-22. Its
// kernels run here through the same instruments as generated kernels — NVRTC + SASS facts, the
// concurrent emulator's traffic at a reduced shape (D = 1024 kept, so the coalescing is the
// same; bytes per element do not depend on B or T for these kernels) scaled to the timed shape,
// and the predictor — and the predicted fractions of copy bandwidth must be within 10 points of
// the measured ones. The probe's source is read at test time (SCANFORGE_PROBE), never copied.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "tools/gpu/emulator/EmulatedBackend.h"
#include "tools/gpu/model/Predictor.h"

namespace scanforge::gpu {
namespace {

constexpr unsigned kBlock = 128;  // the probe's launches
constexpr int64_t kReducedBatch = 1, kReducedSteps = 64;

// The kernels: the text before main(), without #include lines and the error-check macro.
std::string probeKernels() {
  std::ifstream in(SCANFORGE_PROBE);
  std::string kernels, line;
  while (std::getline(in, line) && line.rfind("int main(", 0) != 0)
    if (line.rfind("#include", 0) != 0 && line.rfind("#define CK", 0) != 0) kernels += line + "\n";
  return kernels;
}

struct Kernel {
  std::string name;
  unsigned channelsPerThread;  // 4 for the float4 forward
  int arrays;                  // k, u, h, dh, dk, du: pointers before T, D, B
  double idealElementBytes;    // bytes per element the measurement counted: forward 3N, backward 6N (reads h)
};
const Kernel kForwardScalar{"fwd1<16>", 1, 3, 12}, kForwardVector{"fwd<8>", 4, 3, 12}, kBackward{"bwd<8>", 1, 6, 24};

struct Measured {
  int64_t b, t, d;
  const Kernel *kernel;
  double low, high;  // percent of copy bandwidth
};
// Measured on an H100, 2026-11-22 (copy bandwidth 2.84-2.86 TB/s); the float4 forward "35-38% at B=64".
const Measured kMeasured[] = {
    {64, 4096, 1024, &kForwardScalar, 91.4, 91.4}, {64, 4096, 1024, &kBackward, 92.3, 92.3},
    {64, 512, 1024, &kForwardScalar, 84.9, 84.9},  {64, 512, 1024, &kBackward, 89.9, 89.9},
    {64, 4096, 1024, &kForwardVector, 35, 38},     {64, 512, 1024, &kForwardVector, 35, 38},
    {8, 16384, 1024, &kForwardVector, 4.8, 4.8},
};
constexpr double kTolerancePoints = 10;

std::string range(const Measured &m) {
  char text[32];
  std::snprintf(text, sizeof text, m.high > m.low ? "%.0f-%.0f" : "%.1f", m.low, m.high);
  return text;
}

cuda::LaunchConfig launchOf(const Kernel &k, int64_t b, int64_t d) {
  cuda::LaunchConfig c;
  c.grid[0] = static_cast<unsigned>((b * d / k.channelsPerThread + kBlock - 1) / kBlock);
  c.block = kBlock;
  return c;
}

// Each kernel once at B = 1, T = 64, D = 1024 on the emulator: its traffic per source line.
std::map<std::string, KernelTraffic> emulatedTraffic(const std::string &source) {
  EmulatorOptions options;
  options.cacheDir = SCANFORGE_EMULATION_CACHE;
  EmulatedBackend device(options);
  std::unique_ptr<cuda::LoadedModule> module =
      device.load({"mingru_probe.cu", source, {}, {{"fwd1<16>", 6}, {"fwd<8>", 6}, {"bwd<8>", 9}}});
  const int64_t n = kReducedBatch * kReducedSteps * 1024;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-2, 2);
  std::vector<cuda::DeviceBuffer> buffers;
  std::vector<cuda::DevicePtr> ptrs;
  for (int i = 0; i < 6; ++i) {  // k, u, h, dh, dk, du
    std::vector<float> values(n);
    for (float &v : values) v = dist(gen);
    buffers.emplace_back(device, n * sizeof(float));
    device.upload(buffers.back().get(), values.data(), n * sizeof(float));
    ptrs.push_back(buffers.back().get());
  }
  int t = kReducedSteps, b = kReducedBatch;
  for (const Kernel *k : {&kForwardScalar, &kForwardVector, &kBackward}) {
    int d = 1024 / static_cast<int>(k->channelsPerThread);
    std::vector<cuda::DevicePtr> bound = k == &kBackward ? ptrs : std::vector<cuda::DevicePtr>{ptrs[0], ptrs[1], ptrs[2]};
    std::vector<void *> args;
    for (cuda::DevicePtr &p : bound) args.push_back(&p);
    for (int *i : {&t, &d, &b}) args.push_back(i);
    module->launch(k->name, launchOf(*k, kReducedBatch, 1024), args.data(), 0);
  }
  std::map<std::string, KernelTraffic> byKernel;
  for (KernelTraffic &k : device.traffic()) byKernel[k.kernel] = std::move(k);
  return byKernel;
}

class Calibration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    source_ = new std::string(probeKernels());
    std::string why;
    std::vector<KernelSass> facts = sassFacts(*source_, "mingru_probe.cu", "sm_90", {},
                                              {"fwd1<16>", "fwd<8>", "bwd<8>"}, *BinaryTools::find(why));
    sass_ = new std::map<std::string, KernelSass>;
    for (KernelSass &k : facts) (*sass_)[k.kernel] = std::move(k);
    traffic_ = new std::map<std::string, KernelTraffic>(emulatedTraffic(*source_));
  }
  static std::string *source_;
  static std::map<std::string, KernelSass> *sass_;
  static std::map<std::string, KernelTraffic> *traffic_;
};
std::string *Calibration::source_;
std::map<std::string, KernelSass> *Calibration::sass_;
std::map<std::string, KernelTraffic> *Calibration::traffic_;

TEST_F(Calibration, TheInstrumentsSeeTheProbeAsWritten) {
  ASSERT_EQ(traffic_->size(), 3u);
  // Scalar kernels: a warp's 32 lanes read 128 contiguous bytes (4 sectors); float4: 512 (16).
  EXPECT_DOUBLE_EQ(traffic_->at("fwd1<16>").sectorsPerRequest(), 4);
  EXPECT_DOUBLE_EQ(traffic_->at("bwd<8>").sectorEfficiency(), 1);
  EXPECT_DOUBLE_EQ(traffic_->at("fwd<8>").sectorsPerRequest(), 16);
  // The prefetch loops: 16 steps x (2 loads + 1 store) of 4 bytes; 8 steps of float4.
  const KernelSass &scalar = sass_->at("fwd1<16>"), &vector = sass_->at("fwd<8>"), &backward = sass_->at("bwd<8>");
  ASSERT_TRUE(scalar.loop && vector.loop && backward.loop);
  EXPECT_EQ(scalar.loop->loadWidths, (std::map<unsigned, unsigned>{{4, 32}}));
  EXPECT_EQ(scalar.loop->storeWidths, (std::map<unsigned, unsigned>{{4, 16}}));
  EXPECT_EQ(vector.loop->loadWidths, (std::map<unsigned, unsigned>{{16, 16}}));
  EXPECT_EQ(vector.loop->storeWidths, (std::map<unsigned, unsigned>{{16, 8}}));
  EXPECT_EQ(backward.loop->globalBytes(), 8u * 6 * 4);
  for (const KernelSass *k : {&scalar, &vector, &backward}) EXPECT_EQ(k->spillStoreBytes + k->stackBytes, 0u) << k->kernel;
}

TEST_F(Calibration, PredictionsWithinTenPointsOfTheH100) {
  const DeviceSpec &d = h100();
  std::cout << "| B x T x D | kernel | measured % of copy | predicted % | bound | registers | blocks/SM |\n";
  for (const Measured &m : kMeasured) {
    const Kernel &k = *m.kernel;
    double scale = static_cast<double>(m.b * m.t) / static_cast<double>(kReducedBatch * kReducedSteps);
    KernelPrediction p =
        predictKernel(d, sass_->at(k.name), launchOf(k, m.b, m.d), scaleTraffic(traffic_->at(k.name), scale));
    double ideal = k.idealElementBytes * static_cast<double>(m.b * m.t * m.d);
    double predicted = 100 * fractionOfCopy(d, ideal, callSeconds(d, {p}));
    char row[160];
    std::snprintf(row, sizeof row, "| %lldx%lldx%lld | %s | %s | %.1f | %s | %u | %u |\n", static_cast<long long>(m.b),
                  static_cast<long long>(m.t), static_cast<long long>(m.d), k.name.c_str(), range(m).c_str(), predicted,
                  p.bound, sass_->at(k.name).registers, p.occupancy.blocksPerSm);
    std::cout << row;
    double off = predicted < m.low ? m.low - predicted : predicted > m.high ? predicted - m.high : 0;
    EXPECT_LE(off, kTolerancePoints) << k.name << " at B=" << m.b << " T=" << m.t << " D=" << m.d << ": predicted "
                                     << predicted << "%, measured " << m.low << "-" << m.high << "%";
  }
}

}  // namespace
}  // namespace scanforge::gpu

int main(int argc, char **argv) {
  if (!std::filesystem::exists(SCANFORGE_PROBE)) {
    std::cout << "[SKIP] the H100 probe " << SCANFORGE_PROBE << " is absent (set SCANFORGE_PROBE)\n";
    return 77;
  }
  std::string why;
  if (!scanforge::gpu::BinaryTools::find(why)) {
    std::cout << "[SKIP] " << why << "\n";
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
