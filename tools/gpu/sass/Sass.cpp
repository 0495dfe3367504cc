#include "tools/gpu/sass/Sass.h"

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

// Global bytes of one execution of each instruction in [begin, end].
unsigned globalBytes(const SassFunction &f, const SassLoop &loop) {
  unsigned bytes = 0;
  for (size_t i = loop.begin; i <= loop.end; ++i) {
    const SassInstruction &in = f.instructions[i];
    if (in.globalLoad() || in.globalStore()) bytes += in.accessBytes();
  }
  return bytes;
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

// nvdisasm -c -hex: a "//---- .text.SYMBOL ----" header per function, ".L_x_80:" label lines, and
// instructions "/*0520*/  @!P0 OPCODE operands ;  /* 0xLOW */" (predicate optional) followed by a
// line "/* 0xHIGH */": the high 64 bits of the encoding, whose bits 41-63 are the control bits
// (stall 4, yield 1, write scoreboard 3, read scoreboard 3, wait mask 6, reuse 4; scoreboard 7 is
// none). Parsed by hand: GCC 12's std::regex trips -Wmaybe-uninitialized under the sanitizers.
std::vector<SassFunction> parseSass(const std::string &text) {
  std::vector<SassFunction> functions;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t text0 = line.find_first_not_of(" \t");
    if (text0 == std::string::npos) continue;
    std::string_view rest = std::string_view(line).substr(text0);
    if (rest.rfind("//-", 0) == 0 && rest.find(" .text.") != std::string_view::npos) {
      std::string_view symbol = rest.substr(rest.find(" .text.") + 7);
      functions.push_back({std::string(symbol.substr(0, symbol.find(' '))), {}, {}});
    } else if (functions.empty()) {
      continue;
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
      SassInstruction ins{opcode, {}};
      ins.predicated = predicated;
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

unsigned exposedLoadWaits(const SassFunction &f, const SassLoop &loop) {
  unsigned pending = 0;  // scoreboards with a global load issued since the last wait
  unsigned waits = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = loop.begin; i <= loop.end; ++i) {
      const SassInstruction &in = f.instructions[i];
      if (in.waitMask & pending) {
        waits += pass == 1;
        pending = 0;  // the loads issued before this wait arrive with the one it waits for
      }
      if (in.globalLoad() && in.writeScoreboard >= 0) pending |= 1u << in.writeScoreboard;
    }
  }
  return waits;
}

std::optional<SassLoop> hotLoop(const SassFunction &f) {
  std::vector<SassLoop> loops;
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const SassInstruction &in = f.instructions[i];
    auto it = in.target.empty() ? f.labels.end() : f.labels.find(in.target);
    if (in.base() == "BRA" && it != f.labels.end() && it->second < i) loops.push_back({it->second, i});
  }
  auto contains = [](const SassLoop &outer, const SassLoop &inner) {
    return outer.begin <= inner.begin && inner.end <= outer.end && (outer.begin != inner.begin || outer.end != inner.end);
  };
  // Only loops that move global data count: a register-dimension loop inside the time loop
  // does not make the time loop an outer one. A backward branch from the out-of-line code after
  // the kernel's EXIT (the divergent-warp path of a shuffle, BRA.DIV, rejoining the loop body) is
  // no loop: its range spans the loop's tail and everything after it, EXIT included.
  auto exits = [&](const SassLoop &loop) {
    for (size_t i = loop.begin; i < loop.end; ++i)
      if (f.instructions[i].base() == "EXIT" && !f.instructions[i].predicated) return true;
    return false;
  };
  std::erase_if(loops, [&](const SassLoop &loop) { return globalBytes(f, loop) == 0 || exits(loop); });
  // Among innermost loops, one that writes memory comes first: a scan's time loop writes its
  // outputs, while a loop that only reads (a chunked kernel's carry, composing the aggregates of
  // the chunks before it) can move more bytes per iteration and still be a side loop.
  auto stores = [&](const SassLoop &loop) {
    for (size_t i = loop.begin; i <= loop.end; ++i)
      if (f.instructions[i].globalStore()) return true;
    return false;
  };
  std::optional<SassLoop> best;
  std::pair<bool, unsigned> bestRank{false, 0};
  for (const SassLoop &loop : loops) {
    bool innermost = true;
    for (const SassLoop &other : loops) innermost = innermost && !contains(loop, other);
    std::pair<bool, unsigned> rank{stores(loop), globalBytes(f, loop)};
    if (innermost && rank > bestRank) {
      best = loop;
      bestRank = rank;
    }
  }
  return best;
}

}  // namespace scanforge::gpu
