#!/usr/bin/env bash
# The H100 DirectML version matrix (reports/README.md, "DirectML across versions"): every DirectML.dll that
# onnxruntime-directml shipped beside the newest onnxruntime.dll, and two beside onnxruntime.dll 1.19.2; then the
# feature-level gate on the same builds. Ran on the GPU machine after `source .wine-gpu/env.sh`, with the DirectML
# cache (.dmlcache: the prebuilt runner) and the older wheels (.dmlc1-4/wheels: no network there) carried along.
# Usage: bash run.sh [CASES...]   (default: cases); writes into $OUT.
set -uo pipefail
mkdir -p /tmp/dc/wheels && cp -rn .dmlcache/. /tmp/dc/ && for d in .dmlc*/wheels; do [ -d "$d" ] && cp -n "$d"/* /tmp/dc/wheels/; done
ls /tmp/dc/wheels
export DMLCONF_CACHE=/tmp/dc PYTHONPATH=$PWD
[ -d /tmp/dmlwine/bin ] && export PATH=/tmp/dmlwine/bin:$PATH
EPS=(dml:directml=1.13.1 dml:directml=1.14.1 dml:directml=1.15.1 dml:directml=1.15.2 dml:directml=1.15.4
     dml:directml=1.13.1,ort=1.19.2 dml:directml=1.15.1,ort=1.19.2)
args=(); for e in "${EPS[@]}"; do args+=(--ep "$e"); done
R=/tmp/matrix; rm -rf $R; mkdir -p "$OUT"
python3 -m conformance doctor >"$OUT/doctor.txt" 2>&1; echo "doctor rc=$?" >>"$OUT/doctor.txt"
SECONDS=0
python3 -m conformance run "${@:-cases}" "${args[@]}" --report-dir $R >"$OUT/run.txt" 2>&1; echo "run rc=$? seconds=$SECONDS" >>"$OUT/run.txt"
tail -25 "$OUT/run.txt"
gzip -9 -n -c $R/results.json > "$OUT/results.json.gz"; cp $R/summary.md "$OUT/" 2>/dev/null
# Feature-level gating on the real builds: spec example 1 demanding 6_2, 6_3 and 6_4 in turn.
mkdir -p /tmp/fl && for L in 6_2 6_3 6_4; do sed "s/^feature_level: \"2_1\"/feature_level: \"$L\"/; s/id: example-/id: level-$L-example-/" cases/top_k1/spec_examples.yaml | sed '1,2d' | awk '/id: level-.*example-2/{exit} {print}' > /tmp/fl/level-$L.yaml; done
python3 -m conformance run /tmp/fl "${args[@]}" --report-dir /tmp/fl-out >"$OUT/gating.txt" 2>&1; echo "gating rc=$?" >>"$OUT/gating.txt"
python3 -c "
import json; d=json.load(open('/tmp/fl-out/results.json'))
for r in d['results']: print(r['ep'], r['case'].split('::')[1], r['status'], r['failure_kind'], r['message'][:140])
" >>"$OUT/gating.txt" 2>&1
tail -25 "$OUT/gating.txt"
ls -la "$OUT"
