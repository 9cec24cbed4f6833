"""A failing result's re-runs turned into one verdict (conformance/whose.py's ``Whose``) and one sentence saying why.

The order is the ladder's reading (docs/triage.md#how-a-verdict-is-reached): a failure the case's own goldens or
every executor share is the spec's reading or the oracle's; then the most specific change that makes it pass names
it (metacommands off, half precision off, the other path); then the reference adapter separates the driver from
DirectML, and the previous build a regression from an old failure. Failing everywhere is the spec's reading or the
oracle's only where the case's goldens (written from the spec, apart from the oracle) do not vouch for the oracle:
two implementations can share one mistake (onnxruntime's CPU EP and DirectML both misplace NaN in TopK).
A re-run that gave no verdict (it could not run, or the EP declined the case) is no evidence either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

from conformance.ep.providers import facts, parse_ep
from conformance.results import FAILING, PASSING, Result, verdict_text
from conformance.run.runner import GOLDEN_MISMATCH, HARNESS
from conformance.whose import Rerun, Rung, Whose


def passed(rerun: Rerun | None) -> TypeGuard[Rerun]:
    return rerun is not None and rerun.status in PASSING


def failed(rerun: Rerun | None) -> TypeGuard[Rerun]:
    return rerun is not None and rerun.status in FAILING


def _first(reruns: Sequence[Rerun], rung: Rung) -> Rerun | None:
    return next((r for r in reruns if r.rung is rung), None)


def _said(rerun: Rerun) -> str:
    """ "dmlop:reference=1 on llvmpipe: PASS" """
    where = f" on {rerun.adapter}" if rerun.adapter else ""
    return f"{rerun.ep}{where}: {verdict_text(rerun.status, rerun.failure_kind) if rerun.status else 'not run'}"


def _same_path(result: Result, rerun: Rerun) -> bool:
    """Whether ``rerun`` ran on the failing result's execution path (the EP table's path of each)."""
    return facts(parse_ep(rerun.ep)).path is facts(parse_ep(result.ep)).path


def decide(result: Result, reruns: Sequence[Rerun]) -> tuple[Whose, str]:
    """The verdict on failing ``result`` from its ``reruns``, and why, in one sentence."""
    if result.failure_kind == GOLDEN_MISMATCH:
        return Whose.SPEC_OR_ORACLE, "the case's goldens disagree with the oracle: no EP was asked"
    if result.failure_kind == HARNESS:
        return Whose.UNDECIDED, "the harness's own error, not the EP's: nothing to re-run until it is fixed"
    reference = _first(reruns, Rung.REFERENCE)
    on_reference = reference is not None and (reference.same_device or failed(reference))
    executed = [r for r in reruns if r.rung is not Rung.GOLDENS and (passed(r) or failed(r))]
    cpu = _first(reruns, Rung.CPU)
    everywhere = failed(cpu) and on_reference and all(failed(r) for r in executed)
    vouched = passed(_first(reruns, Rung.GOLDENS))  # the case's goldens, written from the spec, agree with the oracle
    if everywhere and not vouched:
        return Whose.SPEC_OR_ORACLE, f"fails everywhere, the CPU EP included ({_said(cpu)})"  # type: ignore[arg-type]
    meta = _first(reruns, Rung.METACOMMANDS)
    if passed(meta):
        return Whose.METACOMMAND, f"passes with DirectML's metacommands off ({_said(meta)})"
    half = _first(reruns, Rung.HALF_PRECISION)
    others = [r for r in reruns if r.rung is Rung.OTHER_PATH]
    if half is not None and _same_path(result, half) and passed(half):
        return Whose.HALF_PRECISION, f"passes with the half-precision flag off ({_said(half)})"
    if half is not None and not _same_path(result, half) and failed(half) and any(passed(o) for o in others):
        without = next(o for o in others if passed(o))
        return Whose.HALF_PRECISION, (
            f"the other path passes without the half-precision flag ({_said(without)}) and fails with it "
            f"({_said(half)}), as this EP computes"
        )
    if any(passed(o) for o in others):
        other = next(o for o in others if passed(o))
        return Whose.LOWERING, f"the other path passes on the same device ({_said(other)}): the paths disagree"
    if reference is not None and not reference.same_device and passed(reference):
        return Whose.DRIVER, f"passes on the reference adapter with the same DirectML.dll ({_said(reference)})"
    build = _first(reruns, Rung.BUILD)
    if passed(build):
        return Whose.DIRECTML_REGRESSION, f"passes with the previous DirectML build ({_said(build)})"
    if reference is not None and reference.same_device:
        return Whose.DIRECTML, (
            f"the device is the reference adapter itself ({reference.adapter or '?'}): that rung cannot separate the "
            "driver from DirectML; no other re-run passes"
        )
    if reference is not None and failed(reference):
        also = "; the CPU EP fails too, but the case's goldens vouch for the oracle" if everywhere else ""
        return Whose.DIRECTML, f"fails on the reference adapter too ({_said(reference)}){also}"
    missing = (
        f"the reference adapter gave no verdict ({_said(reference)}: {reference.message})"
        if reference
        else ("no reference adapter re-run")
    )
    return Whose.UNDECIDED, missing
