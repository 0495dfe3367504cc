// Warnings of the API (Scanforge.h, setWarningHandler) and the one it gives: a call's parameters
// that let a state's decay exceed 1 in magnitude (scan::DecayBounds).
#include <algorithm>
#include <iostream>
#include <sstream>

#include "compiler/api/RecurrenceImpl.h"

namespace scanforge {

namespace {

std::mutex handlerMutex;
WarningHandler handler;

// The row-major index of element `flat` of a tensor of `shape`.
std::vector<int64_t> elementIndex(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  return index;
}

}  // namespace

void setWarningHandler(WarningHandler h) {
  std::lock_guard<std::mutex> lock(handlerMutex);
  handler = std::move(h);
}

void detail::warn(const std::string &message) {
  WarningHandler h;
  {
    std::lock_guard<std::mutex> lock(handlerMutex);
    h = handler;
  }
  if (h) return h(message);
  std::cerr << "scanforge: warning: " << message << std::endl;
}

void Recurrence::Impl::warnIfDecayExceedsOne(const char *call, const TensorViews &params) const {
  if (warnedDecay.load(std::memory_order_relaxed)) return;
  for (const scan::DecayBound &bound : decayBounds)
    for (const scan::ParameterBound &condition : bound.conditions) {
      auto it = params.find(condition.param);
      if (it == params.end() || !it->second.data) continue;  // the shape checks report it
      const TensorView &view = it->second;
      int64_t n = 1;
      for (int64_t extent : view.shape) n *= extent;
      const float *values = static_cast<const float *>(view.data);
      for (int64_t i = 0; i < n; ++i) {
        if (condition.holds(values[i])) continue;
        if (warnedDecay.exchange(true)) return;
        std::ostringstream value;
        value << values[i];
        detail::warn(where(call) + "parameter " + condition.param + detail::shapeText(elementIndex(i, view.shape)) + " = " + value.str() +
                     " breaks " + condition.text() + ", which keeps the decay of state '" + bound.state +
                     "' at most 1 in magnitude for every input: the state can grow without bound over the steps "
                     "(given once per recurrence; docs/dsl.md, \"Decays above 1\")");
        return;
      }
    }
}

std::vector<std::string> Recurrence::checkedParameters() const {
  std::vector<std::string> names;
  if (impl_->warnedDecay.load(std::memory_order_relaxed)) return names;
  for (const scan::DecayBound &bound : impl_->decayBounds)
    for (const scan::ParameterBound &condition : bound.conditions)
      if (std::find(names.begin(), names.end(), condition.param) == names.end()) names.push_back(condition.param);
  return names;
}

void Recurrence::checkParameters(const TensorViews &params) const { impl_->warnIfDecayExceedsOne("forward", params); }

std::vector<Recurrence::ParameterCondition> Recurrence::parameterConditions() const {
  std::vector<ParameterCondition> conditions;
  for (const scan::DecayBound &bound : impl_->decayBounds)
    for (const scan::ParameterBound &c : bound.conditions) {
      ParameterCondition::Kind kind = c.kind == scan::ParameterBound::NonPositive   ? ParameterCondition::NonPositive
                                      : c.kind == scan::ParameterBound::NonNegative ? ParameterCondition::NonNegative
                                                                                    : ParameterCondition::MagnitudeAtMostOne;
      conditions.push_back({c.param, bound.state, kind, c.text()});
    }
  return conditions;
}

}  // namespace scanforge
