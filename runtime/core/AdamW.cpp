#include "runtime/core/AdamW.h"

#include <cmath>
#include <set>

#include "runtime/core/Dispatch.h"
#include "runtime/core/Error.h"

namespace scanforge {

namespace {

void requireMomentTensor(const std::string &op, const Checkpoint &checkpoint, const std::string &key, const Tensor &like) {
  auto it = checkpoint.tensors.find(key);
  if (it == checkpoint.tensors.end()) throw RuntimeError(op, "the checkpoint has no tensor '" + key + "'");
  if (it->second.shape() != like.shape() || it->second.dtype() != like.dtype())
    throw RuntimeError(op, "'" + key + "' is " + it->second.describe() + " but the parameter needs " + like.describe());
}

}  // namespace

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options) : groups_(std::move(groups)), options_(options) {
  const char *op = "AdamW";
  if (!(options.beta1 >= 0 && options.beta1 < 1) || !(options.beta2 >= 0 && options.beta2 < 1))
    throw RuntimeError(op, "betas must lie in [0, 1), got " + std::to_string(options.beta1) + " and " +
                               std::to_string(options.beta2));
  if (!(options.eps > 0)) throw RuntimeError(op, "eps must be positive, got " + std::to_string(options.eps));
  setLearningRate(options.lr);
  std::set<std::string> names;
  for (const ParamGroup &group : groups_) {
    if (!(group.weightDecay >= 0))
      throw RuntimeError(op, "weight decay must be >= 0, got " + std::to_string(group.weightDecay));
    std::vector<Moments> &moments = moments_.emplace_back();
    for (const Parameter &p : group.params) {
      if (p.name.empty() || !names.insert(p.name).second)
        throw RuntimeError(op, "parameter names must be unique and non-empty; '" + p.name + "' is not");
      if (!p.variable.defined() || !p.variable.isLeaf() || !p.variable.requiresGrad())
        throw RuntimeError(op, "parameter '" + p.name + "' must be a leaf that requires gradients");
      const Tensor &value = p.variable.value();
      if (value.dtype() != DType::F32 && value.dtype() != DType::F64)
        throw RuntimeError(op, "parameter '" + p.name + "' is " + value.describe() + "; AdamW updates f32 or f64 parameters");
      moments.push_back({Tensor::zeros(value.shape(), value.dtype()), Tensor::zeros(value.shape(), value.dtype()), 0});
    }
  }
}

void AdamW::setLearningRate(double lr) {
  if (!(lr >= 0 && std::isfinite(lr))) throw RuntimeError("AdamW", "the learning rate must be finite and >= 0, got " + std::to_string(lr));
  options_.lr = lr;
}

std::vector<Parameter> AdamW::parameters() const {
  std::vector<Parameter> all;
  for (const ParamGroup &group : groups_) all.insert(all.end(), group.params.begin(), group.params.end());
  return all;
}

void AdamW::zeroGrad() {
  for (const ParamGroup &group : groups_)
    for (const Parameter &p : group.params) p.variable.zeroGrad();
}

void AdamW::step() {
  const AdamWOptions &o = options_;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      const Variable &param = groups_[gi].params[pi].variable;
      const Tensor &grad = param.grad();
      if (!grad.defined()) continue;
      Moments &m = moments_[gi][pi];
      ++m.step;
      double correction1 = 1 - std::pow(o.beta1, static_cast<double>(m.step));
      double correction2 = 1 - std::pow(o.beta2, static_cast<double>(m.step));
      dispatchFloat("AdamW::step", param.value(), [&]<class T>() {
        T decay = static_cast<T>(1 - o.lr * groups_[gi].weightDecay);
        T stepSize = static_cast<T>(o.lr / correction1), sqrtCorrection2 = static_cast<T>(std::sqrt(correction2));
        T beta1 = static_cast<T>(o.beta1), beta2 = static_cast<T>(o.beta2), eps = static_cast<T>(o.eps);
        T *p = param.value().data<T>(), *avg = m.expAvg.data<T>(), *avgSq = m.expAvgSq.data<T>();
        const T *g = grad.data<T>();
        for (int64_t i = 0, n = param.value().numel(); i < n; ++i) {
          p[i] *= decay;
          avg[i] = beta1 * avg[i] + (1 - beta1) * g[i];
          avgSq[i] = beta2 * avgSq[i] + (1 - beta2) * g[i] * g[i];
          p[i] -= stepSize * avg[i] / (std::sqrt(avgSq[i]) / sqrtCorrection2 + eps);
        }
      });
    }
  }
}

void AdamW::saveState(Checkpoint &checkpoint, const std::string &prefix) const {
  for (size_t gi = 0; gi < groups_.size(); ++gi)
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      std::string key = prefix + groups_[gi].params[pi].name;
      const Moments &m = moments_[gi][pi];
      checkpoint.tensors[key + ".exp_avg"] = m.expAvg;
      checkpoint.tensors[key + ".exp_avg_sq"] = m.expAvgSq;
      checkpoint.metadata[key + ".step"] = std::to_string(m.step);
    }
}

void AdamW::loadState(const Checkpoint &checkpoint, const std::string &prefix) {
  const char *op = "AdamW::loadState";
  // Validate everything first, so that a bad checkpoint leaves the optimizer untouched.
  std::vector<std::vector<int64_t>> steps;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    std::vector<int64_t> &groupSteps = steps.emplace_back();
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      std::string key = prefix + groups_[gi].params[pi].name;
      requireMomentTensor(op, checkpoint, key + ".exp_avg", moments_[gi][pi].expAvg);
      requireMomentTensor(op, checkpoint, key + ".exp_avg_sq", moments_[gi][pi].expAvgSq);
      auto it = checkpoint.metadata.find(key + ".step");
      if (it == checkpoint.metadata.end()) throw RuntimeError(op, "the checkpoint has no metadata '" + key + ".step'");
      size_t used = 0;
      int64_t step = -1;
      try {
        step = std::stoll(it->second, &used);
      } catch (const std::exception &) {
        used = 0;
      }
      if (used == 0 || used != it->second.size() || step < 0)
        throw RuntimeError(op, "metadata '" + key + ".step' = '" + it->second + "' is not a step count");
      groupSteps.push_back(step);
    }
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi)
    for (size_t pi = 0; pi < groups_[gi].params.size(); ++pi) {
      std::string key = prefix + groups_[gi].params[pi].name;
      Moments &m = moments_[gi][pi];
      m.expAvg.copyFrom(checkpoint.tensors.at(key + ".exp_avg"));
      m.expAvgSq.copyFrom(checkpoint.tensors.at(key + ".exp_avg_sq"));
      m.step = steps[gi][pi];
    }
}

}  // namespace scanforge
