"""The pictures of the HTML report, as inline SVG (no script, no external asset): a histogram of ULP errors and a
map of where the mismatches are in a tensor. Each function takes plain data from a result's ``details``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

MAP_CELLS = 96  # the map's longest side, in cells: larger tensors are binned, a cell marked if any element in it is
CELL = 6  # pixels per map cell
BAR_WIDTH, BAR_GAP, PLOT_HEIGHT = 34, 6, 120


def _svg(width: int, height: int, label: str, body: Sequence[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>"
    )


def _bucket_low(label: str) -> int:
    return int(label.split("-")[0])


def ulp_histogram(buckets: Sequence[Sequence[int | str]], max_ulp: int | None) -> str:
    """Bars of element counts per ULP-error bucket, on a log scale (one outlier and a million exact elements both
    show); buckets beyond the tolerance's ``max_ulp`` are drawn in the failure colour."""
    counts = [(str(label), int(count)) for label, count in buckets]
    if not counts:
        return ""
    top = max(math.log10(count + 1) for _, count in counts)
    width = len(counts) * (BAR_WIDTH + BAR_GAP) + BAR_GAP
    body: list[str] = []
    for i, (label, count) in enumerate(counts):
        height = max(1, round(PLOT_HEIGHT * math.log10(count + 1) / top)) if top else 1
        x, y = BAR_GAP + i * (BAR_WIDTH + BAR_GAP), 14 + PLOT_HEIGHT - height
        beyond = max_ulp is not None and _bucket_low(label) > max_ulp
        colour = "#c62828" if beyond else "#5c7cfa"
        body.append(
            f'<rect x="{x}" y="{y}" width="{BAR_WIDTH}" height="{height}" fill="{colour}">'
            f"<title>{escape(label)} ULP: {count} element(s)</title></rect>"
            f'<text x="{x + BAR_WIDTH / 2}" y="{y - 2}" font-size="9" text-anchor="middle">{count}</text>'
            f'<text x="{x + BAR_WIDTH / 2}" y="{PLOT_HEIGHT + 26}" font-size="9" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    caption = "ULP error per element (log scale)" + (f"; red: beyond {max_ulp} ULP" if max_ulp is not None else "")
    body.append(f'<text x="{BAR_GAP}" y="{PLOT_HEIGHT + 42}" font-size="10">{escape(caption)}</text>')
    return _svg(max(width, 260), PLOT_HEIGHT + 48, "histogram of ULP errors", body)


def _grid(shape: Sequence[int]) -> tuple[int, int]:
    """A tensor seen as rows by columns: the last dimension across, all the others down."""
    columns = shape[-1] if shape else 1
    rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
    return max(rows, 1), max(columns, 1)


def mismatch_map(shape: Sequence[int], positions: Sequence[int], total: int) -> str:
    """Where the mismatches are: the tensor as rows (every dimension but the last) by columns (the last), binned
    down to at most MAP_CELLS a side; a marked cell holds at least one mismatching element."""
    rows, columns = _grid(shape)
    row_step, column_step = math.ceil(rows / MAP_CELLS), math.ceil(columns / MAP_CELLS)
    grid_rows, grid_columns = math.ceil(rows / row_step), math.ceil(columns / column_step)
    marked = sorted({(p // columns // row_step, p % columns // column_step) for p in positions})
    width, height = grid_columns * CELL, grid_rows * CELL
    body = [f'<rect x="0" y="0" width="{width}" height="{height}" fill="#e8f5e9" stroke="#9e9e9e"/>']
    body.extend(
        f'<rect x="{c * CELL}" y="{r * CELL}" width="{CELL}" height="{CELL}" fill="#c62828"/>' for r, c in marked
    )
    binned = f", {row_step} by {column_step} elements a cell" if row_step * column_step > 1 else ""
    shown = f"; the first {len(positions)} of {total} shown" if total > len(positions) else ""
    caption = f"{rows} by {columns} (shape {list(shape)}){binned}{shown}"
    body.append(f'<text x="0" y="{height + 14}" font-size="10">{escape(caption)}</text>')
    return _svg(max(width, 260), height + 20, f"mismatch positions, {total} element(s)", body)
