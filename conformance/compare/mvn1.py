"""MEAN_VARIANCE_NORMALIZATION1: the only compared output that is computed, so the only one with a tolerance.

An element passes when ``|actual - expected| <= atol`` or ``ulp_distance(actual, expected) <= max_ulp``, the ULP
distance counted in the output's own type (float16 or float32) by the ordered-integer trick (+0 and -0 are the
same point; the smallest positive and negative denormals are 2 ULP apart). NaN must meet NaN and an infinity
must equal exactly (an infinity is never "close"). The oracle's value is exact (float64, rounded once).

Defaults (``default_tolerance``; ``scale = max(1, max |ScaleTensor|)``, N = elements per mean/variance, i.e. the
product of the input's sizes over Axes); a case's ``Tolerance`` replaces either field:

* FLOAT16: ``max_ulp = 2``, ``atol = 2**-10 * scale``. A float16 result is dominated by its final rounding: an
  implementation that accumulates and normalizes in float32 (as GPU kernels do) carries relative error around
  sqrt(N) * 2**-24, far below float16's 2**-11, so its result is within 0.5 ULP of the exact value and at most
  1 ULP from the oracle's correctly rounded one; one more ULP allows a float16 intermediate (e.g. x - mean
  rounded to float16) or an approximate rsqrt. Near zero the ULP shrinks while the error does not: the error
  of the normalized value is absolute (error of the mean over the standard deviation, times Scale), so the
  absolute floor is one float16 ULP at 1.0 (2**-10), times the Scale that multiplies it.
* FLOAT32: ``max_ulp = 16``, ``atol = 2**-20 * sqrt(N) * scale``. Float32 results are dominated by the
  accumulation of the mean and the variance: each of N additions rounds with relative error 2**-24, and a
  sequential or tree sum of random-signed rounding errors grows like sqrt(N) (worst case N or log2 N); the
  normalized output (x - mean) / sqrt(var + eps) inherits that as an absolute error of about
  sqrt(N) * 2**-24 per unit of Scale. The absolute term gives a 16x margin over that estimate
  (2**-20 = 16 * 2**-24) and matters near zero; 16 ULP covers O(1) outputs of small reductions plus a fused
  activation's approximate transcendental (sigmoid, tanh, exp: a few ULP in common GPU math libraries).

Conditioning: x - mean cancels when |x| is large against the standard deviation, and an implementation that
computes in float32 (exactly, from float32 or float16 inputs) then makes an error of about
2**-24 * (|x| + |mean|) before dividing by sqrt(var + eps). So the absolute term is widened by the input's
condition number ``cond = max over reduction groups of (max |x| + |mean|) / sqrt(var + Epsilon)`` (without
the square root when NormalizeVariance is false): FLOAT32 ``atol = 2**-20 * max(sqrt(N), cond) * scale``, FLOAT16
``atol = max(2**-10, 2**-20 * cond) * scale``. That keeps the bound honest for float32 arithmetic while a float16
intermediate on a large offset (the cancellation the float16 cases provoke) still fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from conformance.compare.common import (
    BoolArray,
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
    structure_problem,
    ulp_distance,
)
from conformance.compare.entry import CompareEntry, GoldenRuling, Tensors, both_values
from conformance.model import (
    INPUT_TENSOR,
    OUTPUT_TENSOR,
    SCALE_TENSOR,
    Case,
    DataType,
    Mvn1Desc,
    Operator,
    Status,
    Tolerance,
)


def default_tolerance(
    data_type: DataType, reduction_size: int, scale_magnitude: float, condition: float = 1.0
) -> Tolerance:
    """The documented default tolerance (module docstring); integer types compare exactly."""
    scale = max(1.0, abs(scale_magnitude)) if math.isfinite(scale_magnitude) else 1.0
    cond = condition if math.isfinite(condition) else 1.0
    if data_type == DataType.FLOAT16:
        return Tolerance(max_ulp=2, atol=max(2.0**-10, 2.0**-20 * cond) * scale)
    if data_type == DataType.FLOAT32:
        return Tolerance(max_ulp=16, atol=2.0**-20 * max(math.sqrt(max(1, reduction_size)), cond) * scale)
    return Tolerance(max_ulp=0, atol=0.0)


def condition_number(desc: Mvn1Desc, x: np.ndarray) -> float:
    """max over reduction groups of (max |x| + |mean|) / sqrt(var + Epsilon): how much x - mean cancels."""
    values = x.astype(np.float64)
    finite = np.isfinite(values)
    if not finite.all():
        values = np.where(finite, values, 0.0)
    axes = tuple(desc.axes)
    mean = values.mean(axis=axes, keepdims=True)
    magnitude = np.abs(values).max(axis=axes, keepdims=True) + np.abs(mean)
    if desc.normalize_variance:
        variance = np.square(values - mean).mean(axis=axes, keepdims=True)
        magnitude = magnitude / np.sqrt(variance + max(desc.epsilon, 0.0) + np.finfo(np.float64).tiny)
    return float(magnitude.max()) if magnitude.size else 1.0


def case_tolerance(case: Case, inputs: Mapping[str, np.ndarray]) -> tuple[int, float, int]:
    """(max_ulp, atol, reduction size) for an MVN case: the defaults, overridden field by field by case.tolerance."""
    desc = case.descriptor
    if not isinstance(desc, Mvn1Desc):
        raise TypeError(f"not an MVN case: {case.id}")
    reduction = math.prod(desc.input.sizes[axis] for axis in desc.axes)
    scale = inputs.get(SCALE_TENSOR)
    magnitude = 1.0
    if scale is not None:
        finite = np.abs(scale[np.isfinite(scale)].astype(np.float64))
        magnitude = float(finite.max()) if finite.size else 1.0
    condition = condition_number(desc, inputs[INPUT_TENSOR]) if INPUT_TENSOR in inputs else 1.0
    default = default_tolerance(desc.input.data_type, reduction, magnitude, condition)
    override = case.tolerance or Tolerance()
    max_ulp = override.max_ulp if override.max_ulp is not None else default.max_ulp
    atol = override.atol if override.atol is not None else default.atol
    return int(max_ulp or 0), float(atol or 0.0), reduction


def beyond_tolerance(want: np.ndarray, got: np.ndarray, max_ulp: int, atol: float) -> BoolArray:
    """Per element, whether ``got`` is outside the tolerance around ``want`` (module docstring): finite values pass
    within ``atol`` or ``max_ulp`` ULP, NaN must meet NaN and an infinity must be equal."""
    return _beyond(want, got, abs_error(got, want), ulp_distance(got, want), max_ulp, atol)


def _beyond(
    want: np.ndarray, got: np.ndarray, errors: np.ndarray, ulps: np.ndarray, max_ulp: int, atol: float
) -> BoolArray:
    """beyond_tolerance, given the elements' absolute and ULP errors (which compare_mvn1 reports as well)."""
    e_nan, a_nan = np.isnan(want), np.isnan(got)
    e_inf, a_inf = np.isinf(want), np.isinf(got)
    finite = ~(e_nan | a_nan | e_inf | a_inf)
    close = finite & ((errors <= atol) | (ulps <= max_ulp))
    exact_special = (e_nan & a_nan) | ((e_inf | a_inf) & (got == want))
    return np.asarray(~(close | exact_special))


def compare_mvn1(
    case: Case, inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray]
) -> Verdict:
    want = expected[OUTPUT_TENSOR]
    problem = structure_problem(OUTPUT_TENSOR, want, actual, index=False)
    if problem is not None:
        return problem
    got = actual[OUTPUT_TENSOR]
    max_ulp, atol, reduction = case_tolerance(case, inputs)
    finite = np.isfinite(want) & np.isfinite(got)
    errors, ulps = abs_error(got, want), ulp_distance(got, want)
    mismatched = _beyond(want, got, errors, ulps, max_ulp, atol)
    metrics: Metrics = {
        "elements": int(want.size),
        "mismatches": int(np.count_nonzero(mismatched)),
        "non_finite_mismatches": int(np.count_nonzero(mismatched & ~finite)),
        "atol": atol,
        "max_ulp": max_ulp,
        "reduction_size": reduction,
    }
    if finite.any():
        metrics["max_abs_error"] = json_float(float(errors[finite].max()))
        metrics["max_ulp_error"] = int(ulps[finite].max())
    if not metrics["mismatches"]:
        return passed(metrics)
    beyond = mismatched & finite  # the finite elements outside the tolerance
    kind = "tolerance" if beyond.any() else "non_finite"
    headers, rows = elementwise_rows(want, got, mismatched, with_ulp=True)
    # The histogram covers every finite element, not only the mismatches: it shows how far the bulk is from the
    # tolerance as well as the outliers.
    details = mismatch_details(OUTPUT_TENSOR, mismatched, headers, rows, ulps[finite])
    details["max_ulp"], details["atol"] = max_ulp, atol
    message = _message(want, got, mismatched, beyond, errors, ulps, metrics, headers, rows)
    return Verdict(Status.FAIL, kind, message, metrics, details)


def _message(
    want: np.ndarray,
    got: np.ndarray,
    mismatched: BoolArray,
    beyond: BoolArray,
    errors: np.ndarray,
    ulps: np.ndarray,
    metrics: Metrics,
    headers: list[str],
    rows: list[list[str]],
) -> str:
    """The headline (how many elements fail, and by how much), the rule, then pytest-regressions' lines."""
    lines = [
        _headline(want, got, mismatched, beyond, errors, ulps, metrics),
        f"  {OUTPUT_TENSOR}: |actual - expected| <= {format_value(metrics['atol'])} or <= {metrics['max_ulp']} ULP "
        "(NaN must meet NaN, Inf must be exact)",
        *header_lines(want, got),
        count_line("mismatched elements", int(metrics["mismatches"]), int(metrics["elements"])),
    ]
    if metrics["non_finite_mismatches"]:
        lines.append(f"  NaN/Inf mismatches: {metrics['non_finite_mismatches']}")
    if "max_abs_error" in metrics:
        lines.append(f"  max abs error: {format_value(metrics['max_abs_error'])} (finite elements)")
        lines.append(f"  max ULP error: {metrics['max_ulp_error']} (reduction size {metrics['reduction_size']})")
    lines.append(f"  first {len(rows)} mismatches:")
    lines.extend(indent_table(headers, rows))
    return "\n".join(lines)


def _headline(
    want: np.ndarray,
    got: np.ndarray,
    mismatched: BoolArray,
    beyond: BoolArray,
    errors: np.ndarray,
    ulps: np.ndarray,
    metrics: Metrics,
) -> str:
    """ "4/4 elements beyond tolerance: max abs error 1.0 (15360 ULP) > 0.000977 or 2 ULP" (the largest error of the
    finite elements beyond it, with that element's ULPs), or where only NaN and infinities differ, the first of
    them: "3/3 elements differ (NaN/Inf): first at [0,0,0,0]: expected 0.0, got nan". ``beyond``: the finite
    elements among ``mismatched``."""
    count, total = int(metrics["mismatches"]), int(metrics["elements"])
    if not beyond.any():
        at = first_mismatch(mismatched)
        return headline(count, total, "differ (NaN/Inf)", at, format_value(want[at]), format_value(got[at]))
    worst = np.unravel_index(int(np.argmax(np.where(beyond, errors, -1.0))), want.shape)
    error, atol = _apart(float(errors[worst]), float(metrics["atol"]))
    line = f"{count}/{total} elements beyond tolerance: max abs error {error} ({int(ulps[worst])} ULP) > {atol} or "
    line += f"{metrics['max_ulp']} ULP"
    others = int(metrics["non_finite_mismatches"])
    return line + (f"; {others} of them NaN/Inf" if others else "")


def _apart(error: float, atol: float) -> tuple[str, str]:
    """Both at 3 significant digits, or at as many more as it takes for them not to read alike ("1.0", not "1":
    a float reads as one)."""
    for digits in range(3, 18):
        shown = _digits(error, digits), _digits(atol, digits)
        if shown[0] != shown[1]:
            return shown
    return repr(error), repr(atol)


def _digits(value: float, digits: int) -> str:
    text = f"{value:.{digits}g}"
    return text + ".0" if text.lstrip("-").isdigit() else text


def golden_within_tolerance(case: Case, inputs: Tensors, want: np.ndarray, got: np.ndarray) -> GoldenRuling:
    """A golden (``want``) against the oracle's output (``got``) within the case's tolerance (``case_tolerance``),
    as the EP's output is judged."""
    max_ulp, atol, _ = case_tolerance(case, inputs)
    differs = beyond_tolerance(got, want, max_ulp, atol)
    rule = f"beyond MVN1's tolerance (|difference| <= {atol:.3g} or <= {max_ulp} ULP)"
    return GoldenRuling(differs, _values_and_distance, rule)


def _values_and_distance(want: np.generic, got: np.generic) -> str:
    """Both values, then how far apart two finite floats are, in value and in ULPs of their type (nothing more where
    either is not finite)."""
    values = both_values(want, got)
    if not bool(np.isfinite(np.asarray([want, got])).all()):
        return values
    error = float(abs_error(np.asarray(got), np.asarray(want)))
    ulps = int(ulp_distance(np.asarray(got), np.asarray(want)))
    return f"{values} ({error:.2g} apart, {ulps} ULP)"


ENTRY = CompareEntry(Operator.MEAN_VARIANCE_NORMALIZATION1, compare_mvn1, golden_within_tolerance)
