"""Execution modes (ep_table.Mode): ``--modes``, and mode equality: a case's outputs in every mode of one EP must be
bit-equal (docs/execution-providers.md#execution-modes).

Each mode is an EP of its own, its option in the EP's text (``dmlop:queue=compute``), so each result is judged
against the oracle as any EP's. ``--modes`` adds, for each EP of the run that has modes, one EP per other value of
each mode, one mode changed at a time. After the run, the results of one case on one EP's modes (a *family*: the same
EP with the same options but its modes') are compared by their outputs' value hashes (Result.values_sha256): where a
mode's differ from the family's first (its default modes' where those ran), that result is a FAIL ``mode_mismatch``
naming both modes and the first differing element, whatever each is against the oracle: DirectML's output must not
depend on how it was bound or scheduled, and no oracle or tolerance is needed to say so.

To name the element, a run with a family keeps each mode's outputs (``keep_values``) in ``values/`` in its report
folder, one .npy per value hash, so that bit-equal outputs are kept once; the pairs a mismatch names are kept as its
evidence, and the rest removed once compared (``mode_equality``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from conformance.cases.fingerprint import logical_values
from conformance.ep.providers import EpSpec, facts, modes_of, parse_ep
from conformance.ep_table import modes_apart
from conformance.model import MODE_MISMATCH, Status
from conformance.results import Result

VALUES_FOLDER = "values"  # in the report folder: each mode's outputs by value hash
KEEP_AT_MOST = 1 << 26  # bytes: an output over 64 MiB is compared by its hash alone (no element named)


def with_modes(eps: Sequence[EpSpec]) -> list[EpSpec]:
    """``eps`` and, after each EP that has modes, that EP with each other value of each of its modes (one mode changed
    at a time from the EP's own options), each EP once."""
    out: dict[str, EpSpec] = {}
    for ep in eps:
        out.setdefault(ep.text, ep)
        for mode in facts(ep).modes:
            for value in (mode.default, *mode.others):
                if modes_of(ep)[mode.option] == value:
                    continue
                other = replace(ep, options={**ep.options, mode.option: value})
                out.setdefault(other.text, other)
    return list(out.values())


def family(ep: EpSpec) -> tuple[str, str, str | None, tuple[tuple[str, str], ...]] | None:
    """What the EPs of one family share: the EP and its options but its modes'; None for an EP without modes."""
    modes = {mode.option for mode in facts(ep).modes}
    if not modes:
        return None
    rest = tuple(sorted((key, value) for key, value in ep.options.items() if key not in modes))
    return (ep.alias, ep.name, ep.library, rest)


def has_family(eps: Sequence[EpSpec]) -> bool:
    """Whether two of ``eps`` are modes of one EP: what mode equality compares."""
    keys = [key for key in map(family, eps) if key is not None]
    return len(keys) != len(set(keys))


def keep_values(folder: str, values: Mapping[str, np.ndarray], hashes: Mapping[str, str]) -> None:
    """Each output (by DML name) kept in ``folder`` as ``<its value hash>.npy``, unless one is there already or it
    is over KEEP_AT_MOST bytes; written under a temporary name and renamed, since two workers may keep one hash."""
    os.makedirs(folder, exist_ok=True)
    for name, array in values.items():
        digest = hashes.get(name)
        path = os.path.join(folder, f"{digest}.npy")
        if digest is None or array.nbytes > KEEP_AT_MOST or os.path.exists(path):
            continue
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".part")
        try:
            with os.fdopen(handle, "wb") as file:
                np.save(file, np.ascontiguousarray(array), allow_pickle=False)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise


def first_difference(folder: str, name: str, mine: str, theirs: str) -> str:
    """Where two kept outputs (by value hash) first differ bit for bit, in words: the element's index and both
    values, and how many differ; what could not be compared where either was not kept."""
    try:
        ours = np.load(os.path.join(folder, f"{mine}.npy"), allow_pickle=False)
        other = np.load(os.path.join(folder, f"{theirs}.npy"), allow_pickle=False)
    except OSError:
        return (
            f"{name}: values_sha256 {mine[:12]}… against {theirs[:12]}… (the outputs were not kept: over 64 MiB, or "
            "from before a --resume)"
        )
    a, b = logical_values(ours), logical_values(other)
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{name}: {a.size} {a.dtype} element(s) against {b.size} {b.dtype}"
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    differs = np.flatnonzero(a.view(width) != b.view(width))
    at = int(differs[0])
    index = np.unravel_index(at, ours.shape) if ours.size == a.size else (at,)
    where = ", ".join(str(int(i)) for i in index)
    digits = 2 * a.dtype.itemsize
    mine_bits, their_bits = (int(row.view(width)[at]) for row in (a, b))
    return (
        f"{name}: {differs.size} of {a.size} element(s) differ, first at [{where}]: {a[at].item()!r} "
        f"(0x{mine_bits:0{digits}X}) against {b[at].item()!r} (0x{their_bits:0{digits}X})"
    )


@dataclass(frozen=True)
class _Member:
    place: int  # in the results
    ep: EpSpec
    defaults: bool  # every mode at its default


def _ran_in(result: Result, ep: EpSpec) -> dict[str, str]:
    """The modes ``result`` ran in: its record (a case's own modes included), else its EP's."""
    recorded = (result.directml or {}).get("modes")
    return {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else modes_of(ep)


def _modes_apart(mine: Mapping[str, str], theirs: Mapping[str, str]) -> tuple[str, str]:
    """The modes in which two runs of one family differ, each one's in words: ``compile=graph`` and
    ``compile=operator``."""
    apart = [key for key in mine if mine[key] != theirs.get(key)]
    return ", ".join(f"{key}={mine[key]}" for key in apart), ", ".join(f"{key}={theirs.get(key)}" for key in apart)


def _mismatch(result: Result, base: Result, base_ep: EpSpec, ep: EpSpec, folder: str | None) -> Result | None:
    """``result`` as a FAIL ``mode_mismatch`` where its outputs differ from ``base``'s; None where they are equal or
    either has none to compare."""
    mine, theirs = result.values_sha256, base.values_sha256
    if not mine or not theirs or mine == theirs:
        return None
    names = [name for name in mine if mine.get(name) != theirs.get(name)]
    where = [
        first_difference(folder, name, mine[name], theirs[name])
        if folder is not None and name in theirs
        else f"{name}: values_sha256 {mine[name][:12]}… against {theirs.get(name, 'none')[:12]}…"
        for name in names
    ]
    verdict = f"{result.status.value} {result.failure_kind}" if result.failure_kind else result.status.value
    said = f": {result.message}" if result.message else ""
    mine_text, their_text = _modes_apart(_ran_in(result, ep), _ran_in(base, base_ep))
    message = (
        f"outputs differ bit for bit between two modes of one EP, {mine_text} ({ep.text}) against {their_text} "
        f"({base_ep.text}): " + "; ".join(where) + f"\n(against the oracle: {verdict}{said})"
    )
    details = {**result.details, "mode_mismatch": {"against": base_ep.text, "outputs": names}}
    return replace(result, status=Status.FAIL, failure_kind=MODE_MISMATCH, message=message, details=details)


def mode_equality(results: Sequence[Result], folder: str | None) -> tuple[list[Result], set[str]]:
    """The run's results with each mode's that differ from its family's first made FAIL ``mode_mismatch``, and the
    value hashes those mismatches name (whose kept outputs are their evidence). ``folder``: where the outputs were
    kept (None: nothing kept, the hashes alone named)."""
    families: dict[tuple[str, object], list[_Member]] = {}
    parsed: dict[str, EpSpec] = {}  # each EP text once: a run holds a few EPs and many results
    for place, result in enumerate(results):
        ep = parsed.get(result.ep) or parsed.setdefault(result.ep, parse_ep(result.ep))
        key = family(ep)
        if key is not None:
            defaults = not modes_apart(facts(ep), modes_of(ep))
            families.setdefault((result.case, key), []).append(_Member(place, ep, defaults))
    out = list(results)
    evidence: set[str] = set()
    for members in families.values():
        if len(members) < 2:
            continue
        base = next((m for m in members if m.defaults), members[0])
        for member in members:
            if member is base:
                continue
            changed = _mismatch(results[member.place], results[base.place], base.ep, member.ep, folder)
            if changed is not None:
                out[member.place] = changed
                evidence |= set((changed.values_sha256 or {}).values()) | set(
                    (results[base.place].values_sha256 or {}).values()
                )
    return out, evidence


def prune_values(folder: str, evidence: set[str]) -> int:
    """The kept outputs no mismatch names removed from ``folder`` (and the folder, where none is left); how many
    were kept as evidence."""
    kept = 0
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0
    for name in names:
        if name.removesuffix(".npy") in evidence:
            kept += 1
        else:
            os.unlink(os.path.join(folder, name))
    if not kept:
        os.rmdir(folder)
    return kept
