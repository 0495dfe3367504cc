#!/usr/bin/env bash
# Installs dependencies, builds with warnings as errors and sanitizers (preset "ci"), and runs every
# test: unit tests, lit/FileCheck tests and 60 s of fuzzing. GPU tests skip themselves without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so any clone of the project reuses the cache.
export CCACHE_BASEDIR="$PWD"
tools/install-deps.sh
cmake --preset ci >/dev/null
cmake --build --preset ci
ctest --preset ci -j "$(nproc)"
