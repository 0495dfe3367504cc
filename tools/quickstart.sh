#!/usr/bin/env bash
# The main job: install dependencies, build, and compile models/mingru.scan, printing its checked
# AST and a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default
build/bin/scanc --dump=ast models/mingru.scan
