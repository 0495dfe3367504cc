#!/usr/bin/env bash
# run-fuzz.sh FUZZER CORPUS_DIR SEED_DIR DICT SECONDS: fuzz for SECONDS, print the executions count.
set -euo pipefail
fuzzer=$1 corpus=$2 seeds=$3 dict=$4 seconds=$5
mkdir -p "$corpus"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"$fuzzer" -max_total_time="$seconds" -print_final_stats=1 -dict="$dict" -max_len=4096 \
  -artifact_prefix="$corpus/../fuzz-" "$corpus" "$seeds" >"$log" 2>&1 || status=$?
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|ERROR|SUMMARY|==[0-9]+==" "$log" || true
if [ $status -ne 0 ]; then
  tail -n 60 "$log"
  echo "fuzzing found a failure (exit $status); the crashing input is in $(dirname "$corpus")/fuzz-*"
fi
exit $status
