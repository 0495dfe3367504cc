// scanc: the scanforge compiler driver. Checks .scan files and prints every stage of compilation.
// Exit codes: 0 success, 1 a problem in the user's input, 2 an internal error (a bug in scanforge).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>

#include "compiler/api/CompiledModuleImpl.h"
#include "dsl/Parser.h"
#include "dsl/Printer.h"
#include "dsl/Sema.h"
#include "tools/scanc/CudaCommands.h"
#include "tools/scanc/GpuModel.h"
#include "tools/scanc/Run.h"

namespace {

using namespace scanforge;

constexpr int kOk = 0;
constexpr int kUserError = 1;
constexpr int kInternalError = 2;

const char *kExamples = R"(Stages for --dump:
  ast               the checked syntax tree, as re-parsable .scan text
  scan              the scan dialect as lowered from the DSL
  after-each-pass   the module after every pass of the pipeline (forward and generated backward)
  halide            the Halide statements of the CPU programs (forward, then backward)
  cpu-asm           the CPU programs' machine code for this host, as assembly (forward, then backward)
  cuda              the generated CUDA kernels and their launch manifest (docs/cuda.md)
  ptx               the kernels' PTX from NVRTC for --arch (default sm_90); --dim n=16 sizes a
                    register dimension

Examples:
  scanc check models/*.scan                       check files; print diagnostics
  scanc --dump=ast models/mingru.scan             print the checked syntax tree
  scanc --dump=after-each-pass models/mingru.scan watch the backward pass being generated
  scanc --dump=cuda models/mingru.scan            the CUDA kernels, forward and backward
  scanc --emit-package pkg models/*.scan          a kernel package for a GPU machine without MLIR
  scanc run models/selective_ssm.scan --shape b=2,t=64,d=16,n=4
                                                  forward+backward on the CPU vs the reference
  scanc --gpu-model models/mingru.scan --shape b=64,t=4096,d=1024
                                                  predicted H100 time per kernel (docs/cuda.md)
)";

const std::vector<std::string> kStages = {"ast", "scan", "after-each-pass", "halide", "cpu-asm", "cuda", "ptx"};

// Loads, parses and checks one file; prints diagnostics to stderr. Returns false on any error.
bool loadAndCheck(const std::string &path, std::optional<dsl::SourceFile> &file, dsl::Module &module) {
  std::string error;
  file = dsl::SourceFile::load(path, error);
  if (!file) {
    std::cerr << "scanc: error: " << error << "\n";
    return false;
  }
  dsl::DiagnosticEngine diags(*file);
  bool ok = dsl::parseAndCheck(*file, diags, module);
  diags.render(std::cerr);
  return ok;
}

std::string summary(const dsl::Recurrence &rec) {
  std::ostringstream os;
  os << rec.name.name << ": " << (rec.reverse ? "reverse" : "forward") << " scan over t; ";
  auto ports = [&](const char *label, const std::vector<dsl::Port> &list) {
    os << list.size() << " " << label << (list.size() == 1 ? "" : "s");
    if (!list.empty()) {
      os << " (";
      for (size_t i = 0; i < list.size(); ++i)
        os << (i ? " " : "") << list[i].name.name << dsl::formatDims(rec, list[i].dimIds);
      os << ")";
    }
  };
  ports("input", rec.inputs);
  os << ", ";
  ports("parameter", rec.params);
  os << ", " << rec.checked.states.size() << " state" << (rec.checked.states.size() == 1 ? "" : "s") << " (";
  for (size_t i = 0; i < rec.checked.states.size(); ++i)
    os << (i ? " " : "") << rec.checked.states[i].name << dsl::formatDims(rec, rec.checked.states[i].dims);
  os << "), ";
  ports("output", rec.outputs);
  os << "; linear in every state";
  return os.str();
}

int runCheck(const std::vector<std::string> &files) {
  int status = kOk;
  for (const std::string &path : files) {
    std::optional<dsl::SourceFile> file;
    dsl::Module module;
    if (!loadAndCheck(path, file, module)) {
      status = kUserError;
      continue;
    }
    for (const dsl::Recurrence &rec : module.recurrences) std::cout << path << ": " << summary(rec) << "\n";
  }
  return status;
}

std::vector<std::string> splitList(const std::string &list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

int runDump(const std::vector<std::string> &stages, const std::vector<std::string> &files,
            const tools::CudaOptions &cudaOptions, const CompileOptions &options) {
  std::set<std::string> want;
  for (const std::string &stage : stages) {
    if (std::find(kStages.begin(), kStages.end(), stage) == kStages.end()) {
      std::cerr << "scanc: error: unknown stage '" << stage << "' in --dump\nhint: stages are:";
      for (const std::string &s : kStages) std::cerr << " " << s;
      std::cerr << "\n";
      return kUserError;
    }
    want.insert(stage);
  }
  int status = kOk;
  for (const std::string &path : files) {
    // One parse, lowering and compile per file; every stage prints from it.
    std::string error;
    std::optional<dsl::SourceFile> file = dsl::SourceFile::load(path, error);
    if (!file) {
      std::cerr << "scanc: error: " << error << "\n";
      status = kUserError;
      continue;
    }
    BuildHooks hooks;
    if (want.count("ast"))
      hooks.checked = [&](const dsl::Module &ast) {
        std::cout << "# ----- " << path << ": checked AST -----\n";
        dsl::printModule(std::cout, ast, /*annotate=*/true);
        for (const dsl::Recurrence &rec : ast.recurrences) std::cout << "# " << summary(rec) << "\n";
        std::cout.flush();
      };
    hooks.lowered = want.count("scan") ? &llvm::outs() : nullptr;
    hooks.afterEachPass = want.count("after-each-pass") ? &llvm::outs() : nullptr;
    hooks.diagnostics = &llvm::errs();
    std::optional<CompiledModule> module;
    try {
      module = buildModule(path, file->text(), options, hooks);
    } catch (const CompileError &e) {
      llvm::errs() << e.what();
      if (std::string(e.what()).rfind("internal error", 0) == 0) return kInternalError;
      status = kUserError;
      continue;
    }
    llvm::outs().flush();
    if (want.count("halide"))
      for (const std::string &name : module->recurrences()) {
        Recurrence rec = module->recurrence(name);
        std::cout << "// ----- " << path << ": Halide CPU program, forward -----\n" << rec.halideStatement(false)
                  << "// ----- " << path << ": Halide CPU program, backward -----\n" << rec.halideStatement(true);
      }
    if (want.count("cpu-asm"))
      for (const std::string &name : module->recurrences()) {
        Recurrence rec = module->recurrence(name);
        std::cout << "# ----- " << path << ": CPU program, forward -----\n" << rec.cpuAssembly(false)
                  << "# ----- " << path << ": CPU program, backward -----\n" << rec.cpuAssembly(true);
      }
    if (want.count("cuda") || want.count("ptx")) {
      int cudaStatus;
      try {
        cudaStatus = tools::dumpCuda(*module, want.count("cuda"), want.count("ptx"), cudaOptions);
      } catch (const CompileError &e) {
        std::cerr << e.what();
        cudaStatus = kUserError;
      }
      if (cudaStatus == kInternalError) return cudaStatus;
      status = std::max(status, cudaStatus);
    }
    llvm::outs().flush();
  }
  return status;
}

int run(int argc, char **argv) {
  CLI::App app{"scanc: compile linear recurrences written in the scanforge DSL", "scanc"};
  app.footer(kExamples);
  app.require_subcommand(0, 1);

  std::string dumpList;
  std::vector<std::string> files;
  app.add_option("--dump", dumpList, "print these stages of FILE, comma-separated (see below)");
  app.add_option("files", files, "the .scan files")->check(CLI::ExistingFile);
  tools::CudaOptions cudaOptions;
  tools::addCudaOptions(app, cudaOptions);
  bool verbose = false;
  app.add_flag("--verbose", verbose, "print the time of each stage (parse, compile, emission, JIT) on stderr");
  bool bf16Ports = false;
  app.add_flag("--bf16-ports", bf16Ports,
               "store every input and output port as bf16, as if declared `: bf16` (states and arithmetic stay f32), "
               "for --dump, --emit-package and --gpu-model");
  std::string gpuModelFile, gpuModelShape;
  auto *gpuModelOption = app.add_option("--gpu-model", gpuModelFile,
                                        "predict FILE's kernels on a GPU (--arch, default sm_90) at --shape, without one")
                             ->check(CLI::ExistingFile);
  app.add_option("--shape", gpuModelShape, "sizes for --gpu-model, e.g. b=64,t=4096,d=1024")->needs(gpuModelOption);
  std::string gpuName = "h100";
  app.add_option("--gpu", gpuName, "the GPU --gpu-model predicts for: h100 (default) or h200")->needs(gpuModelOption);
  std::string predictionsFile;
  app.add_option("--predictions", predictionsFile,
                 "also add --gpu-model's per-call predictions to this JSON file (scan-gpu-bench --predictions reads it)")
      ->needs(gpuModelOption);
  tools::ForcedPlanOptions forcedOptions(app, "predict", gpuModelOption);

  auto *check = app.add_subcommand("check", "check .scan files and print diagnostics");
  std::vector<std::string> checkFiles;
  check->add_option("files", checkFiles, "the .scan files")->required();

  auto *runCmd = app.add_subcommand("run", "run forward+backward on the CPU with random inputs; compare with the reference");
  std::string runFile, runShape, runRecurrence;
  unsigned runSeed = 1;
  runCmd->add_option("file", runFile, "the .scan file")->required();
  runCmd->add_option("--shape", runShape, "sizes, e.g. b=2,t=64,d=16 (b, t and every dimension)")->required();
  runCmd->add_option("--recurrence", runRecurrence, "which recurrence, when the file has several");
  runCmd->add_option("--seed", runSeed, "random seed");
  runCmd->add_flag("--verbose", verbose, "print the time of each stage on stderr");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? kOk : kUserError;
  }
  if (*check) return runCheck(checkFiles);
  CompileOptions compile;
  compile.verbose = verbose;
  compile.bf16Ports = bf16Ports;
  if (*runCmd) {
    try {
      return scanc::runAndCompare(runFile, runShape, runRecurrence, runSeed, verbose);
    } catch (const CompileError &e) {
      std::cerr << e.what();
      return kUserError;
    } catch (const ShapeError &e) {
      std::cerr << "scanc: error: " << e.what() << "\n";
      return kUserError;
    }
  }
  if (!gpuModelFile.empty()) {
    if (gpuModelShape.empty()) {
      std::cerr << "scanc: error: --gpu-model needs --shape, e.g. --shape b=64,t=4096,d=1024\n";
      return kUserError;
    }
    try {
      tools::ForcedPlan forced = forcedOptions.forced();
      forced.refusePredictions(predictionsFile);
      return tools::gpuModel(gpuModelFile, gpuModelShape, cudaOptions.arch, gpuName, predictionsFile, forced, compile);
    } catch (const cuda::CudaError &e) {
      std::cerr << "scanc: error: " << e.what() << "\n";
      return kUserError;
    } catch (const CompileError &e) {
      std::cerr << e.what();
      return std::string(e.what()).rfind("internal error", 0) == 0 ? kInternalError : kUserError;
    }
  }
  if (files.empty()) {
    std::cerr << "scanc: error: no input files\n" << app.help();
    return kUserError;
  }
  if (!cudaOptions.packageDir.empty()) {
    try {
      return tools::emitPackage(cudaOptions, files, compile);
    } catch (const CompileError &e) {
      std::cerr << e.what();
      return std::string(e.what()).rfind("internal error", 0) == 0 ? kInternalError : kUserError;
    }
  }
  if (!dumpList.empty()) return runDump(splitList(dumpList), files, cudaOptions, compile);
  return runCheck(files);
}

}  // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::cerr << "scanc: internal error: " << e.what() << "\nplease report this as a bug in scanforge\n";
    return kInternalError;
  }
}
