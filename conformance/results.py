"""Results: one per (case, EP), and the results.json that every report is rendered from."""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from conformance.model import Status

SCHEMA_VERSION = 1
_GZIP_MAGIC = b"\x1f\x8b"
# Statuses that make a run fail (exit code 1). INVALID is a negative case rejected as expected.
FAILING = frozenset({Status.FAIL, Status.FLAKY, Status.ERROR, Status.CRASH, Status.TIMEOUT, Status.DEVICE_LOST})
# Statuses of a result its EP executed: a session was created and ran, and its outputs were judged. An EP with none
# never started (the gate fails it); one with some that later cannot create a session has lost its device (survive).
EXECUTED = frozenset({Status.PASS, Status.FAIL, Status.FLAKY, Status.QUALITY_WARNING})


@dataclass(frozen=True)
class Repeat:
    """One of the runs of a (case, EP) under --repeat: its verdict, and each output's fingerprint.tensor_sha256 by
    DML tensor name (none where the EP returned no outputs: an error, a refused session)."""

    status: Status
    failure_kind: str | None = None
    outputs_sha256: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "failure_kind": self.failure_kind,
            "outputs_sha256": dict(self.outputs_sha256),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Repeat:
        return cls(Status(data["status"]), data.get("failure_kind"), dict(data.get("outputs_sha256") or {}))


@dataclass(frozen=True)
class Result:
    case: str
    operator: str
    ep: str
    status: Status
    failure_kind: str | None = None
    data_type: str = ""
    lowering: str | None = None
    message: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    placement: Mapping[str, str] = field(default_factory=dict)
    feature_level: str = ""
    repro: str = ""
    seconds: float = 0.0
    dml_operator: str = ""  # the DML operator(s) the case's DirectML lowering reaches (dml_operators)
    details: Mapping[str, Any] = field(default_factory=dict)  # what a report draws (compare_common.mismatch_details)
    parameters: Mapping[str, str] = field(default_factory=dict)  # the descriptor's fields as texts (parameters.py)
    # Where the verdict alone differs from the one the case got packed with other cases (batch.py): that verdict
    # and its first line. The verdict above is the case's own; this says the EP's result depended on its neighbours.
    packed: str = ""
    # Each generated input's fingerprint.tensor_sha256 by DML tensor name; empty where the case got no inputs
    # (INVALID, refused before generation) and in results.json files written before the field existed.
    inputs_sha256: Mapping[str, str] = field(default_factory=dict)
    # Each output's fingerprint.tensor_sha256 by DML tensor name, as the EP returned it (ONNX's dtypes: TopK's indices
    # are int64); empty where the EP returned no outputs (INVALID, NOT_SUPPORTED, an execution error), where a
    # harness error replaced the verdict, for a FLAKY result (whose runs returned different bytes: each run's are
    # in ``repeats``), and in results.json files written before the field existed.
    outputs_sha256: Mapping[str, str] = field(default_factory=dict)
    # Each run's verdict and output hashes, in order, where --repeat ran the case more than once (run/repeat.py);
    # empty for a case run once, and for one that was not executed (INVALID, NOT_SUPPORTED before a session, ...).
    repeats: tuple[Repeat, ...] = ()

    def to_json(self) -> dict[str, Any]:
        # Field by field rather than dataclasses.asdict, whose deep copy of every mapping was most of the cost of
        # recording a small case's result; _json_value copies what may nest.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["status"] = self.status.value
        data["metrics"] = _json_value(self.metrics)
        data["placement"] = dict(self.placement)
        data["details"] = _json_value(self.details)
        data["parameters"] = dict(self.parameters)
        data["inputs_sha256"] = dict(self.inputs_sha256)
        data["outputs_sha256"] = dict(self.outputs_sha256)
        # Written only where there are repeats: a run without --repeat writes what readers before the field read.
        del data["repeats"]
        if self.repeats:
            data["repeats"] = [repeat.to_json() for repeat in self.repeats]
        return data


def differing_tensors(old: Mapping[str, str], new: Mapping[str, str]) -> tuple[str, ...]:
    """The tensors whose hashes differ between two records by DML tensor name (one in a record only counts too),
    in order of first appearance: what --repeat compares run by run, and dmlconf diff result by result."""
    return tuple(name for name in dict.fromkeys([*old, *new]) if old.get(name) != new.get(name))


def _json_value(value: Any) -> Any:
    """Strict JSON has no NaN or infinity: such a value is written as "nan", "inf" or "-inf" (in lists and
    mappings too)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {key: _json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(item) for item in value]
    return value


def write_text_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``: a reader sees
    the old file or the new one, never half of one, and a failed write leaves no temporary file behind."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def write_results(path: str, env: Mapping[str, Any], results: Sequence[Result]) -> None:
    """Write results.json atomically (a reader never sees half a file)."""
    document = {"schema_version": SCHEMA_VERSION, "environment": dict(env), "results": [r.to_json() for r in results]}
    write_text_atomic(path, json.dumps(document, indent=1, allow_nan=False, default=str) + "\n")


_RESULT_FIELDS = frozenset(f.name for f in fields(Result))


def result_from_json(data: Mapping[str, Any]) -> Result:
    """A Result from its ``to_json`` form; a field the file lacks (written by an older version) takes its
    default, and one this version does not know (written by a newer one) is left out, so SCHEMA_VERSION only
    changes when an existing field changes meaning."""
    known = {name: value for name, value in data.items() if name in _RESULT_FIELDS}
    repeats = tuple(Repeat.from_json(repeat) for repeat in data.get("repeats") or ())
    return Result(**{**known, "status": Status(data["status"]), "repeats": repeats})


def read_results(path: str) -> tuple[dict[str, Any], list[Result]]:
    """A results.json's environment and results; gzip-compressed (results.json.gz) too, told by its first bytes:
    committed runs of many EPs are kept compressed, and every reader (report, diff, merge) takes them as they are."""
    with open(path, "rb") as raw:
        compressed = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        try:
            text = (gzip.GzipFile(fileobj=raw) if compressed else raw).read().decode("utf-8")
        except (EOFError, zlib.error) as error:  # a cut or damaged .gz: gzip.BadGzipFile alone is an OSError
            raise ValueError(f"damaged gzip data: {error}") from None
    document = json.loads(text)
    if document.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{path}: schema_version {document.get('schema_version')!r} is not {SCHEMA_VERSION}")
    results = [result_from_json(r) for r in document["results"]]
    return document["environment"], results
