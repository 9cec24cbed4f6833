"""The ladder: which re-runs a failing (case, EP) of a DirectML path gets, each one thing changed against it.

Every fact used here is the EP table's (conformance/ep_table.py): which rows run on DirectML and by which path, the
options that set DirectML's flags, the harness's own ``reference`` option. No EP is named. docs/triage.md#the-ladder
lists the rungs and what each costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from conformance.ep.directml import DIRECTML_VERSIONS, DLL_OPTIONS, Build, build_of
from conformance.ep.providers import EpSpec, check_options, facts, flag_on
from conformance.ep.wine.session import ADAPTER_OPTIONS
from conformance.ep_table import KNOWN_EPS, REFERENCE, ExecutesOn, KnownEp
from conformance.whose import Rung

ON, OFF = "1", "0"  # every Flag takes these; check_options gives each EP its own spelling


@dataclass(frozen=True)
class Step:
    """One re-run: the rung, and the EP (options included) it runs on."""

    rung: Rung
    ep: EpSpec


def _spec(row: KnownEp, options: Mapping[str, str]) -> EpSpec:
    """The EP of ``row`` with ``options``, each in the spelling that EP reads."""
    return EpSpec(row.alias, row.name, check_options(row.name, options))


def _kept(row: KnownEp, options: Mapping[str, str], leave_out: tuple[str, ...] = ()) -> dict[str, str]:
    """The options of ``options`` that ``row`` reads, but those in ``leave_out``."""
    return {key: value for key, value in options.items() if key in row.options and key not in leave_out}


def other_paths(row: KnownEp) -> tuple[KnownEp, ...]:
    """The rows that run on DirectML by another path than ``row``'s (onnxruntime's lowering, DirectML's operator)."""
    return tuple(r for r in KNOWN_EPS if r.executes_on is ExecutesOn.DIRECTML and r.path is not row.path)


def cpu_row() -> KnownEp | None:
    """onnxruntime's CPU EP: the table's row that executes on the CPU."""
    return next((r for r in KNOWN_EPS if r.executes_on is ExecutesOn.CPU), None)


def previous_build(build: Build) -> Build | None:
    """The DirectML.dll released before ``build``'s (the version matrix's previous release), beside the same
    onnxruntime.dll; None where ``build``'s is the oldest known."""
    known = list(DIRECTML_VERSIONS)
    if build.directml not in known or known.index(build.directml) == 0:
        return None
    return Build(known[known.index(build.directml) - 1], build.onnxruntime, build.reference)


def half_precision_on(ep: EpSpec, float16: bool) -> bool:
    """Whether the EP computes with DirectML's half-precision flag: its option set, or (onnxruntime's DirectML EP)
    on every all-float16 operator."""
    row = facts(ep)
    if row.half_precision_option is not None:
        return flag_on(ep, row.half_precision_option)
    return row.half_precision_on_float16 and float16


def steps(ep: EpSpec, float16: bool) -> tuple[Step, ...]:
    """The re-runs of a failing result on ``ep`` (a DirectML EP), in the ladder's order; ``float16``: the case's
    tensors are all float16 (where onnxruntime's DirectML EP sets the half-precision flag itself)."""
    row = facts(ep)
    plain = check_options(row.name, ep.options)  # each flag in this EP's own spelling
    found: list[Step] = []
    # The reference adapter: the same DLLs and flags, on the reference's own runner (which has the one adapter).
    if not build_of(plain).reference:
        reference = _kept(row, plain, ADAPTER_OPTIONS)
        found.append(Step(Rung.REFERENCE, _spec(row, reference | {REFERENCE: ON})))
    for other in other_paths(row):
        kept = _kept(other, plain, tuple(k for k in (other.half_precision_option,) if k is not None))
        found.append(Step(Rung.OTHER_PATH, _spec(other, kept)))
    # DirectML's half-precision flag, where the failing result computed with it: off on the EP itself where an
    # option sets it; else (onnxruntime sets it, and nothing turns it off) on the other path, on, to compare with
    # that path's result without it.
    if half_precision_on(ep, float16) and row.half_precision_option is not None:
        found.append(Step(Rung.HALF_PRECISION, _spec(row, plain | {row.half_precision_option: OFF})))
    elif half_precision_on(ep, float16):
        for other in other_paths(row):
            if other.half_precision_option is not None:
                kept = _kept(other, plain) | {other.half_precision_option: ON}
                found.append(Step(Rung.HALF_PRECISION, _spec(other, kept)))
    off = row.metacommands_off_option
    if off is not None and not flag_on(ep, off):
        found.append(Step(Rung.METACOMMANDS, _spec(row, plain | {off: ON})))
    earlier = previous_build(build_of(plain))
    if earlier is not None:
        dlls = {"directml": earlier.directml, "ort": earlier.onnxruntime}
        changed = {key: value for key, value in plain.items() if key not in DLL_OPTIONS} | dlls
        found.append(Step(Rung.BUILD, _spec(row, changed)))
    cpu = cpu_row()
    if cpu is not None:
        found.append(Step(Rung.CPU, _spec(cpu, {})))
    return tuple(found)
