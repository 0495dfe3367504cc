#!/usr/bin/env bash
# GPU validation in one command, on a machine with a GPU but no MLIR, no Halide and no apt (docs/cuda.md,
# "Running on a GPU machine"). PACKAGE_DIR comes from tools/package-for-gpu.sh on a machine with the
# compiler: the kernel package, the model's predictions.json and deps/ (nlohmann-json, CLI11, GoogleTest).
#   1. builds the runtime-only preset (build-runtime/; SCANFORGE_WITH_CPU_RUNTIME=OFF: no OpenBLAS),
#      against PACKAGE_DIR/deps when it is there (GoogleTest is built from its sources once);
#   2. runs the tests labelled gpu: the driver smoke test, the package's golden vectors, the
#      benchmark's smoke;
#   3. runs scan-gpu-bench on the package with the model's predictions (PACKAGE/predictions-h200.json
#      on an H200, else predictions.json, the H100's) and, where PyTorch sees the
#      GPU, the peers (tools/scan-gpu-bench/peers.py; layout conversions timed on their own); and,
#      when the package has one, on its bf16 package PACKAGE_DIR/bf16 (the same models with bf16
#      ports, scanc --bf16-ports), after checking that package's golden vectors (scan-package-run);
#      and on the package again with the kernels' stash off (scan-gpu-bench --stash off):
#      the stash's gain is predicted, this measures it;
#   3c. times minGRU and minLSTM (f32, and bf16 where there is that package) under forced plans:
#      the chunk lengths and the stash the planner weighs, each plan at every case that can take it
#      (the planner's choices rest on the model; these are what it chose between); the
#      selective SSM under forced lane counts; and the selective SSM and linear attention with
#      atomic sums over channels (scan-gpu-bench --atomic-sums) beside the default rows;
#   4. writes REPORT.{md,json} (default gpu-report): the machine, the commit, each test, the
#      copy bandwidth, every kernel's time and fraction of copy, the prediction beside it, the peers.
# usage: tools/gpu-validate.sh [--no-peers] [--no-sweep] PACKAGE_DIR [REPORT] [-- EXTRA_CMAKE_ARGS...]
#   --no-peers  leave the peers out (torch.compile alone can take minutes on a short lease)
#   --no-sweep  leave out step 3c (about a minute on an H200)
# Exit: 0 every test passed and the benchmark ran; 1 a build, test or benchmark failure; 77 no GPU.
set -uo pipefail
usage() { echo "usage: tools/gpu-validate.sh [--no-peers] [--no-sweep] PACKAGE_DIR [REPORT] [-- EXTRA_CMAKE_ARGS...]" >&2; exit 1; }
fail() { echo "gpu-validate: error: $*" >&2; exit 1; }

with_peers=1
with_sweep=1
while [ "${1:-}" = "--no-peers" ] || [ "${1:-}" = "--no-sweep" ]; do
  if [ "$1" = "--no-peers" ]; then with_peers=0; else with_sweep=0; fi
  shift
done
[ $# -ge 1 ] || usage
package=$(realpath -m "$1"); shift
report=gpu-report
if [ $# -ge 1 ] && [ "$1" != "--" ]; then report=$1; shift; fi
extra=()
if [ $# -ge 1 ]; then
  [ "$1" = "--" ] || usage
  shift
  extra=("$@")
fi
report=$(realpath -m "$report")
cd "$(dirname "$0")/.."

[ -f "$package/manifest.json" ] || fail "$package/manifest.json not found: write the package with tools/package-for-gpu.sh"
command -v cmake >/dev/null || fail "cmake not found (3.25 or newer; 'pip install cmake' where apt is missing)"
command -v python3 >/dev/null || fail "python3 not found (it writes the report and runs the peers)"
generator=()
command -v ninja >/dev/null || generator=(-G "Unix Makefiles")  # the preset's Ninja, where there is one

build=build-runtime
logs=$build/gpu-validate
mkdir -p "$logs"

# 1. Build. GoogleTest, nlohmann-json and CLI11 from the package's deps/ when it has them.
prefix=()
if [ -d "$package/deps" ]; then
  deps=$PWD/build-gpu-deps
  if [ ! -f "$deps/prefix/.complete" ]; then
    echo "gpu-validate: building GoogleTest from $package/deps" >&2
    rm -rf "$deps" && mkdir -p "$deps" && cp -r "$package/deps/prefix" "$deps/prefix"
    cmake -S "$package/deps/googletest-src" -B "$deps/googletest" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$deps/prefix" -DCMAKE_POSITION_INDEPENDENT_CODE=ON >"$logs/deps.log" 2>&1 &&
      cmake --build "$deps/googletest" -j "$(nproc)" >>"$logs/deps.log" 2>&1 &&
      cmake --install "$deps/googletest" >>"$logs/deps.log" 2>&1 ||
      fail "building GoogleTest failed (log: $logs/deps.log)"
    touch "$deps/prefix/.complete"
  fi
  prefix=(-DCMAKE_PREFIX_PATH="$deps/prefix")
fi
echo "gpu-validate: configuring and building the runtime-only preset in $build" >&2
cmake --preset runtime-only "${generator[@]}" -DSCANFORGE_WITH_CPU_RUNTIME=OFF -DSCANFORGE_CUDA_PACKAGE="$package" \
  "${prefix[@]}" "${extra[@]}" >"$logs/configure.log" 2>&1 || fail "configuring failed (log: $logs/configure.log)"
cmake --build "$build" -j "$(nproc)" >"$logs/build.log" 2>&1 || fail "the build failed (log: $logs/build.log)"

# 2. The GPU tests.
echo "gpu-validate: ctest -L '^gpu$'" >&2  # the label gpu exactly, not gpu-model
ctest --test-dir "$build" -L '^gpu$' --output-on-failure --output-junit "$PWD/$logs/ctest.xml" >"$logs/ctest.log" 2>&1
tests_rc=$?

# 3. The benchmark, with the model's predictions and the peers where PyTorch sees a GPU. The
# predictions for this GPU where the model knows it (predictions-h200.json on an H200), else the H100's.
predictions_for() {
  local dir=$1
  if nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -q H200 && [ -f "$dir/predictions-h200.json" ]; then
    echo "$dir/predictions-h200.json"
  elif [ -f "$dir/predictions.json" ]; then
    echo "$dir/predictions.json"
  fi
}
bench_args=("$package" --json "$logs/bench.json")
predictions=$(predictions_for "$package")
[ -n "$predictions" ] && bench_args+=(--predictions "$predictions")
peers="not run: PyTorch with CUDA not found by python3"
if [ "$with_peers" -eq 0 ]; then
  peers="not run (--no-peers)"
elif python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
  bench_args+=(--peers --python python3)
  peers="run (tools/scan-gpu-bench/peers.py; a peer that is not installed shows as unavailable)"
fi
echo "gpu-validate: scan-gpu-bench ${bench_args[*]}" >&2
"$build/bin/scan-gpu-bench" "${bench_args[@]}" >"$logs/bench.md" 2>"$logs/bench.err"
bench_rc=$?

# 3a. The planner's plans without the kernels' stash, beside the plans with it above (no
# predictions: those are of the planner's own plans; no peers: they were timed above).
nostash_bench=("$package" --stash off --json "$logs/bench-nostash.json")
echo "gpu-validate: scan-gpu-bench ${nostash_bench[*]}" >&2
"$build/bin/scan-gpu-bench" "${nostash_bench[@]}" >"$logs/bench-nostash.md" 2>"$logs/bench-nostash.err"
nostash_rc=$?

# 3b. The bf16 package: its golden vectors, then its timings (no peers: they compute in f32).
bf16_args=()
bf16_ok=1
if [ -f "$package/bf16/manifest.json" ]; then
  echo "gpu-validate: scan-package-run $package/bf16" >&2
  "$build/bin/scan-package-run" "$package/bf16" >"$logs/goldens-bf16.log" 2>&1
  goldens_bf16_rc=$?
  bf16_bench=("$package/bf16" --json "$logs/bench-bf16.json")
  bf16_predictions=$(predictions_for "$package/bf16")
  [ -n "$bf16_predictions" ] && bf16_bench+=(--predictions "$bf16_predictions")
  echo "gpu-validate: scan-gpu-bench ${bf16_bench[*]}" >&2
  "$build/bin/scan-gpu-bench" "${bf16_bench[@]}" >"$logs/bench-bf16.md" 2>"$logs/bench-bf16.err"
  bench_bf16_rc=$?
  bf16_args=(--bf16-goldens-rc "$goldens_bf16_rc" --bf16-bench-rc "$bench_bf16_rc")
  for rc in "$goldens_bf16_rc" "$bench_bf16_rc"; do [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || bf16_ok=0; done
fi

# 3c. Forced plans: bench-sweep-N.{md,json,err} and a line "N<TAB>label<TAB>exit code" each in sweep.tsv.
rm -f "$logs"/sweep.tsv "$logs"/bench-sweep-*
sweep_ok=1
if [ "$with_sweep" -eq 1 ]; then
  : >"$logs/sweep.tsv"
  n=0
  for dtype in f32 bf16; do
    pkg=$package
    [ "$dtype" = f32 ] || pkg=$package/bf16
    [ -f "$pkg/manifest.json" ] || continue
    for plan in "chunked 16 on" "chunked 32 on" "chunked 32 off" "chunked 64 off" "chunked 128 off" \
                "sequential 16 on" "sequential 32 on" "sequential 64 on" "sequential 32 off" "sequential 48 off"; do
      read -r strategy chunk stash <<<"$plan"
      n=$((n + 1))
      echo "gpu-validate: scan-gpu-bench $pkg (mingru, minlstm) --strategy $strategy --chunk $chunk --stash $stash" >&2
      "$build/bin/scan-gpu-bench" "$pkg" --recurrence mingru minlstm --strategy "$strategy" --chunk "$chunk" --stash "$stash" \
        --repeats 10 --json "$logs/bench-sweep-${n}.json" >"$logs/bench-sweep-${n}.md" 2>"$logs/bench-sweep-${n}.err"
      rc=$?
      printf '%s\t%s\t%s\n' "$n" "$dtype $strategy L=$chunk stash $stash" "$rc" >>"$logs/sweep.tsv"
      [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || sweep_ok=0  # a refused plan is a row, not a failure
    done
  done
  # The selective SSM's lanes: with 1 lane a thread holds all 16 states, issuing less than half the
  # instructions of 4 lanes, in fewer resident warps; the model's latency term, which treats a
  # warp's instructions as one chain, cannot weigh that (docs/cuda.md, "Limits").
  if grep -q '"selective_ssm"' "$package/manifest.json" 2>/dev/null; then
    for plan in "chunked 8 1" "chunked 16 4" "chunked 16 8" "sequential 16 8" "sequential 64 16"; do
      read -r strategy chunk lanes <<<"$plan"
      n=$((n + 1))
      echo "gpu-validate: scan-gpu-bench $package (selective_ssm) --strategy $strategy --chunk $chunk --lanes $lanes" >&2
      "$build/bin/scan-gpu-bench" "$package" --recurrence selective_ssm --strategy "$strategy" --chunk "$chunk" --lanes "$lanes" \
        --repeats 10 --json "$logs/bench-sweep-${n}.json" >"$logs/bench-sweep-${n}.md" 2>"$logs/bench-sweep-${n}.err"
      rc=$?
      printf '%s\t%s\t%s\n' "$n" "f32 selective_ssm $strategy L=$chunk lanes=$lanes" "$rc" >>"$logs/sweep.tsv"
      [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || sweep_ok=0
    done
  fi
  # Per-step sums over channels added atomically (--atomic-sums) beside the default rows in a fixed
  # order (step 3): the price of reproducible bits is predicted, this measures it.
  for rec in selective_ssm linear_attention; do
    grep -q "\"$rec\"" "$package/manifest.json" 2>/dev/null || continue
    n=$((n + 1))
    echo "gpu-validate: scan-gpu-bench $package ($rec) --atomic-sums" >&2
    "$build/bin/scan-gpu-bench" "$package" --recurrence "$rec" --atomic-sums \
      --repeats 10 --json "$logs/bench-sweep-${n}.json" >"$logs/bench-sweep-${n}.md" 2>"$logs/bench-sweep-${n}.err"
    rc=$?
    printf '%s\t%s\t%s\n' "$n" "f32 $rec planner's plan, atomic sums" "$rc" >>"$logs/sweep.tsv"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || sweep_ok=0
  done
fi

# 4. The report.
report_args=()
[ -n "$predictions" ] && report_args+=(--predictions "$predictions")
python3 tools/gpu-validate-report.py --package "$package" "${report_args[@]}" --logs "$logs" --tests-rc "$tests_rc" \
  --bench-rc "$bench_rc" --nostash-bench-rc "$nostash_rc" --peers "$peers" "${bf16_args[@]}" --out "$report" ||
  fail "writing the report failed"
echo "gpu-validate: wrote ${report}.md and ${report}.json" >&2
if [ "$bench_rc" -eq 77 ]; then
  echo "gpu-validate: no GPU here (the GPU tests were skipped); nothing was measured" >&2
  exit 77
fi
[ "$tests_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ] && [ "$nostash_rc" -eq 0 ] && [ "$bf16_ok" -eq 1 ] && [ "$sweep_ok" -eq 1 ] || exit 1
