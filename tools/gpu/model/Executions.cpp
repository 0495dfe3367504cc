#include "tools/gpu/model/Executions.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>

namespace scanforge::gpu {

std::vector<double> blockExecutions(const KernelSass &sass, const KernelTraffic &traffic, double warps) {
  std::map<MemorySite, double> requests;
  for (const InstructionTraffic &i : traffic.instructions) requests[{i.site, i.store, i.shared}] += static_cast<double>(i.requests);
  std::map<MemorySite, unsigned> copies;  // SASS instructions per site, over the whole kernel
  for (const BlockFacts &b : sass.blocks)
    for (auto &[site, n] : b.sites) copies[site] += n;
  if (std::none_of(copies.begin(), copies.end(), [&](auto &c) { return requests.count(c.first) > 0; }))
    throw std::invalid_argument(sass.kernel + ": no memory instruction of its SASS is at a source line the emulator "
                                              "recorded traffic at (compiled without line information?)");
  auto requestsAt = [&](const MemorySite &s) {
    auto r = requests.find(s);
    return r == requests.end() ? 0.0 : r->second;
  };

  // Per loop (by header; -1: outside loops), the executions its accesses say, pooled over its
  // blocks: ptxas attributes some of an unrolled batch's accesses to a neighbouring line of the
  // batch, which evens out over the loop but not per line. Requests at a line without an
  // instruction of their kind (ptxas put all of its accesses on neighbouring lines: the selective
  // SSM's loads of C in its backward) count for the loop of the nearest line with instructions,
  // the one before on a tie; left out, its loop seemed to run a third as often as it does.
  const size_t n = sass.blocks.size();
  std::map<int, std::pair<double, double>> pooled;  // loop -> (executions x copies, copies)
  struct Placed {
    std::string file;
    long line;
    int loop;
  };
  std::vector<Placed> placed;  // each memory instruction's site
  auto lineOf = [](const std::string &site) {  // "mingru.cu:57"
    size_t colon = site.rfind(':');
    return std::pair<std::string, long>{site.substr(0, colon), std::stol(site.substr(colon + 1))};
  };
  for (const BlockFacts &b : sass.blocks)
    for (auto &[site, k] : b.sites) {
      auto [file, line] = lineOf(site.site);
      placed.push_back({file, line, b.loop});
      if (requestsAt(site) > 0) {
        pooled[b.loop].first += k * requestsAt(site) / copies.at(site) / warps;
        pooled[b.loop].second += k;
      }
    }
  for (auto &[site, r] : requests) {
    if (copies.count(site)) continue;
    auto [file, line] = lineOf(site.site);
    const Placed *nearest = nullptr;
    for (const Placed &p : placed) {
      if (p.file != file) continue;
      long d = std::abs(p.line - line), best = nearest ? std::abs(nearest->line - line) : 0;
      if (!nearest || d < best || (d == best && p.line < nearest->line)) nearest = &p;
    }
    if (nearest && pooled.count(nearest->loop)) pooled[nearest->loop].first += r / warps;
  }
  std::function<double(int)> loopExecutions = [&](int header) -> double {
    if (header < 0) return 1.0;  // code outside loops runs once per warp
    auto p = pooled.find(header);
    if (p != pooled.end()) return p->second.first / p->second.second;
    // A loop without accesses of known sites: as often as the code around it.
    int outside = sass.blocks[static_cast<size_t>(header)].dominator;
    return loopExecutions(outside < 0 ? -1 : sass.blocks[static_cast<size_t>(outside)].loop);
  };

  std::vector<double> counts(n);
  for (size_t b = 0; b < n; ++b) {
    const BlockFacts &block = sass.blocks[b];
    if (b != 0 && block.dominator < 0) continue;  // no path reaches it: never
    // The first block with accesses on its dominators' path within its loop, itself first, says
    // whether this code ran at all (a chunk's partial batch does not when the chunk is whole batches).
    bool reached = true;
    for (int d = static_cast<int>(b); d >= 0 && sass.blocks[static_cast<size_t>(d)].loop == block.loop;
         d = sass.blocks[static_cast<size_t>(d)].dominator) {
      const BlockFacts &x = sass.blocks[static_cast<size_t>(d)];
      if (x.sites.empty()) continue;
      reached = std::any_of(x.sites.begin(), x.sites.end(), [&](auto &s) { return requestsAt(s.first) > 0; });
      break;
    }
    counts[b] = reached ? loopExecutions(block.loop) : 0.0;
  }
  return counts;
}

}  // namespace scanforge::gpu
