#!/usr/bin/env bash
# Installs every build and test dependency of scanforge from Debian 12 packages.
# Idempotent: packages already present are skipped, so a second run is quick and offline.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools   # MLIR dialect, lit, FileCheck
  libhalide14-0-dev                                        # CPU backend
  clang-14 libclang-rt-14-dev                              # libFuzzer for the DSL fuzz target
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev nlohmann-json3-dev libcli11-dev
  python3 python3-torch python3-numpy                      # external oracle (PyTorch autograd)
  libtorch-dev python3-pytest                              # the PyTorch package (python/) and its tests
  gnuplot-nox                                              # loss plots of the trainer
)

# Development-side GPU instruments from PyPI (never a product dependency): cuobjdump and nvdisasm
# for the SASS facts of tools/gpu/sass, installed into .gpu-tools/ (gitignored) where CMake finds
# them (SCANFORGE_GPU_TOOLS_BIN). Skipped when both are already there.
install_gpu_tools() {
  local dir; dir="$(cd "$(dirname "$0")/.." && pwd)/.gpu-tools"
  if [ -x "$dir/nvidia/cu13/bin/cuobjdump" ] && [ -x "$dir/nvidia/cu13/bin/nvdisasm" ]; then
    echo "install-deps: cuobjdump and nvdisasm present in $dir"
    return
  fi
  echo "install-deps: installing cuobjdump and nvdisasm (PyPI) into $dir"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --upgrade --target "$dir" \
    "nvidia-cuda-cuobjdump==13.*" "nvidia-cuda-nvdisasm==13.*"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  install_gpu_tools
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_gpu_tools
