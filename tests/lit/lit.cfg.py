# lit configuration for scanforge's textual tests: scanc output and (later) scan-opt pass tests.
import os
import lit.formats

config.name = "scanforge"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".scan", ".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.scanforge_binary_dir, "lit")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in", "expect-exit.sh"]

config.substitutions.append(("%models", os.path.join(config.scanforge_source_dir, "models")))
config.substitutions.append(("%expect-exit", os.path.join(config.test_source_root, "expect-exit.sh")))
config.environment["PATH"] = os.pathsep.join(
    [config.scanforge_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# scanc --gpu-model reads SASS with nvdisasm and cuobjdump (tools/install-deps.sh).
if config.scanforge_nvdisasm:
    config.available_features.add("gpu-tools")
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
