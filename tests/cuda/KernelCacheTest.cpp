// The kernel cache: memory and disk hits, corrupt and truncated entries rebuilt, atomic writes,
// processes sharing a directory, and NVRTC through the cache (NVRTC needs no GPU).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/KernelCache.h"
#include "runtime/cuda/Nvrtc.h"

namespace scanforge::cuda {
namespace {

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("scanforge-cache-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string key() const { return KernelCache::key("__global__ void k() {}", {"-DN=1"}, "sm_90", "13.0"); }
  // A compiler that counts its calls.
  std::function<std::string()> compiler(std::string payload) {
    return [this, payload] {
      ++compiles_;
      return payload;
    };
  }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto &e : std::filesystem::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    return out;
  }

  std::filesystem::path dir_;
  int compiles_ = 0;
};

TEST_F(KernelCacheTest, KeyCoversSourceOptionsArchAndCompiler) {
  std::string k = KernelCache::key("src", {"-DN=1"}, "sm_90", "13.0");
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, KernelCache::key("src", {"-DN=1"}, "sm_90", "13.0"));
  EXPECT_NE(k, KernelCache::key("src2", {"-DN=1"}, "sm_90", "13.0"));
  EXPECT_NE(k, KernelCache::key("src", {"-DN=2"}, "sm_90", "13.0"));
  EXPECT_NE(k, KernelCache::key("src", {"-DN=1"}, "sm_80", "13.0"));
  EXPECT_NE(k, KernelCache::key("src", {"-DN=1"}, "sm_90", "12.4"));
  EXPECT_NE(KernelCache::key("ab", {"c"}, "sm_90", "1"), KernelCache::key("a", {"bc"}, "sm_90", "1"));
}

TEST_F(KernelCacheTest, MemoryThenDiskHits) {
  {
    KernelCache cache(dir_);
    EXPECT_EQ(*cache.get(key(), compiler("binary-1")), "binary-1");
    EXPECT_EQ(*cache.get(key(), compiler("other")), "binary-1");
    EXPECT_EQ(cache.stats().compiles, 1);
    EXPECT_EQ(cache.stats().memoryHits, 1);
  }
  KernelCache again(dir_);  // a new process, in effect
  EXPECT_EQ(*again.get(key(), compiler("other")), "binary-1");
  EXPECT_EQ(again.stats().diskHits, 1);
  EXPECT_EQ(compiles_, 1);
}

TEST_F(KernelCacheTest, CorruptEntryIsDetectedAndRebuilt) {
  KernelCache(dir_).get(key(), compiler("the original payload"));
  std::filesystem::path entry = KernelCache(dir_).entryPath(key());
  {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('X');  // one flipped byte of the payload
  }
  KernelCache cache(dir_);
  EXPECT_EQ(*cache.get(key(), compiler("rebuilt")), "rebuilt");
  EXPECT_EQ(cache.stats().corrupt, 1);
  EXPECT_EQ(compiles_, 2);
  EXPECT_EQ(*KernelCache(dir_).get(key(), compiler("unused")), "rebuilt");  // the rewritten entry is whole
}

TEST_F(KernelCacheTest, TruncatedEntryIsDetectedAndRebuilt) {
  KernelCache(dir_).get(key(), compiler(std::string(10000, 'p')));
  std::filesystem::path entry = KernelCache(dir_).entryPath(key());
  std::filesystem::resize_file(entry, std::filesystem::file_size(entry) / 2);
  KernelCache cache(dir_);
  EXPECT_EQ(*cache.get(key(), compiler("rebuilt")), "rebuilt");
  EXPECT_EQ(cache.stats().corrupt, 1);
}

TEST_F(KernelCacheTest, WritesAtomicallyAndIgnoresLeftoverTemporaries) {
  std::filesystem::create_directories(dir_);
  // A writer that died halfway leaves a temporary; readers never look at it.
  std::ofstream(dir_ / (key() + ".tmp.99999.0")) << "half an entry";
  KernelCache cache(dir_);
  EXPECT_EQ(*cache.get(key(), compiler("payload")), "payload");
  EXPECT_TRUE(std::filesystem::exists(cache.entryPath(key())));
  for (const std::string &f : files())
    EXPECT_TRUE(f == key() + ".bin" || f == key() + ".tmp.99999.0") << "stray file " << f;
}

TEST_F(KernelCacheTest, ProcessesShareADirectory) {
  const int kProcesses = 4;
  const std::string payload(1 << 20, 'z');  // large enough that writes overlap
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      KernelCache cache(dir_);
      bool ok = true;
      for (int round = 0; round < 20; ++round) ok = ok && *cache.get(key(), [&] { return payload; }) == payload;
      KernelCache fresh(dir_);
      ok = ok && *fresh.get(key(), [&] { return payload; }) == payload && fresh.stats().corrupt == 0;
      _exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  KernelCache cache(dir_);
  EXPECT_EQ(*cache.get(key(), compiler("not needed")), payload);
  EXPECT_EQ(cache.stats().diskHits, 1);
  EXPECT_EQ(cache.stats().corrupt, 0);
}

TEST_F(KernelCacheTest, UnwritableDirectoryFallsBackToMemory) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ / "file") << "not a directory";
  KernelCache cache(dir_ / "file" / "sub");
  EXPECT_EQ(*cache.get(key(), compiler("payload")), "payload");
  EXPECT_EQ(*cache.get(key(), compiler("payload")), "payload");
  EXPECT_EQ(cache.stats().writeFailures, 1);
  EXPECT_EQ(compiles_, 1);
}

TEST_F(KernelCacheTest, NvrtcThroughTheCache) {
  const Nvrtc *nvrtc = nullptr;
  try {
    nvrtc = &Nvrtc::get();
  } catch (const CudaUnavailable &e) {
    GTEST_SKIP() << "[SKIP] " << e.what();
  }
  const std::string source = "extern \"C\" __global__ void scale(float *x, int n) {\n"
                             "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] *= SCALE;\n}\n";
  std::vector<std::string> options = {"-DSCALE=2.0f"};
  KernelCache cache(dir_);
  auto compile = [&](const std::string &arch) {
    return cache.get(KernelCache::key(source, options, arch, nvrtc->version()),
                     [&] { return nvrtc->compile(source, "scale.cu", arch, options, Nvrtc::Output::Cubin); });
  };
  std::shared_ptr<const std::string> cubin = compile("sm_90");
  EXPECT_EQ(cubin->compare(0, 4, "\x7f" "ELF"), 0) << "a cubin is an ELF file";
  EXPECT_EQ(compile("sm_90"), cubin);
  compile("sm_80");
  EXPECT_EQ(cache.stats().compiles, 2);
  EXPECT_EQ(KernelCache(dir_).get(KernelCache::key(source, options, "sm_80", nvrtc->version()), compiler("x"))->substr(0, 4),
            "\x7f" "ELF");

  std::string error;
  try {
    nvrtc->compile("__global__ void broken( {}", "broken.cu", "sm_90", {}, Nvrtc::Output::Ptx);
  } catch (const CudaError &e) {
    error = e.what();
  }
  EXPECT_NE(error.find("NVRTC " + nvrtc->version() + " compiling broken.cu for sm_90 failed"), std::string::npos) << error;
  EXPECT_NE(error.find("broken.cu(1)"), std::string::npos) << "the log names the line: " << error;
}

}  // namespace
}  // namespace scanforge::cuda
