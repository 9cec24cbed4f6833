"""Whether two runs gave the same results: every (case, EP) in both, each result identical but for its time.

    python benchmarks/compare_runs.py A/results.json B/results.json

Used to show that a faster way of running (packed sessions, -j N, shards merged) changes no verdict, message,
metric or placement record. The order of results is not compared (a merge of shards lists them shard by shard).
Exit 0 when identical, 1 when not (the first differences are printed).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

Key = tuple[str, str]


def _timeless(path: str) -> dict[Key, dict[str, Any]]:
    with open(path, encoding="utf-8") as file:
        results = json.load(file)["results"]
    keyed = {(r["case"], r["ep"]): {k: v for k, v in r.items() if k != "seconds"} for r in results}
    if len(keyed) != len(results):
        raise SystemExit(f"{path}: a (case, EP) appears twice")
    return keyed


def _differences(a: Mapping[Key, Mapping[str, Any]], b: Mapping[Key, Mapping[str, Any]]) -> list[str]:
    lines = [f"only in the first: {case} [{ep}]" for case, ep in sorted(a.keys() - b.keys())]
    lines += [f"only in the second: {case} [{ep}]" for case, ep in sorted(b.keys() - a.keys())]
    for key in sorted(a.keys() & b.keys()):
        fields = sorted(f for f in a[key].keys() | b[key].keys() if a[key].get(f) != b[key].get(f))
        if fields:
            lines.append(f"{key[0]} [{key[1]}]: {', '.join(fields)} differ ({a[key]['status']} / {b[key]['status']})")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second")
    args = parser.parse_args()
    a, b = _timeless(args.first), _timeless(args.second)
    lines = _differences(a, b)
    statuses: dict[str, int] = {}
    for result in a.values():
        statuses[result["status"]] = statuses.get(result["status"], 0) + 1
    print(f"{len(a)} and {len(b)} results; {len(lines)} differences; first: {dict(sorted(statuses.items()))}")
    for line in lines[:20]:
        print(f"  {line}")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
