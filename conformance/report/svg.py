"""The pictures of the HTML report, as inline SVG (no script, no external asset): a histogram of ULP errors and a
map of where the mismatches are in a tensor. Each function takes plain data from a result's ``details``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

MAP_CELLS = 96  # the map's longest side, in cells: larger tensors are binned, a cell marked if any element in it is
MAP_PIXELS = 320  # the map's longest side, in pixels: a cell is as large as fits, within CELL_RANGE
CELL_RANGE = (4, 40)
BAR_WIDTH, BAR_GAP, PLOT_HEIGHT = 50, 6, 120
AXIS, TOP, BOTTOM = 30, 28, 34  # the histogram's margins: the y axis and its title, counts over bars, x labels
WITHIN, BEYOND = "#5c7cfa", "#c62828"


def _svg(width: int, height: int, label: str, body: Sequence[str], caption: str) -> str:
    """An SVG in a figure whose caption is HTML text (it wraps, where SVG text would be cut off)."""
    return (
        f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg><figcaption>{escape(caption)}</figcaption></figure>"
    )


def _text(x: float, y: float, text: str, anchor: str = "middle", size: int = 10, extra: str = "") -> str:
    return f'<text x="{x:g}" y="{y:g}" font-size="{size}" text-anchor="{anchor}"{extra}>{escape(text)}</text>'


def bucket_top(low: int) -> int:
    """The largest ULP error in the bucket that starts at ``low`` (compare/common.py: 0, 1, then powers of two,
    each bucket up to just below the next)."""
    return low if low <= 1 else 2 * low - 1


def ulp_histogram(buckets: Sequence[Sequence[int | str]], max_ulp: int | None, atol: float | None = None) -> str:
    """Bars of element counts per ULP-error bucket, on a log scale (one outlier and a million exact elements both
    show). Every bucket that reaches beyond the tolerance's ``max_ulp`` is drawn in the failure colour, those that
    start within it too: a 2-3 bucket against a 2-ULP limit may hold 3-ULP errors, and the data cannot tell."""
    counts = [(str(bucket[0]), int(bucket[1]), int(bucket[2])) for bucket in buckets]
    if not counts:
        return ""
    top = max(math.log10(count + 1) for _, count, _ in counts)
    width = AXIS + len(counts) * (BAR_WIDTH + BAR_GAP) + BAR_GAP
    base = TOP + PLOT_HEIGHT
    body = [
        f'<line x1="{AXIS}" y1="{TOP - 6}" x2="{AXIS}" y2="{base}" stroke="#9e9e9e"/>',
        f'<line x1="{AXIS}" y1="{base}" x2="{width}" y2="{base}" stroke="#9e9e9e"/>',
        _text(-(TOP + PLOT_HEIGHT / 2), 12, "elements (log scale)", extra=' transform="rotate(-90)"'),
        _text(AXIS + (width - AXIS) / 2, base + 30, "ULP error"),
    ]
    limit_drawn = False
    for i, (label, count, low) in enumerate(counts):
        height = max(1, round(PLOT_HEIGHT * math.log10(count + 1) / top)) if top else 1
        x, y = AXIS + BAR_GAP + i * (BAR_WIDTH + BAR_GAP), base - height
        beyond = max_ulp is not None and bucket_top(low) > max_ulp
        if beyond and not limit_drawn:  # the limit, just before the first bucket that reaches beyond it
            limit_drawn = True
            edge = x - BAR_GAP / 2
            dashes = f'stroke="{BEYOND}" stroke-dasharray="4 3"'
            body.append(
                f'<line x1="{edge:g}" y1="{TOP - 26}" x2="{edge:g}" y2="{base}" {dashes}/>'
                + _text(edge + 3, TOP - 18, f"limit {max_ulp} ULP", anchor="start", size=9)
            )
        body.append(
            f'<rect x="{x}" y="{y}" width="{BAR_WIDTH}" height="{height}" fill="{BEYOND if beyond else WITHIN}">'
            f"<title>{escape(label)} ULP: {count} element(s)</title></rect>"
            + _text(x + BAR_WIDTH / 2, y - 2, str(count), size=9)
            + _text(x + BAR_WIDTH / 2, base + 12, label, size=9)
        )
    caption = "ULP error per element"
    if max_ulp is not None:
        caption += f"; red: buckets reaching beyond the {max_ulp}-ULP limit"
        if atol:
            caption += f" (an element within atol {atol:.3g} passes all the same)"
    return _svg(width, base + BOTTOM, "histogram of ULP errors", body, caption)


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


def _dims(shape: Sequence[int], first: int, last: int) -> str:
    """ "dim 2 [3]", "dims 0-1 [2, 1]": which dimensions of ``shape`` a side of the map stands for."""
    which = f"dim {first}" if first == last else f"dims {first}-{last}"
    return f"{which} {list(shape[first : last + 1])}"


def mismatch_map(shape: Sequence[int], positions: Sequence[int], total: int) -> str:
    """Where the mismatches are: the tensor as rows (the leading dimensions) by columns (the trailing ones),
    binned down to at most MAP_CELLS a side, each side labelled with the dimensions it stands for and its first and
    last index; a marked cell holds at least one mismatching element."""
    rows, columns, split = _grid(shape)
    row_step, column_step = math.ceil(rows / MAP_CELLS), math.ceil(columns / MAP_CELLS)
    grid_rows, grid_columns = math.ceil(rows / row_step), math.ceil(columns / column_step)
    cell = min(max(MAP_PIXELS // max(grid_rows, grid_columns), CELL_RANGE[0]), CELL_RANGE[1])
    inside = [p for p in positions if 0 <= p < rows * columns]  # a malformed results.json cannot draw outside
    marked = sorted({(p // columns // row_step, p % columns // column_step) for p in inside})
    width, height = grid_columns * cell, grid_rows * cell
    labels = [f"columns: {_dims(shape, split, len(shape) - 1)} →" if shape else "a scalar"]
    if len(shape) > 1:
        labels.insert(0, f"rows: {_dims(shape, 0, split - 1)} ↓")
    left = 8 + 7 * len(str(rows - 1))  # room for the last row's index
    top = 14 * len(labels) + 14  # the labels, then the first and last column's index
    body = [f'<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="#e8f5e9" stroke="#9e9e9e"/>']
    body.extend(
        f'<rect x="{left + c * cell}" y="{top + r * cell}" width="{n * cell}" height="{cell}" fill="{BEYOND}"/>'
        for r, c, n in _runs(marked)
    )
    body.extend(_text(0, 12 + 14 * i, label, anchor="start", size=11) for i, label in enumerate(labels))
    body.append(_text(left, top - 3, "0", anchor="start", size=9))
    if columns > 1:
        body.append(_text(left + width, top - 3, str(columns - 1), anchor="end", size=9))
    body.append(_text(left - 3, top + 9, "0", anchor="end", size=9))
    if rows > 1:
        body.append(_text(left - 3, top + height, str(rows - 1), anchor="end", size=9))
    binned = f", {row_step} by {column_step} elements a cell" if row_step * column_step > 1 else ""
    shown = f"; the first {len(positions)} of {total} shown" if total > len(positions) else ""
    caption = f"where: shape {list(shape)} as {rows} row(s) by {columns} column(s), red cells hold a mismatch"
    text_width = 7 * max(len(label) for label in labels)
    return _svg(
        max(left + width + 2, text_width),
        top + height + 2,
        f"mismatch positions, {total} element(s)",
        body,
        caption + binned + shown,
    )
