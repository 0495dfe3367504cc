#include "runtime/cuda/Goldens.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "runtime/cuda/CudaError.h"

namespace scanforge::cuda {

uint16_t toBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float fromBf16(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

double relativeError(const std::vector<double> &got, const std::vector<double> &want, double floor) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i])) return std::numeric_limits<double>::infinity();
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  double scale = std::max(std::sqrt(norm), floor * std::sqrt(static_cast<double>(want.size())));
  return scale == 0 ? std::sqrt(diff) : std::sqrt(diff) / scale;
}

bool GoldenReport::passed() const {
  return std::all_of(checks.begin(), checks.end(), [](const TensorCheck &c) { return c.passed(); });
}

namespace {

GoldenTensors tensorsFrom(const nlohmann::json &j) {
  GoldenTensors out;
  for (auto &[name, t] : j.items()) {
    GoldenTensor tensor{t.at("shape").get<std::vector<int64_t>>(), t.at("data").get<std::vector<double>>()};
    size_t count = 1;
    for (int64_t s : tensor.shape) count *= static_cast<size_t>(s);
    if (count != tensor.data.size())
      throw CudaError("tensor '" + name + "' has " + std::to_string(tensor.data.size()) + " values for its shape of " +
                      std::to_string(count));
    out[name] = std::move(tensor);
  }
  return out;
}

class GoldenRun {
 public:
  GoldenRun(RecurrenceRunner &runner, const Golden &golden, const Plan &plan, Passes passes)
      : runner_(runner), device_(runner.device()), golden_(golden), plan_(plan), passes_(passes) {}

  GoldenReport run() {
    const RecurrenceDesc &fwd = runner_.forwardDesc();
    for (auto &[name, tensor] : golden_.forwardInputs) upload(fwd, name, tensor);
    for (const BufferDesc &b : fwd.buffers)
      if (b.role == BufferRole::Output || (b.forBackward && passes_ == Passes::ForwardAndBackward)) allocate(b);
    for (auto &[name, tensor] : golden_.forwardExpected) allocate(describe(fwd, name));
    runner_.forward(golden_.shape, plan_, buffers_);
    device_.synchronize(0);
    for (auto &[name, tensor] : golden_.forwardExpected) check("forward", fwd, name, tensor);
    if (golden_.backwardExpected.empty() || passes_ == Passes::Forward) return std::move(report_);

    const RecurrenceDesc &bwd = *runner_.backwardDesc();
    for (auto &[name, tensor] : golden_.backwardInputs) upload(bwd, name, tensor);
    for (const BufferDesc &b : bwd.buffers)
      if (b.role == BufferRole::Output || b.role == BufferRole::Accum) allocate(b);
    for (auto &[name, tensor] : golden_.backwardExpected) allocate(describe(bwd, name));
    runner_.backward(golden_.shape, plan_, buffers_);
    device_.synchronize(0);
    for (auto &[name, tensor] : golden_.backwardExpected) check("backward", bwd, name, tensor);
    return std::move(report_);
  }

 private:
  const BufferDesc &describe(const RecurrenceDesc &rec, const std::string &name) {
    const BufferDesc *b = rec.buffer(name);
    if (!b) throw CudaError(golden_.name + ": " + rec.name + " has no buffer '" + name + "'");
    return *b;
  }

  void allocate(const BufferDesc &b) {
    if (owned_.count(b.name)) return;
    owned_[b.name] = DeviceBuffer(device_, runner_.bytes(b, golden_.shape, plan_));
    buffers_[b.name] = owned_[b.name].get();
  }

  void checkShape(const BufferDesc &b, const GoldenTensor &t) {
    size_t want = runner_.bytes(b, golden_.shape, plan_) / (b.dtype == "bf16" ? 2 : 4);
    if (want != t.data.size())
      throw CudaError(golden_.name + ": '" + b.name + "' has " + std::to_string(t.data.size()) + " values, the package expects " +
                      std::to_string(want) + " at " + golden_.shape.describe());
  }

  void upload(const RecurrenceDesc &rec, const std::string &name, const GoldenTensor &t) {
    const BufferDesc &b = describe(rec, name);
    checkShape(b, t);
    allocate(b);
    if (b.dtype == "bf16") {
      std::vector<uint16_t> host(t.data.size());
      for (size_t i = 0; i < host.size(); ++i) host[i] = toBf16(static_cast<float>(t.data[i]));
      device_.upload(buffers_[name], host.data(), host.size() * 2);
    } else {
      std::vector<float> host(t.data.begin(), t.data.end());
      device_.upload(buffers_[name], host.data(), host.size() * 4);
    }
  }

  void check(const std::string &stage, const RecurrenceDesc &rec, const std::string &name, const GoldenTensor &want) {
    const BufferDesc &b = describe(rec, name);
    checkShape(b, want);
    std::vector<double> got(want.data.size());
    if (b.dtype == "bf16") {
      std::vector<uint16_t> host(got.size());
      device_.download(host.data(), buffers_[name], host.size() * 2);
      for (size_t i = 0; i < got.size(); ++i) got[i] = fromBf16(host[i]);
    } else {
      std::vector<float> host(got.size());
      device_.download(host.data(), buffers_[name], host.size() * 4);
      got.assign(host.begin(), host.end());
    }
    double error = relativeError(got, want.data, golden_.errorFloor);
    report_.checks.push_back(
        {stage, name, error, b.dtype == "bf16" ? golden_.bf16Tolerance : golden_.f32Tolerance, std::move(got)});
  }

  RecurrenceRunner &runner_;
  DeviceBackend &device_;
  const Golden &golden_;
  Plan plan_;
  Passes passes_;
  std::map<std::string, DeviceBuffer> owned_;
  BufferMap buffers_;
  GoldenReport report_;
};

}  // namespace

Golden readGolden(const nlohmann::json &j, const std::string &where) {
  Golden g;
  g.name = where;
  try {
    if (j.at("format").get<std::string>() != "scanforge-golden" || j.at("version").get<int>() != 1)
      throw CudaError("not a version-1 scanforge golden");
    g.forward = j.at("forward").get<std::string>();
    g.shape.batch = j.at("shape").at("B").get<int64_t>();
    g.shape.steps = j.at("shape").at("T").get<int64_t>();
    g.shape.dims = j.at("shape").at("dims").get<std::map<std::string, int64_t>>();
    g.f32Tolerance = j.at("tolerance").at("f32").get<double>();
    g.bf16Tolerance = j.at("tolerance").at("bf16").get<double>();
    g.forwardInputs = tensorsFrom(j.at("forward_inputs"));
    g.forwardExpected = tensorsFrom(j.at("forward_expected"));
    g.backwardInputs = tensorsFrom(j.at("backward_inputs"));
    g.backwardExpected = tensorsFrom(j.at("backward_expected"));
  } catch (const nlohmann::json::exception &e) {
    throw CudaError(where + ": malformed golden: " + e.what());
  } catch (const CudaError &e) {
    throw CudaError(where + ": " + e.what());
  }
  return g;
}

std::vector<Golden> loadGoldens(const std::filesystem::path &packageDir) {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto &entry : std::filesystem::directory_iterator(packageDir / "goldens", error))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<Golden> goldens;
  for (const std::filesystem::path &file : files) {
    std::ifstream in(file);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception &e) {
      throw CudaError(file.string() + ": not valid JSON: " + e.what());
    }
    goldens.push_back(readGolden(j, file.string()));
  }
  return goldens;
}

std::string PlanChoice::describe() const {
  return std::string(strategy ? strategyName(*strategy) : "planner's choice") + (chunk ? " L=" + std::to_string(*chunk) : "") +
         (lanes ? " lanes=" + std::to_string(*lanes) : "") + (stash ? *stash ? " with stash" : " without stash" : "") +
         (forwardLanes ? " (forward lanes=" + std::to_string(*forwardLanes) + ")" : "");
}

Plan PlanChoice::planFor(const RecurrenceRunner &runner, const Shape &shape, Passes passes) const {
  Plan plan = runner.plan(shape, strategy, chunk, lanes, stash, passes);
  if (forwardLanes) plan.forwardLanes = forwardLanes;
  return plan;
}

std::vector<PlanChoice> goldenPlans() {
  return {{std::nullopt, std::nullopt},
          {Strategy::Sequential, 4, std::nullopt, true},
          {Strategy::Sequential, 3, std::nullopt, false},
          {Strategy::Chunked, 5, std::nullopt, true},
          {Strategy::Chunked, 1, std::nullopt, false}};
}

GoldenReport runGolden(RecurrenceRunner &runner, const Golden &golden, const Plan &plan, Passes passes) {
  return GoldenRun(runner, golden, plan, passes).run();
}

}  // namespace scanforge::cuda
