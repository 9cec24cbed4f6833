"""Results: one per (case, EP), and the results.json that every report is rendered from."""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import math
import os
import secrets
import stat
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from conformance.environment import Environment, environment_from_json
from conformance.model import EP_NOT_STARTED, Status
from conformance.records import RecordError, Where, kind, read_record, read_value, record_json, shown
from conformance.whose import Triage

SCHEMA_VERSION = 1
_GZIP_MAGIC = b"\x1f\x8b"
# Statuses that make a run fail (exit code 1). INVALID is a negative case rejected as expected.
FAILING = frozenset({Status.FAIL, Status.FLAKY, Status.ERROR, Status.CRASH, Status.TIMEOUT, Status.DEVICE_LOST})
# Statuses of an answer that does not fail: the outputs match the oracle (PASS), or differ only where the spec leaves
# the behaviour open (QUALITY_WARNING). A known failure that runs to one no longer fails; a run again that gives one
# makes its failure FLAKY; a triage re-run that gives one passes its rung.
PASSING = frozenset({Status.PASS, Status.QUALITY_WARNING})
# Statuses of a result its EP executed: a session was created and ran, and its outputs were judged. An EP with none
# never started (the gate fails it); one with some that later cannot create a session has lost its device (survive).
EXECUTED = frozenset({Status.PASS, Status.FAIL, Status.FLAKY, Status.QUALITY_WARNING})


def ep_not_started(result: Result) -> bool:
    """Whether ``result`` is its EP's failure to create a session at all (NOT_SUPPORTED ``ep_not_started``): no
    verdict on the case, not the EP declining it."""
    return result.status is Status.NOT_SUPPORTED and result.failure_kind == EP_NOT_STARTED


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
    def from_json(cls, data: object, where: Where = "repeat") -> Repeat:
        """A Repeat from its ``to_json`` form; RecordError where it does not fit."""
        return read_record(cls, data, where)


# The parts of a result's details that report.html draws, as compare/ writes them: each is checked when results.json
# is read, so that a hostile file is refused there rather than half drawn.
_BIGGEST_TENSOR = 2**63  # elements: a shape beyond it is no tensor a run made, and the map's arithmetic overflows


def _drawable_shape(shape: tuple[int, ...], where: Where) -> str | None:
    """A failing tensor's shape as the mismatch map bins it: no size below zero, no more elements than fit."""
    if any(size < 0 for size in shape):
        return f"{list(shape)}: a size below zero"
    return f"{list(shape)}: more elements than any tensor" if math.prod(shape) > _BIGGEST_TENSOR else None


def _counted_buckets(buckets: tuple[tuple[str, int, int], ...], where: Where) -> str | None:
    """ULP histogram buckets ([label, count, lowest ULP]) as the histogram draws them: no count below zero."""
    negative = [index for index, (_, count, _) in enumerate(buckets) if count < 0]
    return f"bucket {negative[0]} counts {buckets[negative[0]][1]} elements" if negative else None


@dataclass(frozen=True)
class DrawnTable:
    """The first mismatches: a header row and rows of texts."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class DrawnSequence:
    """TOP_K1's first failing sequence, side by side (compare/top_k1_view.py)."""

    where: str
    input: tuple[str, ...]
    input_size: int
    expected_values: tuple[str, ...]
    actual_values: tuple[str, ...]
    expected_indices: tuple[int, ...]
    actual_indices: tuple[int, ...]
    why: tuple[str, ...] = ()


@dataclass(frozen=True)
class DrawnTie:
    """A tied value of TOP_K1's sequence: where it is tied in the input and the indices each side selected."""

    value: str | float
    tied_at: tuple[int, ...]
    expected: tuple[int, ...]
    actual: tuple[int, ...]
    tied_count: int | None = None


@dataclass(frozen=True)
class Drawn:
    """What report.html draws of a failure's details: a ULP histogram, a map of the mismatches, the table of first
    mismatches, TOP_K1's sequence and ties. Other keys are the writer's own and are not drawn."""

    tensor: str | None = None
    shape: tuple[int, ...] | None = field(default=None, metadata={"check": _drawable_shape})
    positions: tuple[int, ...] = ()
    mismatches: int | None = None
    table: DrawnTable | None = None
    ulp_histogram: tuple[tuple[str, int, int], ...] = field(default=(), metadata={"check": _counted_buckets})
    max_ulp: int | None = None
    atol: float | None = None
    sequence: DrawnSequence | None = None
    ties: tuple[DrawnTie, ...] = ()


def _drawable(details: Mapping[str, Any], where: Where) -> None:
    """A result's ``details`` hold what a report draws (compare/common.py's mismatch_details, TOP_K1's sequence and
    ties) in the shape the report draws it from: checked where results.json is read, not where it is drawn."""
    read_record(Drawn, details, where)


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
    # What a report draws (compare/common.py's mismatch_details; ``Drawn`` says which parts, checked when read).
    details: Mapping[str, Any] = field(default_factory=dict, metadata={"check": _drawable})
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
    # Each output's value hash (fingerprint.value_hashes): its logical elements, integers as int64, so equal values hash
    # alike on every path (DirectML's padded, strided UINT32 buffers and onnxruntime's packed int64 arrays); what
    # ``dmlconf diff`` compares where both runs have it. Empty where outputs_sha256 is, and in older files.
    values_sha256: Mapping[str, str] = field(default_factory=dict)
    # Each run's verdict and output hashes, in order, where --repeat ran the case more than once (run/repeat.py);
    # empty for a case run once, and for one that was not executed (INVALID, NOT_SUPPORTED before a session, ...).
    repeats: tuple[Repeat, ...] = ()
    # What DirectML's operator API answered (--ep dmlop): CreateOperator's and CompileOperator's HRESULTs, the
    # execution flags, the compiled operator's binding properties, each step's milliseconds. Empty for other EPs.
    directml: Mapping[str, Any] = field(default_factory=dict)
    # Whose failure it is, where triage re-ran it (conformance/triage/, conformance/whose.py); None for a result
    # not triaged (every passing one, and every one of a run without --triage).
    triage: Triage | None = None

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
        data["values_sha256"] = dict(self.values_sha256)
        # Written only where there are some: a run without --repeat (or --ep dmlop) writes what readers before the
        # fields read.
        del data["repeats"], data["directml"], data["triage"]
        if self.triage is not None:
            data["triage"] = _json_value(record_json(self.triage, whole=True))
        if self.directml:
            data["directml"] = _json_value(self.directml)
        if self.repeats:
            data["repeats"] = [repeat.to_json() for repeat in self.repeats]
        return data


_JSON_TEXT = "_json_text"  # the attribute that memoizes a result's JSON text (json_text)


def json_text(result: Result) -> str:
    """The result's ``to_json`` as one line of JSON, encoded once: results.jsonl and results.json write the same
    text. The text is memoized on the (frozen) object, outside its fields: a result changed is a new object
    (dataclasses.replace), which encodes itself anew, and a worker's result, encoded there, brings its text along to
    the process that writes it (pickling keeps it), so that 100,000 results are not encoded again in one process."""
    text = result.__dict__.get(_JSON_TEXT)
    if text is None:
        text = json.dumps(result.to_json(), allow_nan=False, default=str)
        object.__setattr__(result, _JSON_TEXT, text)
    return text


def verdict_text(status: Status, failure_kind: str | None) -> str:
    """ "FAIL (values)", or "PASS" without a kind: how every report and front-end writes a verdict."""
    return f"{status.value} ({failure_kind})" if failure_kind else status.value


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


class NotOurFile(OSError):
    """A path the harness writes, or reads back as its own, that is a symbolic link or not a regular file: one line
    naming it and what it is. A checkout the harness runs in may be a pull request's, which can commit a link where
    results.jsonl will be: the harness never writes through one (docs/reliability.md#planted-links)."""


def _what_is(path: str) -> str:
    """What stands at ``path`` (a link is not followed), in words: "a symbolic link to X", "a FIFO"."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "gone"
    if stat.S_ISLNK(mode):
        with contextlib.suppress(OSError):
            return f"a symbolic link to {os.readlink(path)}"
        return "a symbolic link"
    kinds = [
        (stat.S_ISREG, "a file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ]
    kinds += [(stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")]
    return next((words for test, words in kinds if test(mode)), "not a regular file")


def not_our_file(path: str, meant: str = "a regular file") -> NotOurFile:
    """The refusal of ``path``: one line saying what it is, what the harness needs there, and what to do."""
    return NotOurFile(f"{path}: {_what_is(path)}, not {meant}: dmlconf does not write through it; remove it")


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; Windows: checked by lstat before the open
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO opens at once (and is refused) instead of waiting for a reader


def open_own_file(path: str, flags: int) -> int:
    """``path`` opened with ``flags`` (os.O_*) without following a symbolic link at its last component, and only
    where it is (or is created as) a regular file: its descriptor; NotOurFile for a link, a FIFO, a device, a
    folder; OSError as ``os.open`` raises it otherwise."""
    if not _NOFOLLOW and os.path.islink(path):
        raise not_our_file(path)
    try:
        fd = os.open(
            path, flags | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0), 0o666
        )
    except OSError as error:
        # ELOOP: a link at the last component (O_NOFOLLOW); ENXIO: a FIFO without a reader; EISDIR: a folder
        if error.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR) or os.path.islink(path):
            raise not_our_file(path) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise not_our_file(path)
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _checkout_parts(path: str) -> list[str]:
    """The components of ``path`` that lie in the working folder (the path's own for a relative one; those below
    the working folder for an absolute path in it), each as a path to lstat, outermost first; always the last one.
    The working folder may be a pull request's checkout, where a committed link would lead the harness's writes
    elsewhere; the folders above it are the machine's."""
    full = os.path.normpath(os.path.abspath(path))
    cwd = os.path.normpath(os.getcwd())
    below = os.path.relpath(full, cwd).split(os.sep) if _in_checkout(path) else []
    prefixes = [os.path.join(cwd, *below[: depth + 1]) for depth in range(len(below))]
    return prefixes if prefixes else [full]


def _in_checkout(path: str) -> bool:
    """Whether ``path`` lies in the working folder (``_checkout_parts``)."""
    full = os.path.normpath(os.path.abspath(path))
    return full.startswith(os.path.normpath(os.getcwd()).rstrip(os.sep) + os.sep)


def own_folder(path: str) -> None:
    """The folder ``path`` made where it is missing, refusing (NotOurFile) a symbolic link standing at its last
    component or at any component in the working folder (``_checkout_parts``)."""
    for prefix in _checkout_parts(path):
        if os.path.islink(prefix):  # a file there fails makedirs below, which names it
            raise not_our_file(_shown_as_given(path, prefix), "a folder")
    os.makedirs(path, exist_ok=True)


def _shown_as_given(path: str, prefix: str) -> str:
    """``prefix`` (absolute) as the user wrote it: relative where ``path`` was."""
    return prefix if os.path.isabs(path) else os.path.relpath(prefix)


def write_text_atomic(path: str, text: str, in_place_device: bool = True) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and ``os.replace``: a reader sees
    the old file or the new one, never half of one, and a failed write leaves no temporary file behind; a link at
    ``path`` is replaced, never followed. A device or a pipe (``/dev/stdout``, ``/dev/full``, a FIFO) that the user
    named is written in place (renaming a file over it would replace the device, not write to it), and so is a link
    the user named outside the working folder (``_in_place``); a file of a report folder (``in_place_device``
    False) is replaced whatever stands there."""
    if in_place_device and _in_place(path):
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        return
    temporary, fd = _temporary_beside(path)
    try:
        with open(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def _temporary_beside(path: str) -> tuple[str, int]:
    """A new file beside ``path``, made here (O_EXCL: nothing planted at a guessable name is opened): its name and
    descriptor."""
    while True:
        temporary = f"{path}.{secrets.token_hex(6)}.tmp"
        try:
            return temporary, open_own_file(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            continue


def _in_place(path: str) -> bool:
    """Whether a path the user named is written where it leads rather than replaced: a device or a pipe, and
    outside the working folder a link too (``/dev/stdout`` leads to the process's output, whatever that is: a file
    there must not be renamed over the link); never a link in the working folder, which a checkout may have
    planted."""
    if _in_checkout(path):
        return _device(path) and not os.path.islink(path)
    return os.path.islink(path) or _device(path)


def _device(path: str) -> bool:
    """Whether ``path`` is something that exists and is neither a regular file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def write_results(path: str, env: Mapping[str, Any], results: Sequence[Result]) -> None:
    """Write results.json atomically (a reader never sees half a file), replacing whatever stands at ``path``: the
    environment indented, then one result a line (``json_text``: the text results.jsonl has, each encoded once, by
    json's C encoder, which an indented document would not use)."""
    environment = json.dumps(dict(env), indent=1, allow_nan=False, default=str).replace("\n", "\n ")
    listed = "[\n  " + ",\n  ".join(json_text(result) for result in results) + "\n ]" if results else "[]"
    document = f'{{\n "schema_version": {SCHEMA_VERSION},\n "environment": {environment},\n "results": {listed}\n}}\n'
    write_text_atomic(path, document, in_place_device=False)


def result_from_json(data: object, where: str = "result") -> Result:
    """A Result from its ``to_json`` form; a field the file lacks (written by an older version) takes its
    default, and one this version does not know (written by a newer one) is left out, so SCHEMA_VERSION only
    changes when an existing field changes meaning. RecordError (a ValueError) names ``where`` and what is wrong."""
    return read_record(Result, data, where)


@dataclass(frozen=True)
class ResultsFile:
    """A whole results.json, read once: the run's environment and its results."""

    environment: Environment
    results: tuple[Result, ...]


def _not_json(constant: str) -> Any:
    """json's hook for NaN and Infinity: a results.json writes non-finite numbers as text, so these never came from
    a writer of it."""
    raise RecordError("", f"{constant} is not JSON (results.json writes a non-finite number as text)")


def parse_results(text: str) -> ResultsFile:
    """A results.json's text as a ResultsFile; ValueError for text that is not JSON, RecordError (one line: where,
    what) for JSON that is not a results.json of this schema."""
    try:
        document = json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise RecordError("", "nested too deeply to be a results.json") from None
    if not isinstance(document, dict):
        raise RecordError("", f"expected an object with schema_version, environment and results, got {kind(document)}")
    if "schema_version" not in document:
        raise RecordError("schema_version", "missing: not a results.json")
    if document["schema_version"] != SCHEMA_VERSION:
        raise RecordError("schema_version", f"{shown(document['schema_version'])} is not {SCHEMA_VERSION}")
    if "results" not in document:
        raise RecordError("results", "missing")
    environment = environment_from_json({} if document.get("environment") is None else document["environment"])
    results = read_value(document["results"], tuple[Result, ...], "results")
    return ResultsFile(environment, results)


def gzipped(path: str) -> bool:
    """Whether the file at ``path`` is gzip-compressed (results.json.gz), told by its first bytes; False where it
    cannot be read (the reader that follows says why)."""
    try:
        with open(path, "rb") as raw:
            return raw.read(2) == _GZIP_MAGIC
    except OSError:
        return False


def read_results(path: str) -> ResultsFile:
    """A results.json, read into records once; gzip-compressed (results.json.gz) too, told by its first bytes:
    committed runs of many EPs are kept compressed, and every reader (report, diff, merge) takes them as they are.
    OSError where it cannot be read, ValueError where it is not JSON, RecordError where it is not a results.json."""
    with open(path, "rb") as raw:
        compressed = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        try:
            text = (gzip.GzipFile(fileobj=raw) if compressed else raw).read().decode("utf-8")
        except (EOFError, zlib.error) as error:  # a cut or damaged .gz: gzip.BadGzipFile alone is an OSError
            raise ValueError(f"damaged gzip data: {error}") from None
    return parse_results(text)
