"""The shape of the house: module counts and sizes, long functions, and the two seams' leaks.

Run from a checkout (or give one): ``python benchmarks/house_metrics.py [ROOT]``. Prints, for ``conformance/`` and
``reference/``: modules, median module lines, modules over 400 lines, functions over 60 lines, ``run/options.py``'s
lines (or "gone"), the files naming all three operators (an operator's own names, in any spelling the code uses), and
the comparisons against an EP's name or alias (``==``, ``!=``, ``in``) anywhere but the EP table.
"""

from __future__ import annotations

import ast
import re
import statistics
import sys
from pathlib import Path

# Each operator in the spellings the code uses for it: the enum member, the spec's type names, the module stems.
OPERATOR_SPELLINGS = {
    "TOP_K1": re.compile(r"TOP_K1|top_k1|TopK1|TopK\b"),
    "MEAN_VARIANCE_NORMALIZATION1": re.compile(
        r"MEAN_VARIANCE_NORMALIZATION1|mean_variance_normalization1|[Mm]vn1|MVN1"
    ),
    "SLICE1": re.compile(r"SLICE1|slice1|Slice1"),
}
# An EP named in code: the EP table's rows (ep_table.py's CPU, ..., WEBGPU), an alias or an onnxruntime name.
EP_NAMED = (
    r"(?:\b(?:CPU|CUDA|DML|DMLOP|WEBGPU)\b|\"(?:cpu|cuda|dml|dmlop|webgpu|\w+ExecutionProvider|DmlOperatorApi)\")"
)
EP_COMPARISON = re.compile(rf"(?:==|!=|\bin\b)\s*[(\[{{]?\s*{EP_NAMED}|{EP_NAMED}\s*(?:==|!=)")
EP_TABLE = "conformance/ep_table.py"  # the one place that may tell EPs apart by name


def modules(root: Path) -> list[Path]:
    return sorted(p for top in ("conformance", "reference") for p in (root / top).rglob("*.py"))


def ep_comparisons(root: Path) -> list[str]:
    """``file:line`` of each comparison against an EP's name or alias outside the EP table."""
    found = []
    for path in modules(root):
        rel = path.relative_to(root).as_posix()
        if rel == EP_TABLE:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if EP_COMPARISON.search(line.split("#", 1)[0]):
                found.append(f"{rel}:{number}")
    return found


def long_functions(path: Path, limit: int = 60) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append(f"{node.name} ({lines})")
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    files = modules(root)
    lines = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    rel = {p: p.relative_to(root).as_posix() for p in files}
    over = sorted((n, rel[p]) for p, n in lines.items() if n > 400)
    long = [(rel[p], f) for p in files for f in long_functions(p)]
    texts = {p: p.read_text(encoding="utf-8") for p in files}
    all_three = [rel[p] for p in files if all(r.search(texts[p]) for r in OPERATOR_SPELLINGS.values())]
    ep_checks = ep_comparisons(root)
    options = root / "conformance" / "run" / "options.py"
    print(f"modules: {len(files)}")
    print(f"median module lines: {statistics.median(lines.values()):g}")
    print(f"modules over 400 lines: {len(over)}  " + ", ".join(f"{name} ({n})" for n, name in over))
    print(f"functions over 60 lines: {len(long)}  " + ", ".join(f"{m}:{f}" for m, f in long))
    print(f"run/options.py lines: {len(options.read_text().splitlines()) if options.exists() else 'gone'}")
    print(f"files naming all three operators: {len(all_three)}  " + ", ".join(all_three))
    print(f"EP-name comparisons outside {EP_TABLE}: {len(ep_checks)}  " + ", ".join(ep_checks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
