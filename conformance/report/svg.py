"""The pictures of the HTML report, as inline SVG (no script, no external asset): a histogram of ULP errors and a
map of where the mismatches are in a tensor. Each function takes plain data from a result's ``details``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

MAP_CELLS = 96  # the map's longest side, in cells: larger tensors are binned, a cell marked if any element in it is
CELL = 6  # pixels per map cell
BAR_WIDTH, BAR_GAP, PLOT_HEIGHT = 50, 6, 120


def _svg(width: int, height: int, label: str, body: Sequence[str], caption: str) -> str:
    """An SVG in a figure whose caption is HTML text (it wraps, where SVG text would be cut off)."""
    return (
        f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg><figcaption>{escape(caption)}</figcaption></figure>"
    )


def ulp_histogram(buckets: Sequence[Sequence[int | str]], max_ulp: int | None) -> str:
    """Bars of element counts per ULP-error bucket, on a log scale (one outlier and a million exact elements both
    show); buckets beyond the tolerance's ``max_ulp`` are drawn in the failure colour."""
    counts = [(str(bucket[0]), int(bucket[1]), int(bucket[2])) for bucket in buckets]
    if not counts:
        return ""
    top = max(math.log10(count + 1) for _, count, _ in counts)
    width = len(counts) * (BAR_WIDTH + BAR_GAP) + BAR_GAP
    body: list[str] = []
    for i, (label, count, low) in enumerate(counts):
        height = max(1, round(PLOT_HEIGHT * math.log10(count + 1) / top)) if top else 1
        x, y = BAR_GAP + i * (BAR_WIDTH + BAR_GAP), 14 + PLOT_HEIGHT - height
        beyond = max_ulp is not None and low > max_ulp
        colour = "#c62828" if beyond else "#5c7cfa"
        body.append(
            f'<rect x="{x}" y="{y}" width="{BAR_WIDTH}" height="{height}" fill="{colour}">'
            f"<title>{escape(label)} ULP: {count} element(s)</title></rect>"
            f'<text x="{x + BAR_WIDTH / 2}" y="{y - 2}" font-size="9" text-anchor="middle">{count}</text>'
            f'<text x="{x + BAR_WIDTH / 2}" y="{PLOT_HEIGHT + 26}" font-size="9" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    caption = "ULP error per element (log scale)" + (f"; red: beyond {max_ulp} ULP" if max_ulp is not None else "")
    return _svg(width, PLOT_HEIGHT + 32, "histogram of ULP errors", body, caption)


def _grid(shape: Sequence[int]) -> tuple[int, int, int]:
    """A tensor seen as rows by columns in row-major order: the leading dimensions down, the trailing ones across,
    split where the picture comes closest to twice as wide as tall. Returns (rows, columns, first column dim)."""
    if len(shape) < 2:
        return 1, max(math.prod(shape), 1), 0

    def drawn_aspect(k: int) -> float:  # width / height once each side is binned to at most MAP_CELLS
        return min(math.prod(shape[k:]), MAP_CELLS) / max(min(math.prod(shape[:k]), MAP_CELLS), 1)

    best = min(range(1, len(shape)), key=lambda k: abs(math.log(max(drawn_aspect(k), 1e-9)) - math.log(2)))
    return max(math.prod(shape[:best]), 1), max(math.prod(shape[best:]), 1), best


def _runs(cells: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Sorted (row, column) cells as (row, first column, length) runs: one rectangle per run keeps a dense map
    small."""
    runs: list[tuple[int, int, int]] = []
    for row, column in cells:
        if runs and runs[-1][0] == row and runs[-1][1] + runs[-1][2] == column:
            runs[-1] = (row, runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((row, column, 1))
    return runs


def mismatch_map(shape: Sequence[int], positions: Sequence[int], total: int) -> str:
    """Where the mismatches are: the tensor as rows (every dimension but the last) by columns (the last), binned
    down to at most MAP_CELLS a side; a marked cell holds at least one mismatching element."""
    rows, columns, split = _grid(shape)
    row_step, column_step = math.ceil(rows / MAP_CELLS), math.ceil(columns / MAP_CELLS)
    grid_rows, grid_columns = math.ceil(rows / row_step), math.ceil(columns / column_step)
    inside = [p for p in positions if 0 <= p < rows * columns]  # a malformed results.json cannot draw outside
    marked = sorted({(p // columns // row_step, p % columns // column_step) for p in inside})
    width, height = grid_columns * CELL, grid_rows * CELL
    body = [f'<rect x="0" y="0" width="{width}" height="{height}" fill="#e8f5e9" stroke="#9e9e9e"/>']
    body.extend(
        f'<rect x="{c * CELL}" y="{r * CELL}" width="{n * CELL}" height="{CELL}" fill="#c62828"/>'
        for r, c, n in _runs(marked)
    )
    binned = f", {row_step} by {column_step} elements a cell" if row_step * column_step > 1 else ""
    shown = f"; the first {len(positions)} of {total} shown" if total > len(positions) else ""
    down = f"dims 0-{split - 1}" if split > 1 else "dim 0"
    across = f"dims {split}-{len(shape) - 1}" if len(shape) - split > 1 else f"dim {split}"
    layout = f"rows: {down}, columns: {across}; " if len(shape) > 1 else ""
    caption = f"where: shape {list(shape)}, {layout}red cells hold a mismatch{binned}{shown}"
    return _svg(width, height, f"mismatch positions, {total} element(s)", body, caption)
