#!/usr/bin/env bash
# On a machine with the compiler: writes OUT_DIR, everything a GPU machine without MLIR or Halide
# needs for tools/gpu-validate.sh (docs/cuda.md, "Running on a GPU machine"):
#   OUT_DIR/            the kernel package of models/*.scan with its golden vectors
#   OUT_DIR/source-commit      the commit the kernels were generated from
#   OUT_DIR/predictions.json   the performance model's prediction for every case scan-gpu-bench
#                              times (its --list-cases), from scanc --gpu-model --predictions, for
#                              an H100; predictions-h200.json the same for an H200 (--gpu h200)
#   OUT_DIR/bf16/       minGRU and minLSTM with every port stored as bf16 (scanc --bf16-ports): a
#                       package of its own (the recurrences keep their names), with its goldens,
#                       source-commit and predictions.json
#   OUT_DIR/deps/       CMake packages the GPU machine may lack (it has no apt): nlohmann-json and
#                       CLI11 (headers) and GoogleTest (sources), copied from this machine's Debian
#                       packages; gpu-validate.sh puts them first on CMake's search path.
# usage: tools/package-for-gpu.sh OUT_DIR [BUILD_DIR]   (BUILD_DIR: a build with scanc; default build)
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: tools/package-for-gpu.sh OUT_DIR [BUILD_DIR]" >&2
  exit 1
fi
out=$(realpath -m "$1")
cd "$(dirname "$0")/.."
build=${2:-build}
for tool in scanc scan-gpu-bench; do
  if [ ! -x "$build/bin/$tool" ]; then
    echo "package-for-gpu: error: $build/bin/$tool not found; build first: cmake --preset default && cmake --build --preset default" >&2
    exit 1
  fi
done

"$build/bin/scanc" --emit-package "$out" models/*.scan
# The commit the kernels were generated from ("+changes" when the checkout had uncommitted ones).
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
echo "$commit" >"$out/source-commit"

# The model's prediction for each case the benchmark times (same cases, same shapes, same keys), for
# each GPU the model knows: predictions.json (H100) and predictions-h200.json.
# usage: predict PACKAGE [SCANC_OPTION...]
predict() {
  local package=$1
  shift
  for gpu in h100 h200; do
    local file=$package/predictions.json
    [ "$gpu" = h100 ] || file=$package/predictions-$gpu.json
    rm -f "$file"
    "$build/bin/scan-gpu-bench" "$package" --list-cases | while read -r recurrence shape; do
      echo "package-for-gpu: predicting $recurrence at $shape on $gpu $*" >&2
      "$build/bin/scanc" "$@" --gpu "$gpu" --gpu-model "models/$recurrence.scan" --shape "$shape" --predictions "$file" >/dev/null
    done
  done
}
predict "$out"

# The bf16 package: the same benchmark cases with bf16 activations (tools/gpu-validate.sh times it).
"$build/bin/scanc" --bf16-ports --emit-package "$out/bf16" models/mingru.scan models/minlstm.scan
echo "$commit" >"$out/bf16/source-commit"
predict "$out/bf16" --bf16-ports

# Build dependencies, for a GPU machine without Debian's packages.
deps="$out/deps"
rm -rf "$deps"
mkdir -p "$deps/prefix/include" "$deps/prefix/share/cmake"
for header_dir in nlohmann CLI; do
  if [ ! -d "/usr/include/$header_dir" ]; then
    echo "package-for-gpu: error: /usr/include/$header_dir missing: run tools/install-deps.sh" >&2
    exit 1
  fi
  cp -r "/usr/include/$header_dir" "$deps/prefix/include/"
done
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$deps/prefix/share/cmake/"
cp -r /usr/src/googletest "$deps/googletest-src"
echo "package-for-gpu: wrote $out (kernel package, predictions.json, bf16/, deps/); on the GPU machine: tools/gpu-validate.sh $out" >&2
