#include "tools/scan-bench/StableParameters.h"

#include <cmath>
#include <map>
#include <set>

#include "runtime/core/Shape.h"

namespace scanforge::bench {

void drawWithinDecayConditions(const Recurrence &rec, const TensorViews &params) {
  using Condition = Recurrence::ParameterCondition;
  std::map<std::string, std::set<Condition::Kind>> conditions;
  for (const Condition &c : rec.parameterConditions()) conditions[c.param].insert(c.kind);
  for (const auto &[param, kinds] : conditions) {
    bool unit = kinds.count(Condition::MagnitudeAtMostOne) > 0, neg = kinds.count(Condition::NonPositive) > 0,
         pos = kinds.count(Condition::NonNegative) > 0;
    const TensorView &view = params.at(param);
    int64_t n = numelOf(view.shape, "scan-bench");
    float *v = static_cast<float *>(view.data);
    for (int64_t i = 0; i < n; ++i) {
      float m = std::abs(v[i]);
      m = unit ? m / (1.0f + m) : m + 0.5f;
      v[i] = neg && pos ? 0.0f : neg ? -m : pos ? m : std::copysign(m, v[i]);
    }
  }
}

}  // namespace scanforge::bench
