// Every generated kernel of every model in models/, forward and backward, both directions, f32
// and bf16, compiles with NVRTC and assembles with ptxas without spilling a byte (register
// dimensions of 16: Mamba's state size; and linear attention's head sizes 64 and 128 with the lanes
// the runner plans): for sm_90 (H100, the target the planner and the model are tuned for) in every
// variant, for sm_80 (A100) in the variant that holds the most per thread (one lane, the stash on).
// Registers per kernel are printed.
#include <cstdio>
#include <cstring>
#include <set>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Nvrtc.h"
#include "runtime/cuda/RecurrenceRunner.h"
#include "tests/cuda/CudaTestUtil.h"

namespace scanforge::test {
namespace {

constexpr int kRegisterSize = 16;

struct KernelStats {
  std::string kernel;
  int registers = -1, stackBytes = -1, spillStores = -1, spillLoads = -1;
};

std::string runPtxas(const std::string &ptx, const std::string &arch, int &status) {
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  std::filesystem::path file = dir / ("scanforge-ptxas-" + std::to_string(::getpid()) + ".ptx");
  std::ofstream(file) << ptx;
  std::string command = std::string(SCANFORGE_PTXAS) + " -arch=" + arch + " -v " + file.string() + " -o /dev/null 2>&1";
  std::string output;
  FILE *pipe = popen(command.c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  status = pclose(pipe);
  std::filesystem::remove(file);
  return output;
}

// ptxas -v prints, per kernel: "Compiling entry function 'k' for 'sm_90'", then "N bytes stack
// frame, S bytes spill stores, L bytes spill loads" and "Used R registers".
std::vector<KernelStats> parse(const std::string &log) {
  std::vector<KernelStats> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (size_t at = line.find("Compiling entry function '"); at != std::string::npos) {
      size_t begin = at + std::strlen("Compiling entry function '");
      out.push_back({line.substr(begin, line.find('\'', begin) - begin)});
    } else if (out.empty()) {
      continue;
    } else if (size_t at = line.find("bytes stack frame"); at != std::string::npos) {
      std::sscanf(line.c_str(), " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &out.back().stackBytes,
                  &out.back().spillStores, &out.back().spillLoads);
    } else if (size_t at = line.find("Used "); at != std::string::npos) {
      std::sscanf(line.c_str() + at, "Used %d registers", &out.back().registers);
    }
  }
  return out;
}

// Assembles every kernel of `rec` for these architectures with these macro values; expects no spill.
void expectNoSpills(const cuda::Nvrtc &nvrtc, const cuda::RecurrenceDesc &rec, const std::map<std::string, int64_t> &values,
                    const std::vector<std::string> &archs = {"sm_80", "sm_90"}) {
  std::vector<std::string> defines;
  std::string sizes;
  for (auto &[macro, value] : values) {
    defines.push_back("-D" + macro + "=" + std::to_string(value));
    sizes += " " + macro + "=" + std::to_string(value);
  }
  std::set<std::string> kernels;
  for (const cuda::LaunchDesc &l : rec.sequential) kernels.insert(l.kernel);
  for (const cuda::LaunchDesc &l : rec.chunked) kernels.insert(l.kernel);
  for (const std::string &arch : archs) {
    SCOPED_TRACE(rec.file + " for " + arch + sizes);
    std::string ptx;
    ASSERT_NO_THROW(ptx = nvrtc.compile(rec.source, rec.file, arch, defines, cuda::Nvrtc::Output::Ptx));
    int status = 0;
    std::string log = runPtxas(ptx, arch, status);
    ASSERT_EQ(status, 0) << log;
    std::vector<KernelStats> stats = parse(log);
    EXPECT_EQ(stats.size(), kernels.size()) << log;
    for (const KernelStats &k : stats) {
      EXPECT_TRUE(kernels.count(k.kernel)) << k.kernel;
      std::cout << "[ ptxas ] " << arch << sizes << " " << k.kernel << ": " << k.registers << " registers, " << k.stackBytes
                << " bytes stack, " << k.spillStores << "+" << k.spillLoads << " bytes spilled\n";
      EXPECT_EQ(k.spillStores, 0) << k.kernel;
      EXPECT_EQ(k.spillLoads, 0) << k.kernel;
      EXPECT_GT(k.registers, 0) << k.kernel << ": ptxas printed no register count";
    }
  }
}

const cuda::Nvrtc *nvrtcOrNull(std::string &why) {
  try {
    return &cuda::Nvrtc::get();
  } catch (const cuda::CudaUnavailable &e) {
    why = e.what();
    return nullptr;
  }
}

class Ptxas : public ::testing::TestWithParam<ModelVariant> {};

// Register dimensions of 16, held whole by each thread (1 lane) and, for a lane dimension, also
// dealt to 16 lanes; the kernels with and without their stash; per-step sums over channels in rows
// (the default), and added atomically where a thread holds the most. sm_80 only there too (see the
// top of this file): each NVRTC compile and ptxas run of the selective SSM takes seconds.
TEST_P(Ptxas, EveryKernelAssemblesWithoutSpills) {
  std::string why;
  const cuda::Nvrtc *nvrtc = nvrtcOrNull(why);
  if (!nvrtc) GTEST_SKIP() << "[SKIP] " << why;
  auto compiled = compileReference(GetParam().source, GetParam().name + ".scan");
  ASSERT_TRUE(compiled);
  for (const cuda::RecurrenceDesc &rec : kernelsOf(*compiled->module))
    for (int64_t lanes : rec.laneDim.empty() ? std::vector<int64_t>{1} : std::vector<int64_t>{1, kRegisterSize})
      for (int64_t stash : rec.defines.count(cuda::kStashDefine) ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0}) {
        bool heaviest = lanes == 1 && (stash == 1 || !rec.defines.count(cuda::kStashDefine));
        for (int64_t atomic : heaviest && rec.defines.count(cuda::kAtomicSumsDefine) ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{0}) {
          std::map<std::string, int64_t> values;
          for (auto &[macro, formula] : rec.defines)
            values[macro] = formula == cuda::kLanesVariable        ? lanes
                            : formula == cuda::kStashVariable      ? stash
                            : formula == cuda::kAtomicSumsVariable ? atomic
                                                                   : kRegisterSize;
          expectNoSpills(*nvrtc, rec, values, heaviest ? std::vector<std::string>{"sm_80", "sm_90"} : std::vector<std::string>{"sm_90"});
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Models, Ptxas, ::testing::ValuesIn(modelVariants()), variantName);

// Linear attention at the head sizes people use (k = 64 and 128), with the lanes the runner plans
// at B=8 T=4096 e=1024: a matrix state per channel held across lanes, no spill (whole in one
// thread, k = 128 spills hundreds of bytes).
TEST(PtxasHeadSizes, LinearAttentionAt64And128WithThePlannedLanes) {
  std::string why;
  const cuda::Nvrtc *nvrtc = nvrtcOrNull(why);
  if (!nvrtc) GTEST_SKIP() << "[SKIP] " << why;
  auto compiled = compileReference(readModel("linear_attention"), "linear_attention.scan");
  ASSERT_TRUE(compiled);
  cuda::KernelPackage package = packageOf(*compiled->module);
  std::unique_ptr<EmulatedBackend> device = emulatedBackend();
  cuda::RecurrenceRunner runner(package, "linear_attention", *device);
  for (int64_t k : {64, 128}) {
    cuda::Shape shape{8, 4096, {{"e", 1024}, {"k", k}}};
    cuda::Plan plan = runner.plan(shape);
    cuda::Variables vars = runner.variables(shape, plan);
    for (const cuda::RecurrenceDesc *rec : {&runner.forwardDesc(), runner.backwardDesc()}) {
      std::map<std::string, int64_t> values;
      for (auto &[macro, formula] : rec->defines) values[macro] = cuda::evaluate(formula, vars);
      expectNoSpills(*nvrtc, *rec, values);
    }
  }
}

}  // namespace
}  // namespace scanforge::test
