#include "tools/gpu/sass/SassFacts.h"

#include <algorithm>
#include <cctype>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Nvrtc.h"

namespace scanforge::gpu {

namespace {

using cuda::CudaError;

// The number before `suffix` in `text` ("56 registers" -> 56 for "registers"), searching from `from`.
unsigned numberBefore(const std::string &text, size_t from, size_t to, const std::string &suffix) {
  size_t at = text.find(suffix, from);
  if (at == std::string::npos || at >= to) return 0;
  size_t end = text.find_last_not_of(' ', at - 1) + 1, begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  return begin < end ? static_cast<unsigned>(std::stoul(text.substr(begin, end - begin))) : 0;
}

// The number after "KEY:" in a -res-usage line ("REG:56").
unsigned field(const std::string &line, const std::string &key) {
  size_t at = line.find(" " + key + ":");
  return at == std::string::npos ? 0 : static_cast<unsigned>(std::stoul(line.substr(at + key.size() + 2)));
}

// Lines [first, last] of each __global__ function's definition in `source`, by brace matching
// (generated and probe sources have no braces in strings or comments inside kernels).
std::vector<std::pair<unsigned, unsigned>> kernelLines(const std::string &source) {
  std::vector<std::pair<unsigned, unsigned>> ranges;
  auto lineOf = [&](size_t at) { return 1u + static_cast<unsigned>(std::count(source.begin(), source.begin() + at, '\n')); };
  for (size_t at = source.find("__global__"); at != std::string::npos; at = source.find("__global__", at + 1)) {
    size_t open = source.find('{', at);
    if (open == std::string::npos) break;
    int depth = 0;
    size_t close = open;
    for (; close < source.size(); ++close) {
      depth += source[close] == '{';
      depth -= source[close] == '}';
      if (depth == 0) break;
    }
    ranges.emplace_back(lineOf(at), lineOf(close));
    at = close;
  }
  return ranges;
}

// `blocks` of `f` with their mixes and the memory sites inside kernel lines of `file`.
std::vector<BlockFacts> blockFacts(const SassFunction &f, const std::vector<SassBlock> &blocks, const std::string &file,
                                   const std::vector<std::pair<unsigned, unsigned>> &kernels) {
  std::string prefix = file.substr(file.rfind('/') + 1) + ":";
  auto inKernel = [&](const std::string &site) {
    if (site.rfind(prefix, 0) != 0) return false;
    unsigned line = static_cast<unsigned>(std::stoul(site.substr(prefix.size())));
    return std::any_of(kernels.begin(), kernels.end(), [&](auto &r) { return r.first <= line && line <= r.second; });
  };
  std::vector<BlockFacts> facts;
  for (const SassBlock &b : blocks) {
    BlockFacts block{instructionMix(f, b.begin, b.end), b.dominator, b.loop, {}};
    block.mix.loadWaits = b.loadWaits;
    for (size_t i = b.begin; i < b.end; ++i) {
      const SassInstruction &in = f.instructions[i];
      if ((in.globalLoad() || in.globalStore() || in.sharedAccess()) && inKernel(in.site))
        ++block.sites[{in.site, in.globalStore() || in.base() == "STS", in.sharedAccess()}];
    }
    facts.push_back(std::move(block));
  }
  return facts;
}

}  // namespace

InstructionMix instructionMix(const SassFunction &f, size_t begin, size_t end) {
  InstructionMix mix;
  for (size_t i = begin; i < end; ++i) {
    const SassInstruction &in = f.instructions[i];
    std::string op = in.base();
    ++mix.instructions;
    mix.mufu += op == "MUFU";
    mix.calls += op == "CALL";
    mix.branches += op == "BRA";
    mix.bssy += op == "BSSY";
    mix.localAccesses += op == "LDL" || op == "STL";
    mix.control += op == "BRA" || op == "BSSY" || op == "BSYNC" || op == "CALL" || op == "RET";
    if (in.globalLoad()) {
      ++mix.loadWidths[in.accessBytes()];
      mix.globalLoadBytes += in.accessBytes();
    } else if (in.globalStore()) {
      ++mix.storeWidths[in.accessBytes()];
      mix.globalStoreBytes += in.accessBytes();
    } else if (in.sharedAccess()) {
      mix.sharedBytes += in.accessBytes();
    }
  }
  return mix;
}

double KernelSass::loopInstructionsPerByte() const {
  return loop && loop->globalBytes() ? loop->instructions / (32.0 * loop->globalBytes()) : 0;
}

void readResources(const std::string &ptxasLog, const std::string &resUsage, KernelSass &facts) {
  // ptxas -v: "Function properties for SYM\n    N bytes stack frame, N bytes spill stores, N bytes
  // spill loads" and, after "Compiling entry function 'SYM'", "Used N registers".
  size_t props = ptxasLog.find("Function properties for " + facts.symbol);
  size_t entry = ptxasLog.find("entry function '" + facts.symbol + "'");
  if (props == std::string::npos || entry == std::string::npos)
    throw CudaError(facts.kernel + ": ptxas's -v report does not mention " + facts.symbol + ":\n" + ptxasLog);
  size_t propsEnd = ptxasLog.find('\n', ptxasLog.find('\n', props) + 1);
  facts.spillStoreBytes = numberBefore(ptxasLog, props, propsEnd, " bytes spill stores");
  facts.spillLoadBytes = numberBefore(ptxasLog, props, propsEnd, " bytes spill loads");
  size_t nextEntry = ptxasLog.find("entry function '", entry + 1);
  facts.registers = numberBefore(ptxasLog, entry, nextEntry, " registers");
  // cuobjdump -res-usage: " Function SYM:\n  REG:56 STACK:0 SHARED:0 LOCAL:0 ...".
  size_t fn = resUsage.find("Function " + facts.symbol + ":");
  if (fn == std::string::npos)
    throw CudaError(facts.kernel + ": cuobjdump -res-usage does not list " + facts.symbol + ":\n" + resUsage);
  size_t lineStart = resUsage.find('\n', fn) + 1;
  std::string line = " " + resUsage.substr(lineStart, resUsage.find('\n', lineStart) - lineStart);
  if (unsigned reg = field(line, "REG"); reg != facts.registers)
    throw CudaError(facts.kernel + ": ptxas reports " + std::to_string(facts.registers) + " registers, the cubin " +
                    std::to_string(reg));
  facts.stackBytes = field(line, "STACK");
  facts.staticSharedBytes = field(line, "SHARED");
  facts.localBytes = field(line, "LOCAL");
}

std::vector<KernelSass> sassFacts(const std::string &source, const std::string &file, const std::string &arch,
                                  const std::vector<std::string> &options, const std::vector<std::string> &kernels,
                                  const BinaryTools &tools) {
  std::vector<std::string> all = options;
  all.push_back("--ptxas-options=-v");
  all.push_back("--generate-line-info");  // sites of the SASS instructions, for the blocks' executions
  cuda::Nvrtc::Program program =
      cuda::Nvrtc::get().compileProgram(source, file, arch, all, cuda::Nvrtc::Output::Cubin, kernels);
  std::string resUsage = tools.resourceUsage(program.binary);
  std::vector<SassFunction> functions = parseSass(tools.disassemble(program.binary));
  std::vector<std::pair<unsigned, unsigned>> kernelRanges = kernelLines(source);
  std::vector<KernelSass> facts;
  for (const std::string &kernel : kernels) {
    KernelSass k;
    k.kernel = kernel;
    k.symbol = program.lowered.at(kernel);
    readResources(program.log, resUsage, k);
    auto fn = std::find_if(functions.begin(), functions.end(), [&](const SassFunction &f) { return f.symbol == k.symbol; });
    if (fn == functions.end()) throw CudaError(file + ": " + kernel + " (" + k.symbol + ") is missing from nvdisasm's output");
    k.all = instructionMix(*fn, 0, fn->instructions.size());
    const std::vector<SassBlock> blocks = basicBlocks(*fn);
    if (std::optional<SassLoop> loop = hotLoop(*fn)) {
      k.loop = instructionMix(*fn, loop->begin, loop->end + 1);
      k.loop->loadWaits = exposedLoadWaits(blocks, *loop);
    }
    k.blocks = blockFacts(*fn, blocks, file, kernelRanges);
    facts.push_back(std::move(k));
  }
  return facts;
}

}  // namespace scanforge::gpu
