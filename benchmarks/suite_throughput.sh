#!/usr/bin/env bash
# The whole case library on each EP named, packed (the default, --pack 64) and one case per session (--pack 1):
# wall time of each run, and whether the two gave identical results (benchmarks/compare_runs.py).
#     bash benchmarks/suite_throughput.sh OUT_DIR EP [EP ...]      e.g. /tmp/suite cuda webgpu
# Each run's reports go to OUT_DIR/<ep>-pack<N>/ and its console output to OUT_DIR/<ep>-pack<N>.log.
set -uo pipefail
out=$1
shift
mkdir -p "$out"
for ep in "$@"; do
  for pack in 64 1; do
    run="$out/$ep-pack$pack"
    start=$EPOCHREALTIME
    python3 -m conformance run cases --ep "$ep" --pack "$pack" --report-dir "$run" >"$run.log" 2>&1
    code=$?
    end=$EPOCHREALTIME
    echo "$ep --pack $pack: exit $code, $(python3 -c "print(round($end - $start, 1))") s wall; $(grep -m1 '^== ' "$run.log")"
  done
  python3 benchmarks/compare_runs.py "$out/$ep-pack64/results.json" "$out/$ep-pack1/results.json"
done
