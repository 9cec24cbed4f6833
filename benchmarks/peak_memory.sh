#!/bin/bash
# Peak memory of one dmlconf run, three ways (docs/performance.md#memory), as root:
#   bash benchmarks/peak_memory.sh REPORT_DIR -- python -m conformance run cases --ep dml [-j 2]
# - the run's own figure: results.json's environment.peak_memory (each process's peak, DirectML runners included)
# - GNU time's maximum resident set: the largest single process waited for (a runner only since workers reap theirs)
# - a memory cgroup of its own: the peak of everything the run started (its page cache too), where cgroups can be
#   made here (v2 memory.peak, v1 memory.max_usage_in_bytes); start Wine (wineserver) before, or it is counted too.
set -u
report=$1; shift; [ "$1" = "--" ] && shift
name=dmlconf-peak-$$
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then cg=/sys/fs/cgroup/$name peak=memory.peak; else cg=/sys/fs/cgroup/memory/$name peak=memory.max_usage_in_bytes; fi
mkdir "$cg" 2>/dev/null || cg=""
timing=$(mktemp)
if [ -n "$cg" ]; then
  bash -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$cg" /usr/bin/time -o "$timing" -f "%M %e" "$@" --report-dir "$report"
else
  /usr/bin/time -o "$timing" -f "%M %e" "$@" --report-dir "$report"
fi
read -r maxrss wall < <(tail -1 "$timing"); rm -f "$timing"
echo "wall ${wall} s; GNU time max RSS $((maxrss / 1024)) MiB"
if [ -n "$cg" ]; then
  echo "cgroup peak $(( $(cat "$cg/$peak") / 1048576 )) MiB"
  for _ in 1 2 3 4 5; do rmdir "$cg" 2>/dev/null && break; sleep 1; done  # an exiting process may linger a moment
  [ -d "$cg" ] && echo "cgroup $cg kept: something the run started is still in it (wineserver?)"
fi
python3 -c 'import json, sys; print("results.json peak_memory", json.load(open(sys.argv[1]))["environment"].get("peak_memory"))' "$report/results.json"
