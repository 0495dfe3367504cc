// CompiledModule: one compile of a .scan file serving every target — the CPU recurrences, the
// CUDA kernel package — with errors that name what is wrong.
#include <filesystem>
#include <fstream>

#include "compiler/api/CompiledModule.h"
#include "tests/compiler/CompilerTestUtil.h"

namespace scanforge::test {
namespace {

const char *kTwo = R"(
recurrence first(x[d]) -> h[d] {
  h = 0.5 * h + x
}
recurrence second(x[d]; p[d]) -> s[d] {
  s = sigmoid(p) * s + x
}
)";

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

TEST(CompiledModule, ListsItsForwardRecurrencesAndServesEach) {
  CompiledModule m = compileModuleSource("two.scan", kTwo);
  EXPECT_EQ(m.path(), "two.scan");
  EXPECT_EQ(m.recurrences(), (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(m.recurrence("second").signature().params.size(), 1u);
  EXPECT_EQ(m.recurrence("first").signature().name, "first");
  // The module's IR holds both recurrences and their generated backwards.
  std::string ir = m.scanIR();
  EXPECT_NE(ir.find("@first.backward"), std::string::npos);
  EXPECT_NE(ir.find("@second.backward"), std::string::npos);
}

TEST(CompiledModule, AmbiguousOrUnknownRecurrenceIsACompileError) {
  CompiledModule m = compileModuleSource("two.scan", kTwo);
  EXPECT_EQ(errorOf([&] { m.recurrence(); }),
            "two.scan: several recurrences; choose one with CompileOptions::recurrence (it has: first second)");
  EXPECT_EQ(errorOf([&] { m.recurrence("third"); }), "two.scan: no recurrence named 'third' (it has: first second)");
  CompileOptions options;
  options.recurrence = "third";
  EXPECT_THROW(compileSource("two.scan", kTwo, options), CompileError);
}

// CompileOptions::bf16Ports (scanc --bf16-ports) compiles the file the declared-bf16 one does: the
// same IR, forward and generated backward, and the signature's ports are bf16.
TEST(CompiledModule, Bf16PortsCompileAsIfDeclaredBf16) {
  CompileOptions options;
  options.bf16Ports = true;
  CompiledModule overridden = compileModuleSource("two.scan", kTwo, options);
  CompiledModule declared = compileModuleSource("two.scan", R"(
recurrence first(x[d]: bf16) -> h[d]: bf16 {
  h = 0.5 * h + x
}
recurrence second(x[d]: bf16; p[d]) -> s[d]: bf16 {
  s = sigmoid(p) * s + x
}
)");
  EXPECT_EQ(overridden.scanIR(), declared.scanIR());
  EXPECT_NE(overridden.scanIR(), compileModuleSource("two.scan", kTwo).scanIR());
  Recurrence second = overridden.recurrence("second");
  EXPECT_EQ(second.signature().inputs[0].type, ElemType::BF16);
  EXPECT_EQ(second.signature().outputs[0].type, ElemType::BF16);
  EXPECT_EQ(second.signature().params[0].type, ElemType::F32);  // parameters stay f32
}

TEST(CompiledModule, DslErrorsAreRenderedDiagnostics) {
  std::string error = errorOf([] { compileModuleSource("bad.scan", "recurrence f(x[d]) -> h[d] {\n  h = sigmod(x) * h\n}\n"); });
  EXPECT_NE(error.find("bad.scan:2:7: error: unknown function 'sigmod'"), std::string::npos) << error;
}

TEST(CompiledModule, WritesAKernelPackageWithGoldens) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("scanforge-package-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  CompiledModule m = compileModule(std::string(SCANFORGE_SOURCE_DIR) + "/models/mingru.scan");
  std::string summary = m.writeKernelPackage(dir.string());
  EXPECT_EQ(summary, "wrote " + dir.string() + ": 2 kernel sources, manifest.json, 2 golden test vectors");
  EXPECT_TRUE(std::filesystem::exists(dir / "manifest.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "mingru.cu"));
  EXPECT_TRUE(std::filesystem::exists(dir / "mingru_backward.cu"));
  EXPECT_TRUE(std::filesystem::exists(dir / "goldens" / "mingru.B2_T37.json"));
  std::filesystem::remove_all(dir);
  // Two modules whose kernels would share a file: the package is refused, naming both.
  CompiledModule clash = compileModuleSource("clash.scan", "recurrence mingru_backward(x[d]) -> h[d] {\n  h = 0.5 * h + x\n}\n");
  std::string error = errorOf([&] { writeKernelPackage(dir.string(), {m, clash}); });
  EXPECT_NE(error.find("would share the kernel file 'mingru_backward.cu'"), std::string::npos) << error;
  EXPECT_THROW(writeKernelPackage("/proc/scanforge-cannot-write-here", {m}), PackageError);
}

}  // namespace
}  // namespace scanforge::test
