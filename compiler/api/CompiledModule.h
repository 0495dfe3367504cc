// A compiled .scan file: parsed, checked, lowered to the `scan` dialect and compiled (forward
// recurrences and their generated backwards) ONCE; every target is built from that one IR and
// from the dialect's analyses, computed once and cached (docs/ir.md):
//
//   scanforge::CompiledModule m = scanforge::compileModule("models/mingru.scan");
//   scanforge::Recurrence rec = m.recurrence();   // the CPU backend (Halide), as compile() gives
//   m.writeKernelPackage("pkg");                  // CUDA kernels, manifest and golden vectors
//
// The float64 reference interpreter and the CUDA kernels of a module are also reachable inside
// the repository through CompiledModuleImpl.h (tools and tests).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/api/Scanforge.h"

namespace scanforge {

struct BuildHooks;  // CompiledModuleImpl.h

class CompiledModule {
 public:
  const std::string &path() const;
  // The forward recurrences of the file, in file order.
  std::vector<std::string> recurrences() const;
  // One recurrence on the CPU backend; "" names the only one (CompileError when there are several
  // or none by that name, listing those there are).
  Recurrence recurrence(const std::string &name = "") const;
  // The compiled module (forward and backward recurrences) as MLIR text.
  std::string scanIR() const;
  // Writes the CUDA kernel package of every recurrence (sources, manifest.json, goldens/) to `dir`
  // (see docs/cuda.md); returns a one-line summary. CompileError on what the CUDA backend cannot
  // compile, PackageError when the package cannot be written.
  std::string writeKernelPackage(const std::string &dir) const;

  struct Impl;
  const Impl &impl() const { return *impl_; }

 private:
  friend CompiledModule buildModule(const std::string &, const std::string &, const CompileOptions &, const BuildHooks &);
  std::shared_ptr<Impl> impl_;
};

// Compiles every recurrence of a .scan file (CompileOptions::recurrence is ignored here; it picks
// the recurrence compile() returns). CompileError holds the rendered diagnostics.
CompiledModule compileModule(const std::string &path, const CompileOptions &options = {});
CompiledModule compileModuleSource(const std::string &name, const std::string &source, const CompileOptions &options = {});

// The kernel package cannot be made as asked (two recurrences would share a kernel file, a file
// cannot be written); what() says which.
struct PackageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One kernel package holding the recurrences of several modules (scanc --emit-package a.scan b.scan).
std::string writeKernelPackage(const std::string &dir, const std::vector<CompiledModule> &modules);

}  // namespace scanforge
