#!/usr/bin/env bash
# The main job: install dependencies, build, and train a small minGRU character language model on
# the CPU for 250 steps, 0.5 to 2 minutes on 2 cores (models/configs/quickstart.json), printing the loss as it falls and
# a text sample at the end. Optional argument: the text file to train on (default: the Shakespeare
# corpus at ../shared/data/tinyshakespeare.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so any clone of the project reuses the cache.
export CCACHE_BASEDIR="$PWD"
tools/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default

data=${1:-../shared/data/tinyshakespeare.txt}
if [ ! -f "$data" ]; then
  # No corpus at hand: train on this repository's own documentation so the run still works.
  echo "quickstart: $data not found; training on the repository's documentation instead" >&2
  data=build/quickstart-corpus.txt
  cat README.md docs/*.md > "$data"
fi
build/bin/scan-train models/configs/quickstart.json --set "task.data=$data"
