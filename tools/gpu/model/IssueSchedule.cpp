#include "tools/gpu/model/IssueSchedule.h"

#include <algorithm>
#include <array>

namespace scanforge::gpu {

namespace {

// Cycles from issue until a variable-latency instruction signals its write scoreboard.
double resultCycles(const SassInstruction &in, const cuda::DeviceSpec &d) {
  if (in.globalLoad()) return 0;  // a memory latency, charged by the model per load wait
  std::string op = in.base();
  if (in.sharedAccess() || op == "SHFL" || op == "LDSM" || op == "ATOMS") return d.sharedCycles;
  return d.variableCycles;
}

}  // namespace

double issueCycles(const std::vector<SassInstruction> &block, const cuda::DeviceSpec &d) {
  std::array<double, 6> released{};  // when each scoreboard's pending results have arrived
  double t = 0;
  for (const SassInstruction &in : block) {
    for (unsigned s = 0; s < released.size(); ++s)
      if (in.waitMask >> s & 1u) t = std::max(t, released[s]);
    if (in.writeScoreboard >= 0 && in.writeScoreboard < 6)
      released[in.writeScoreboard] = std::max(released[in.writeScoreboard], t + resultCycles(in, d));
    if (in.readScoreboard >= 0 && in.readScoreboard < 6)
      released[in.readScoreboard] = std::max(released[in.readScoreboard], t + d.variableCycles);
    t += std::max(in.stall, 1u);
  }
  return t;
}

}  // namespace scanforge::gpu
