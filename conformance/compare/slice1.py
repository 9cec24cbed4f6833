"""SLICE1's verdict: the operator copies, so its OutputTensor is compared bit for bit (any NaN matches any NaN,
-0.0 differs from 0.0)."""

from __future__ import annotations

import numpy as np

from conformance.compare.common import (
    Metrics,
    Verdict,
    abs_error,
    count_line,
    elementwise_rows,
    first_mismatch,
    format_value,
    header_lines,
    headline,
    indent_table,
    json_float,
    mismatch_details,
    passed,
    same_bits,
    structure_problem,
    ulp_distance,
)
from conformance.compare.entry import CompareEntry, Tensors, golden_bit_for_bit
from conformance.model import OUTPUT_TENSOR, Case, Operator, Status


def compare_slice1(case: Case, inputs: Tensors, expected: Tensors, actual: Tensors) -> Verdict:
    """SLICE1's OutputTensor, bit for bit (any NaN matches any NaN); the case and its inputs change nothing."""
    want = expected[OUTPUT_TENSOR]
    problem = structure_problem(OUTPUT_TENSOR, want, actual, index=False)
    if problem is not None:
        return problem
    got = actual[OUTPUT_TENSOR]
    mismatched = ~same_bits(got, want)
    metrics: Metrics = {"elements": int(want.size), "mismatches": int(np.count_nonzero(mismatched))}
    if not metrics["mismatches"]:
        return passed(metrics)
    is_float = want.dtype.kind == "f"
    both_finite = mismatched & np.isfinite(want) & np.isfinite(got) if is_float else mismatched
    at = first_mismatch(mismatched)
    lines = [
        headline(int(metrics["mismatches"]), want.size, "differ", at, format_value(want[at]), format_value(got[at])),
        f"  {OUTPUT_TENSOR}: compared bit for bit (any NaN matches any NaN, -0.0 differs from 0.0)",
        *header_lines(want, got),
        count_line("mismatched elements", int(metrics["mismatches"]), int(metrics["elements"])),
    ]
    if both_finite.any():
        metrics["max_abs_error"] = json_float(float(abs_error(got[both_finite], want[both_finite]).max()))
        lines.append(f"  max abs error: {format_value(metrics['max_abs_error'])}")
        if is_float:
            metrics["max_ulp_error"] = int(ulp_distance(got[both_finite], want[both_finite]).max())
            lines.append(f"  max ULP error: {metrics['max_ulp_error']}")
    headers, rows = elementwise_rows(want, got, mismatched, with_ulp=is_float)
    lines.append(f"  first {len(rows)} mismatches:")
    lines.extend(indent_table(headers, rows))
    ulps = ulp_distance(got[both_finite], want[both_finite]) if is_float else None
    details = mismatch_details(OUTPUT_TENSOR, mismatched, headers, rows, ulps)
    details["max_ulp"] = 0  # a copy is exact: any ULP of error is a mismatch
    return Verdict(Status.FAIL, "values", "\n".join(lines), metrics, details)


ENTRY = CompareEntry(Operator.SLICE1, compare_slice1, golden_bit_for_bit)
