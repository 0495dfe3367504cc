#include "tools/gpu/sass/Sass.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <sstream>
#include <string_view>

namespace scanforge::gpu {

namespace {

bool hasModifier(const std::string &opcode, const std::string &modifier) {
  std::stringstream in(opcode);
  for (std::string part; std::getline(in, part, '.');)
    if (part == modifier) return true;
  return false;
}

// The control-flow graph of a function: its basic blocks, their dominators, and its natural loops
// (a back edge to a block that dominates it), for telling loops from other backward branches and
// for the blocks the model counts executions of.
class ControlFlow {
 public:
  explicit ControlFlow(const SassFunction &f) : f_(f), blockOf_(f.instructions.size()) {
    std::vector<bool> leader(f.instructions.size() + 1, false);
    leader[0] = true;
    for (auto &[label, at] : f.labels) leader[at] = true;
    for (size_t i = 0; i < f.instructions.size(); ++i)
      if (transfers(f.instructions[i])) leader[i + 1] = true;
    for (size_t i = 0; i < f.instructions.size(); ++i) {
      if (leader[i]) starts_.push_back(i);
      blockOf_[i] = starts_.size() - 1;
    }
    predecessors_.resize(starts_.size());
    reachable_.assign(starts_.size(), false);
    std::vector<size_t> work{0};
    for (size_t b = 0; b < starts_.size(); ++b)
      for (size_t s : successors(b)) predecessors_[s].push_back(b);
    while (!work.empty()) {
      size_t b = work.back();
      work.pop_back();
      if (reachable_[b]) continue;
      reachable_[b] = true;
      for (size_t s : successors(b)) work.push_back(s);
    }
    computeDominators();
  }

  size_t blocks() const { return starts_.size(); }
  size_t begin(size_t block) const { return starts_[block]; }
  size_t end(size_t block) const { return block + 1 < starts_.size() ? starts_[block + 1] : f_.instructions.size(); }
  size_t blockOf(size_t instruction) const { return blockOf_[instruction]; }

  // Whether every path from the function's entry to instruction `to` passes through `from`.
  bool dominates(size_t from, size_t to) const { return dominators_[blockOf_[to]][blockOf_[from]]; }

  // The strict dominator of `block` that every other one dominates; -1 for the entry and for
  // blocks no path reaches (the trap after EXIT).
  int immediateDominator(size_t block) const {
    if (!reachable_[block]) return -1;
    int best = -1;
    size_t depth = 0;
    for (size_t d = 0; d < blocks(); ++d)
      if (d != block && dominators_[block][d]) {
        size_t n = static_cast<size_t>(std::count(dominators_[d].begin(), dominators_[d].end(), true));
        if (best < 0 || n > depth) best = static_cast<int>(d), depth = n;
      }
    return best;
  }

  // A natural loop: its back edges (blocks that branch to the header, which dominates them) and its
  // body, the blocks that reach a back edge without passing the header.
  struct Loop {
    std::vector<size_t> backEdges;
    std::vector<bool> body;
  };
  // By header block.
  std::map<size_t, Loop> loops() const {
    std::map<size_t, Loop> loops;
    for (size_t b = 0; b < blocks(); ++b)
      for (size_t h : successors(b)) {
        if (!reachable_[b] || !dominators_[b][h]) continue;  // not the trap after EXIT
        Loop &loop = loops.try_emplace(h, Loop{{}, std::vector<bool>(blocks(), false)}).first->second;
        loop.backEdges.push_back(b);
        std::vector<bool> &body = loop.body;
        body[h] = true;
        std::vector<size_t> work{b};
        while (!work.empty()) {
          size_t x = work.back();
          work.pop_back();
          if (body[x]) continue;
          body[x] = true;
          for (size_t p : predecessors_[x]) work.push_back(p);
        }
      }
    return loops;
  }

 private:
  static bool transfers(const SassInstruction &in) {
    std::string b = in.base();
    return b == "BRA" || b == "BRX" || b == "JMP" || b == "JMX" || b == "CALL" || b == "RET" || b == "EXIT";
  }

  // Where control may go after the last instruction of block `block`.
  std::vector<size_t> successors(size_t block) const {
    size_t last = end(block) - 1;
    const SassInstruction &in = f_.instructions[last];
    std::string b = in.base();
    std::vector<size_t> next;
    auto label = in.target.empty() ? f_.labels.end() : f_.labels.find(in.target);
    if (label != f_.labels.end() && label->second < f_.instructions.size()) next.push_back(blockOf_[label->second]);
    if (b == "BRX" || b == "JMX")  // indirect: any label
      for (auto &[name, at] : f_.labels)
        if (at < f_.instructions.size()) next.push_back(blockOf_[at]);
    // Falls through unless it always leaves: EXIT, RET, or a branch with neither predicate nor
    // modifier (BRA.DIV, BRA.U with a uniform predicate operand and @P0 BRA are conditional).
    bool leaves = !in.predicated && (b == "EXIT" || b == "RET" || ((b == "BRA" || b == "JMP") && in.opcode == b));
    if (!leaves && last + 1 < f_.instructions.size()) next.push_back(blockOf_[last + 1]);
    return next;
  }

  // Iterative dataflow: dom(entry) = {entry}; dom(b) = {b} + the intersection over b's
  // predecessors. Blocks no path reaches keep every block as a dominator.
  void computeDominators() {
    size_t n = starts_.size();
    dominators_.assign(n, std::vector<bool>(n, true));
    dominators_[0].assign(n, false);
    dominators_[0][0] = true;
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t b = 1; b < n; ++b) {
        std::vector<bool> meet(n, true);
        for (size_t p : predecessors_[b])
          for (size_t d = 0; d < n; ++d) meet[d] = meet[d] && dominators_[p][d];
        meet[b] = true;
        if (meet != dominators_[b]) {
          dominators_[b] = std::move(meet);
          changed = true;
        }
      }
    }
  }

  const SassFunction &f_;
  std::vector<size_t> starts_;   // first instruction of each block
  std::vector<size_t> blockOf_;  // instruction -> block
  std::vector<std::vector<size_t>> predecessors_;
  std::vector<bool> reachable_;
  std::vector<std::vector<bool>> dominators_;  // [block][its dominator?]
};

// "file.cu:LINE" of a line-information comment of nvdisasm -gi, `//## File "/path/file.cu", line 12`
// with, for inlined code, ` inlined at "/path/file.cu", line 154`: the last location, the caller's.
std::string outermostSite(std::string_view comment) {
  size_t quote = comment.rfind(" \"");
  if (quote == std::string_view::npos) return {};
  std::string_view rest = comment.substr(quote + 2);
  size_t close = rest.find('"');
  size_t line = rest.find(", line ");
  if (close == std::string_view::npos || line == std::string_view::npos || line < close) return {};
  std::string_view file = rest.substr(0, close);
  file = file.substr(file.rfind('/') + 1);
  std::string_view number = rest.substr(line + 7);
  number = number.substr(0, number.find_first_not_of("0123456789"));
  return number.empty() ? std::string() : std::string(file) + ":" + std::string(number);
}

}  // namespace

bool SassInstruction::globalLoad() const { return base() == "LDG"; }

bool SassInstruction::globalStore() const {
  std::string b = base();
  return b == "STG" || b == "RED" || b == "ATOMG";
}

bool SassInstruction::sharedAccess() const {
  std::string b = base();
  return b == "LDS" || b == "STS";
}

unsigned SassInstruction::accessBytes() const {
  if (hasModifier(opcode, "128")) return 16;
  if (hasModifier(opcode, "64")) return 8;
  if (hasModifier(opcode, "U16") || hasModifier(opcode, "S16")) return 2;
  if (hasModifier(opcode, "U8") || hasModifier(opcode, "S8")) return 1;
  return 4;
}

// nvdisasm -c -hex -gi: a "//---- .text.SYMBOL ----" header per function, ".L_x_80:" label lines,
// line-information comments ("//## File ..." before the instructions they locate), and
// instructions "/*0520*/  @!P0 OPCODE operands ;  /* 0xLOW */" (predicate optional) followed by a
// line "/* 0xHIGH */": the high 64 bits of the encoding, whose bits 41-63 are the control bits
// (stall 4, yield 1, write scoreboard 3, read scoreboard 3, wait mask 6, reuse 4; scoreboard 7 is
// none). Parsed by hand: GCC 12's std::regex trips -Wmaybe-uninitialized under the sanitizers.
std::vector<SassFunction> parseSass(const std::string &text) {
  std::vector<SassFunction> functions;
  std::string site;  // of the instructions that follow
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t text0 = line.find_first_not_of(" \t");
    if (text0 == std::string::npos) continue;
    std::string_view rest = std::string_view(line).substr(text0);
    if (rest.rfind("//-", 0) == 0 && rest.find(" .text.") != std::string_view::npos) {
      std::string_view symbol = rest.substr(rest.find(" .text.") + 7);
      functions.push_back({std::string(symbol.substr(0, symbol.find(' '))), {}, {}});
      site.clear();
    } else if (functions.empty()) {
      continue;
    } else if (rest.rfind("//## File \"", 0) == 0) {
      site = outermostSite(rest);
    } else if (rest.rfind(".L", 0) == 0 && rest.back() == ':') {
      functions.back().labels[std::string(rest.substr(0, rest.size() - 1))] = functions.back().instructions.size();
    } else if (rest.rfind("/* 0x", 0) == 0) {
      uint64_t high = 0;
      std::string_view hex = rest.substr(5);
      auto [end, error] = std::from_chars(hex.data(), hex.data() + hex.size(), high, 16);
      if (functions.back().instructions.empty() || error != std::errc() || end != hex.data() + 16) continue;
      unsigned control = static_cast<unsigned>(high >> 41);
      SassInstruction &last = functions.back().instructions.back();
      unsigned write = control >> 5 & 7u;
      last.writeScoreboard = write == 7 ? -1 : static_cast<int>(write);
      last.waitMask = control >> 11 & 0x3fu;
    } else if (rest.rfind("/*", 0) == 0 && rest.find("*/") != std::string_view::npos) {
      std::stringstream words{std::string(rest.substr(rest.find("*/") + 2))};
      std::string opcode;
      words >> opcode;
      bool predicated = !opcode.empty() && opcode[0] == '@';
      if (predicated) words >> opcode;
      if (opcode.empty() || !std::isupper(static_cast<unsigned char>(opcode[0]))) continue;
      if (opcode.back() == ';') opcode.pop_back();
      SassInstruction ins;
      ins.opcode = opcode;
      ins.predicated = predicated;
      ins.site = site;
      size_t tick = rest.find("`(");
      if (tick != std::string_view::npos) {
        std::string_view target = rest.substr(tick + 2);
        ins.target = std::string(target.substr(0, target.find(')')));
      }
      functions.back().instructions.push_back(std::move(ins));
    }
  }
  return functions;
}

std::vector<SassBlock> basicBlocks(const SassFunction &f) {
  if (f.instructions.empty()) return {};
  ControlFlow flow(f);
  std::vector<SassBlock> blocks(flow.blocks());
  for (size_t b = 0; b < blocks.size(); ++b) {
    blocks[b].begin = flow.begin(b);
    blocks[b].end = flow.end(b);
    blocks[b].dominator = flow.immediateDominator(b);
  }
  std::map<size_t, ControlFlow::Loop> loops = flow.loops();
  std::map<size_t, size_t> headerOfBackEdge;
  std::vector<size_t> innermostSize(blocks.size(), blocks.size() + 1);
  for (auto &[header, loop] : loops) {
    size_t size = static_cast<size_t>(std::count(loop.body.begin(), loop.body.end(), true));
    for (size_t b = 0; b < blocks.size(); ++b)
      if (loop.body[b] && size < innermostSize[b]) {
        innermostSize[b] = size;
        blocks[b].loop = static_cast<int>(header);
      }
    for (size_t b : loop.backEdges) headerOfBackEdge[b] = header;
  }
  // Load waits: a pass in layout order records the scoreboards pending (a global load issued on
  // them since the last wait on them) at the end of each loop's back edges; the second pass starts
  // each loop's header from those and counts.
  std::map<size_t, unsigned> pendingAtBackEdges;
  for (int pass = 0; pass < 2; ++pass) {
    unsigned pending = 0;
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (pass == 1 && loops.count(b)) pending = pendingAtBackEdges[b];
      for (size_t i = blocks[b].begin; i < blocks[b].end; ++i) {
        const SassInstruction &in = f.instructions[i];
        if (in.waitMask & pending) {
          blocks[b].loadWaits += pass == 1;
          pending = 0;  // the loads issued before this wait arrive with the one it waits for
        }
        if (in.globalLoad() && in.writeScoreboard >= 0) pending |= 1u << in.writeScoreboard;
      }
      if (auto edge = headerOfBackEdge.find(b); pass == 0 && edge != headerOfBackEdge.end())
        pendingAtBackEdges[edge->second] |= pending;
    }
  }
  return blocks;
}

unsigned exposedLoadWaits(const std::vector<SassBlock> &blocks, const SassLoop &loop) {
  unsigned waits = 0;
  for (const SassBlock &b : blocks)
    if (loop.begin <= b.begin && b.end <= loop.end + 1) waits += b.loadWaits;
  return waits;
}

std::optional<SassLoop> hotLoop(const SassFunction &f) {
  if (f.instructions.empty()) return std::nullopt;
  ControlFlow flow(f);
  std::map<size_t, ControlFlow::Loop> loops = flow.loops();
  auto bodyHas = [&](const ControlFlow::Loop &loop, auto &&counts) {
    unsigned total = 0;
    for (size_t b = 0; b < flow.blocks(); ++b)
      if (loop.body[b])
        for (size_t i = flow.begin(b); i < flow.end(b); ++i) total += counts(f.instructions[i]);
    return total;
  };
  auto globalBytesIn = [&](const ControlFlow::Loop &loop) {
    return bodyHas(loop, [](const SassInstruction &in) { return in.globalLoad() || in.globalStore() ? in.accessBytes() : 0u; });
  };
  auto storesIn = [&](const ControlFlow::Loop &loop) {
    return bodyHas(loop, [](const SassInstruction &in) { return in.globalStore() ? 1u : 0u; }) > 0;
  };
  // Only loops that move global data count: a register-dimension loop inside the time loop does
  // not make the time loop an outer one.
  std::erase_if(loops, [&](const auto &entry) { return globalBytesIn(entry.second) == 0; });
  auto inside = [](const ControlFlow::Loop &inner, const ControlFlow::Loop &outer) {
    bool strict = false;
    for (size_t b = 0; b < inner.body.size(); ++b) {
      if (inner.body[b] && !outer.body[b]) return false;
      strict = strict || (outer.body[b] && !inner.body[b]);
    }
    return strict;
  };
  // Among innermost loops, one that writes memory comes first: a scan's time loop writes its
  // outputs, while a loop that only reads (a chunked kernel's carry, composing the aggregates of
  // the chunks before it) can move more bytes per iteration and still be a side loop.
  std::optional<SassLoop> best;
  std::pair<bool, unsigned> bestRank{false, 0};
  for (const auto &[header, loop] : loops) {
    bool innermost = std::none_of(loops.begin(), loops.end(), [&](const auto &other) { return inside(other.second, loop); });
    std::pair<bool, unsigned> rank{storesIn(loop), globalBytesIn(loop)};
    if (!innermost || rank <= bestRank) continue;
    size_t last = 0;  // the loop's last backward branch
    for (size_t b : loop.backEdges) last = std::max(last, flow.end(b) - 1);
    best = SassLoop{flow.begin(header), last};
    bestRank = rank;
  }
  return best;
}

}  // namespace scanforge::gpu
