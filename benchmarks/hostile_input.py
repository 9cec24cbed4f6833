"""Benchmark: what a hostile case file costs ``dmlconf validate`` (seconds and peak memory), against a valid one.

Each file is validated in a fresh process, which reports its own peak resident memory; the table shows the exit
code, the number of problem lines, and seconds and memory as ratios to the valid file's. Bounded means: about the
valid file's, whatever the file claims to hold (an alias bomb of 10^9 strings, an 8 GiB file, a matrix of 10^12
variants, a 10^9-element tensor).

    python benchmarks/hostile_input.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

VALID = """\
operator: SLICE1
feature_level: "3_0"
cases:
  - id: ok
    InputTensor: {Sizes: [2, 2], DataType: FLOAT32, Data: [[1, 2], [3, 4]]}
    InputWindowOffsets: [0, 0]
    InputWindowSizes: [2, 2]
    InputWindowStrides: [1, 1]
"""

# The process's own peak resident set (Linux: KiB) after dmlconf validate returns.
PROBE = (
    "import resource, sys\n"
    "from conformance.cli.main import main\n"
    "code = main(['validate', sys.argv[1]])\n"
    "sys.stderr.write(f'\\nmaxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n"
    "sys.exit(code)\n"
)


def alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def hostile_files(folder: Path) -> dict[str, Path]:
    texts: dict[str, str | bytes] = {
        "valid (the reference)": VALID,
        "alias bomb (10^9 strings)": alias_bomb(),
        "nesting 100,000 deep": "[" * 100_000 + "1" + "]" * 100_000,
        "400,001 numbers (file under the size limit)": "a: [" + "0," * 400_000 + "0]\n",
        "binary garbage": bytes(range(256)) * 64,
        "a 5,000-digit integer": VALID.replace("Sizes: [2, 2]", "Sizes: [" + "9" * 5000 + ", 2]"),
        "a 10^9-element tensor": VALID.replace("Sizes: [2, 2]", "Sizes: [31623, 31623]").replace(
            "Data: [[1, 2], [3, 4]]", "Generator: {Kind: Uniform, Seed: 1}"
        ),
        "a matrix of 10^12 variants": VALID.replace(
            "cases:\n",
            "matrix: {"
            + ", ".join(f"m{i}: [" + ", ".join(map(str, range(10))) + "]" for i in range(12))
            + "}\ncases:\n",
        ),
        "!!python/object/apply tag": VALID.replace("id: ok", "id: !!python/object/apply:os.system ['true']"),
    }
    paths = {}
    for number, (name, text) in enumerate(texts.items()):
        path = folder / f"f{number}.yaml"
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        paths[name] = path
    huge = folder / "huge.yaml"
    with huge.open("wb") as handle:
        handle.truncate(8 << 30)  # sparse
    paths["an 8 GiB file"] = huge
    return paths


def measure(path: Path) -> tuple[int, int, float, int]:
    """Exit code, problem lines, seconds, peak KiB of one ``dmlconf validate PATH`` in a fresh process."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    lines = done.stderr.strip().splitlines()
    peak = int(lines[-1].split()[1]) if lines and lines[-1].startswith("maxrss") else -1
    problems = sum(1 for line in lines if line.startswith(str(path)))
    return done.returncode, problems, seconds, peak


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        rows = []
        base_seconds = base_peak = 0.0
        for name, path in hostile_files(Path(folder)).items():
            code, problems, seconds, peak = measure(path)
            if not base_seconds:
                base_seconds, base_peak = seconds, peak
            rows.append([name, code, problems, seconds, seconds / base_seconds, peak / 1024, peak / base_peak])
    print(f"dmlconf validate, each file in a fresh process, {os.cpu_count()} cores")
    print(tabulate(rows, ["file", "exit", "problems", "seconds", "x valid", "peak MiB", "x valid"], floatfmt=".2f"))


if __name__ == "__main__":
    main()
