// Safetensors checkpoints: round trips, corrupt files, and bit-for-bit resumption of training.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/core/AdamW.h"
#include "runtime/core/Error.h"
#include "runtime/core/GradClip.h"
#include "runtime/core/LrSchedule.h"
#include "runtime/core/Ops.h"
#include "runtime/core/Safetensors.h"
#include "tests/runtime/GradCheck.h"

namespace scanforge::test {
namespace {

namespace fs = std::filesystem;

class Checkpoints : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("scanforge-ckpt-" + std::to_string(::getpid()) + "-" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string &name) const { return (dir_ / name).string(); }

  // A file with this exact header text and data bytes.
  std::string writeRaw(const std::string &header, const std::string &data, const std::string &name = "raw.safetensors") {
    std::ofstream out(path(name), std::ios::binary);
    uint64_t length = header.size();
    out.write(reinterpret_cast<const char *>(&length), 8);
    out << header << data;
    return path(name);
  }

  std::string loadError(const std::string &file) {
    try {
      loadCheckpoint(file);
    } catch (const RuntimeError &e) {
      return e.what();
    }
    ADD_FAILURE() << "expected loading " << file << " to fail";
    return "";
  }

  fs::path dir_;
};

std::string readBytes(const std::string &file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(Checkpoints, RoundTripIsBitExactForEveryDType) {
  Generator gen(1);
  Checkpoint ckpt;
  ckpt.tensors["w.f32"] = randomTensor({3, 5}, DType::F32, gen);
  ckpt.tensors["w.f64"] = randomTensor({2, 2, 2}, DType::F64, gen);
  ckpt.tensors["w.bf16"] = randomTensor({7}, DType::BF16, gen);
  ckpt.tensors["ids"] = Tensor::fromData<int64_t>({3}, {-1, 0, int64_t{1} << 40});
  ckpt.tensors["scalar"] = Tensor::full({}, 3.5, DType::F32);
  ckpt.tensors["empty"] = Tensor::zeros({0, 4}, DType::F32);
  ckpt.tensors["strided"] = randomTensor({4, 6}, DType::F32, gen).slice(1, 2, 3);
  ckpt.metadata = {{"step", "1200"}, {"note", "ünïcode ✓"}, {"rng", gen.state()}};
  saveCheckpoint(path("a.safetensors"), ckpt);

  Checkpoint back = loadCheckpoint(path("a.safetensors"));
  EXPECT_EQ(back.metadata, ckpt.metadata);
  ASSERT_EQ(back.tensors.size(), ckpt.tensors.size());
  for (const auto &[name, t] : ckpt.tensors) {
    const Tensor &u = back.tensors.at(name);
    EXPECT_EQ(u.dtype(), t.dtype()) << name;
    EXPECT_EQ(u.shape(), t.shape()) << name;
    Tensor c = t.contiguous();
    size_t bytes = static_cast<size_t>(t.numel()) * sizeOf(t.dtype());
    if (bytes) {
      EXPECT_EQ(std::memcmp(u.rawData(), c.rawData(), bytes), 0) << name;
    }
  }
  std::string file = readBytes(path("a.safetensors"));
  uint64_t headerLength;
  std::memcpy(&headerLength, file.data(), 8);
  EXPECT_EQ((8 + headerLength) % 8, 0u) << "data must start 8-byte aligned";
  EXPECT_EQ(file[8], '{');
}

TEST_F(Checkpoints, OverwritesAtomicallyWithoutLeavingTemporaries) {
  Checkpoint ckpt;
  ckpt.tensors["x"] = Tensor::full({2}, 1.0, DType::F32);
  saveCheckpoint(path("c.safetensors"), ckpt);
  ckpt.tensors["x"] = Tensor::full({2}, 2.0, DType::F32);
  saveCheckpoint(path("c.safetensors"), ckpt);
  EXPECT_EQ(loadCheckpoint(path("c.safetensors")).tensors.at("x").toDoubles(), (std::vector<double>{2, 2}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  std::string message;
  try {
    saveCheckpoint(path("missing-dir/c.safetensors"), ckpt);
  } catch (const RuntimeError &e) {
    message = e.what();
  }
  EXPECT_NE(message.find("cannot create"), std::string::npos) << message;
  ckpt.tensors["__metadata__"] = Tensor::zeros({1}, DType::F32);
  EXPECT_THROW(saveCheckpoint(path("d.safetensors"), ckpt), RuntimeError);
}

TEST_F(Checkpoints, CorruptFilesGiveClearErrors) {
  const std::string data8(8, '\0');
  auto tensor = [](const std::string &dtype, const std::string &shape, const std::string &offsets) {
    return "\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets;
  };
  struct Case {
    std::string header, data, expected;
  };
  std::vector<Case> cases = {
      {"{\"a\":{" + tensor("F32", "[2]", "[0,8]") + "}", data8, "not valid JSON"},
      {"[1, 2]", "", "must be a JSON object"},
      {"{\"a\":{" + tensor("F8_E4M3", "[8]", "[0,8]") + "}}", data8, "unknown dtype \"F8_E4M3\""},
      {"{\"a\":{" + tensor("F32", "[3]", "[0,8]") + "}}", data8, "is f32 [3] but its data_offsets [0,8] span 8 bytes"},
      {"{\"a\":{" + tensor("F32", "[-2]", "[0,8]") + "}}", data8, "non-negative integer"},
      {"{\"a\":{" + tensor("F32", "[2]", "[8,0]") + "}}", data8, "end < begin"},
      {"{\"a\":{" + tensor("F32", "[2]", "[0,8]") + "},\"b\":{" + tensor("F32", "[1]", "[4,8]") + "}}", data8,
       "overlap tensor"},
      {"{\"a\":{" + tensor("F32", "[1]", "[4,8]") + "}}", data8, "data bytes [0, 4) before tensor 'a' belong to no tensor"},
      {"{\"a\":{" + tensor("F32", "[1]", "[0,4]") + "}}", data8, "data bytes [4, 8) at the end of the file"},
      {"{\"a\":{" + tensor("F32", "[4]", "[0,16]") + "}}", data8, "beyond the data section's 8 bytes"},
      {"{\"a\":{" + tensor("F32", "[2]", "[0,8]") + ",\"extra\":1}}", data8, "unknown field 'extra'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", data8, "lacks the field 'data_offsets'"},
      {"{\"__metadata__\":{\"k\":3}}", "", "__metadata__ value of 'k' is not a string"},
      {"{\"a\":{" + tensor("F32", "[2.5]", "[0,8]") + "}}", data8, "non-negative integer"},
  };
  for (const Case &c : cases) {
    std::string message = loadError(writeRaw(c.header, c.data));
    EXPECT_NE(message.find(c.expected), std::string::npos) << "header " << c.header << "\nmessage: " << message;
    EXPECT_EQ(message.rfind("safetensors read '", 0), 0u) << message;
  }
}

TEST_F(Checkpoints, TruncatedAndMissingFiles) {
  Checkpoint ckpt;
  ckpt.tensors["x"] = Tensor::full({16}, 1.0, DType::F32);
  saveCheckpoint(path("good.safetensors"), ckpt);
  std::string good = readBytes(path("good.safetensors"));
  auto writeBytes = [&](const std::string &bytes) {
    std::ofstream(path("bad.safetensors"), std::ios::binary) << bytes;
    return path("bad.safetensors");
  };
  EXPECT_NE(loadError(writeBytes(good.substr(0, 5))).find("truncated: 5 bytes"), std::string::npos);
  EXPECT_NE(loadError(writeBytes(good.substr(0, 20))).find("truncated: the header length field says"), std::string::npos);
  EXPECT_NE(loadError(writeBytes(good.substr(0, good.size() - 4))).find("beyond the data section"), std::string::npos);
  std::string huge = good;
  huge[7] = '\x7f';  // a header length of ~2^63
  EXPECT_NE(loadError(writeBytes(huge)).find("100 MB limit"), std::string::npos);
  EXPECT_NE(loadError(path("nonexistent.safetensors")).find("cannot open the file"), std::string::npos);
}

// Random byte corruptions of a valid file either load or raise RuntimeError: never a crash (the
// CI build runs this under AddressSanitizer).
TEST_F(Checkpoints, RandomCorruptionNeverCrashes) {
  Generator gen(8);
  Checkpoint ckpt;
  ckpt.tensors["a"] = randomTensor({3, 4}, DType::F32, gen);
  ckpt.tensors["b"] = randomTensor({5}, DType::BF16, gen);
  ckpt.metadata["k"] = "v";
  saveCheckpoint(path("good.safetensors"), ckpt);
  std::string good = readBytes(path("good.safetensors"));
  int failures = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = good;
    int64_t edits = 1 + gen.uniformInt(3);
    for (int64_t e = 0; e < edits; ++e)
      bad[static_cast<size_t>(gen.uniformInt(static_cast<int64_t>(bad.size())))] = static_cast<char>(gen.uniformInt(256));
    if (trial % 5 == 0) bad.resize(static_cast<size_t>(gen.uniformInt(static_cast<int64_t>(bad.size()))));
    std::ofstream(path("bad.safetensors"), std::ios::binary | std::ios::trunc) << bad;
    try {
      loadCheckpoint(path("bad.safetensors"));
    } catch (const RuntimeError &) {
      ++failures;
    }
  }
  EXPECT_GT(failures, 50) << "most corruptions of the header or size must be detected";
}

// A tiny training loop with dropout (so the generator matters), AdamW with weight decay, clipping
// and a schedule. Interrupting it after 3 steps and resuming from a checkpoint into freshly built
// objects must give bit-identical parameters after 7 steps.
struct TinyRun {
  Variable w, b;
  AdamW opt;
  Generator gen;
  WarmupCosineSchedule schedule{1e-2, 1e-3, 2, 7};
  int64_t step = 0;

  explicit TinyRun(uint64_t initSeed)
      : w(makeInit(initSeed, {6, 4}), true), b(makeInit(initSeed + 1, {6}), true),
        opt({{{{"w", w}}, 0.1}, {{{"b", b}}, 0.0}}), gen(initSeed + 2) {}

  static Tensor makeInit(uint64_t seed, const Shape &shape) {
    Generator g(seed);
    Tensor t = Tensor::empty(shape, DType::F32);
    fillNormal(t, 0, 0.5, g);
    return t;
  }

  void train(int64_t until) {
    for (; step < until; ++step) {
      Tensor x = Tensor::empty({8, 4}, DType::F32);
      fillNormal(x, 0, 1, gen);
      Tensor targets = Tensor::empty({8}, DType::I64);
      for (int64_t i = 0; i < 8; ++i) targets.data<int64_t>()[i] = gen.uniformInt(6);
      Variable h = dropout(Variable(x), 0.2, true, gen);
      backward(crossEntropy(linear(h, w, b), targets));
      clipGradNorm(opt.parameters(), 0.5);
      opt.setLearningRate(schedule.at(step));
      opt.step();
      opt.zeroGrad();
    }
  }

  Checkpoint save() const {
    Checkpoint ckpt;
    storeParameters(ckpt, opt.parameters(), "model.");
    opt.saveState(ckpt);
    ckpt.metadata["rng"] = gen.state();
    ckpt.metadata["step"] = std::to_string(step);
    return ckpt;
  }

  void restore(const Checkpoint &ckpt) {
    restoreParameters(ckpt, opt.parameters(), "model.");
    opt.loadState(ckpt);
    gen.setState(ckpt.metadata.at("rng"));
    step = std::stoll(ckpt.metadata.at("step"));
  }
};

TEST_F(Checkpoints, ResumedTrainingContinuesBitForBit) {
  TinyRun straight(10);
  straight.train(7);

  TinyRun interrupted(10);
  interrupted.train(3);
  saveCheckpoint(path("run.safetensors"), interrupted.save());
  TinyRun resumed(999);  // different initial values, to be overwritten
  resumed.restore(loadCheckpoint(path("run.safetensors")));
  resumed.train(7);

  for (const char *name : {"model.w", "model.b"}) {
    Checkpoint a = straight.save(), b = resumed.save();
    const Tensor &x = a.tensors.at(name), &y = b.tensors.at(name);
    EXPECT_EQ(std::memcmp(x.rawData(), y.rawData(), static_cast<size_t>(x.numel()) * 4), 0) << name;
  }
  EXPECT_EQ(straight.gen.state(), resumed.gen.state());
  // The run did learn something, so the comparison is not between two untouched initialisations.
  EXPECT_NE(straight.w.value().toDoubles(), TinyRun(10).w.value().toDoubles());
}

TEST_F(Checkpoints, RestoringChecksNamesAndShapes) {
  TinyRun run(1);
  Checkpoint ckpt = run.save();
  ckpt.tensors.erase("adamw.w.exp_avg");
  EXPECT_THROW(run.opt.loadState(ckpt), RuntimeError);
  ckpt = run.save();
  ckpt.metadata["adamw.b.step"] = "x1";
  EXPECT_THROW(run.opt.loadState(ckpt), RuntimeError);
  ckpt = run.save();
  ckpt.tensors["model.w"] = Tensor::zeros({4, 6}, DType::F32);
  try {
    restoreParameters(ckpt, run.opt.parameters(), "model.");
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("'model.w' is f32 [4, 6] in the checkpoint but the parameter is f32 [6, 4]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace scanforge::test
