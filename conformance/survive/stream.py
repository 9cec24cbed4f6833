"""results.jsonl: every result appended as it finishes, so that a run killed midway (kill -9, a power cut) keeps
what it finished, and ``dmlconf run --resume`` runs only the rest.

The first line says which run it is: a hash of the (case id, EP) pairs in order and of the case files' bytes, the
options that decide verdicts, the onnxruntime and NumPy packages' versions, and what each EP executes on
(identity.executing: DirectML's DLLs (versions, hashes), the runner's hash, the adapter, driver, chain); ``--resume``
refuses a file of another run with one line naming the first part that differs. Each further line is one result
with its pair's index in the run. A line cut short by the kill (no newline, or not JSON) is dropped, and the file
cut back to the last whole line before anything is appended.

Each line is written with one ``write`` and flushed to the operating system at once: a killed process loses
nothing it had finished. ``fsync`` (the disk itself) runs at most once a second and at the end: a power cut
may lose the last second.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

from conformance.cases.parse import Entry
from conformance.ep.directml import DirectML, package_version
from conformance.ep.providers import EpSpec
from conformance.results import SCHEMA_VERSION, Result, json_text, open_own_file, result_from_json
from conformance.run.identity import PACKAGES, cases_sha256, executing, plan_sha256
from conformance.run.options import RunOptions

STREAM_NAME = "results.jsonl"
FSYNC_EVERY = 1.0  # seconds


class StreamError(Exception):
    """A results.jsonl that --resume cannot use: one line."""


def run_identity(
    entries: Sequence[Entry],
    eps: Sequence[EpSpec],
    options: RunOptions,
    case_files_sha256: str | None = None,
    directml: Mapping[str, DirectML] | None = None,
) -> dict[str, Any]:
    """What makes two runs the same run: their pairs in order, the case files' contents, the verdicts' options, the
    onnxruntime and NumPy packages installed, and what each EP executes on (``directml``: each DirectML EP's, as
    dml_here.directml_for found it). ``case_files_sha256``: identity.cases_sha256 of the entries' files, where the
    caller has it already (dmlconf run takes it for results.json): else it is taken here."""
    return {
        "schema_version": SCHEMA_VERSION,
        "pairs": len(entries) * len(eps),
        "pairs_sha256": plan_sha256((entry.id for entry in entries), eps),
        # results.json's harness.cases_sha256
        "case_files_sha256": case_files_sha256 or cases_sha256(entry.path for entry in entries)[0],
        "feature_level": str(options.feature_level) if options.feature_level else None,
        "directml_levels": {label: str(level) for label, level in options.directml_levels},
        "max_elements": options.max_elements,
        # Only where given: a results.jsonl written before --repeat existed is still the same run without it.
        **({"repeat": options.repeat} if options.repeat > 1 else {}),
        # What else decides verdicts: an upgrade between the kill and the resume would mix two builds' results.
        "software": {p: package_version(p) for p in (*PACKAGES, "numpy")},
        # Each EP's DLLs, device and driver: a new build or driver between the kill and the resume would credit the
        # killed run's results to it.
        "executing": executing(eps, directml or {}),
    }


_SHA256 = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{52}\b")
_DEFAULTS: dict[tuple[str, ...], Any] = {("repeat",): 1}  # a part recorded only where it is not its default


def _leaves(record: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every (path, value) of an identity, mappings walked in their order."""
    for key, value in record.items():
        if isinstance(value, Mapping):
            yield from _leaves(value, (*path, str(key)))
        else:
            yield (*path, str(key)), value


def _shown(value: Any) -> str:
    """A value as the refusal shows it: hashes cut to 12 digits, an absent part as such."""
    if value is None:
        return "none"
    return _SHA256.sub(r"\1…", value if isinstance(value, str) else json.dumps(value))


def _part_name(path: tuple[str, ...]) -> str:
    """What a part of the identity is, in the words of the command line and results.json."""
    match path:
        case ("executing", ep, *part):
            return f"EP {ep}: {'.'.join(part)}"
        case ("directml_levels", ep):
            return f"EP {ep}: target feature level"
        case ("software", package):
            return package
        case ("pairs",):
            return "(case, EP) pairs:"
        case ("pairs_sha256",):
            return "(case, EP) pairs' ids in order: sha256"
        case ("case_files_sha256",):
            return "case files' contents: sha256"
        case ("feature_level",) | ("max_elements",) | ("repeat",):
            return "--" + path[0].replace("_", "-")
    return ".".join(path) + ":"


def identity_difference(then: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """The first part in which two run identities differ, with its value in each: ``EP dml: DirectML.dll 1.15.4.0
    (sha256 ab12…) then, 1.15.2.0 (sha256 cd34…) now``; a part one of them lacks (a results.jsonl of an older
    dmlconf) is "not recorded" there."""
    old, new = dict(_leaves(then)), dict(_leaves(now))
    for path in dict.fromkeys([*new, *old]):
        missing = _DEFAULTS.get(path, "not recorded")
        before, after = old.get(path, missing), new.get(path, missing)
        if before != after:
            return f"{_part_name(path)} {_shown(before)} then, {_shown(after)} now"
    return "the same parts in another form"


def read_stream(path: str, identity: dict[str, Any], plan: Sequence[tuple[str, str]]) -> tuple[dict[int, Result], int]:
    """The results a killed run left in ``path``, and the byte length of its whole lines (where to append).
    ``plan``: the run's (case id, EP) pairs in order; a result whose case and EP are not its pair's in the plan
    is refused (StreamError), since it would be credited to another case."""
    done: dict[int, Result] = {}
    with os.fdopen(open_own_file(path, os.O_RDONLY), "rb") as handle:
        data = handle.read()
    end = 0
    for number, line in enumerate(data.splitlines(keepends=True), 1):
        if not line.endswith(b"\n"):
            break  # the line the kill cut short (the header too: then nothing is kept, and a new file begins)
        try:
            record = json.loads(line)
            if number == 1:
                if set(record) != {"run"} or not isinstance(record["run"], Mapping):
                    raise ValueError("no run identity")
                if record["run"] != identity:
                    raise StreamError(f"{path} is from another run: {identity_difference(record['run'], identity)}")
            else:
                pair, result = int(record["pair"]), result_from_json(record["result"])
                _check_place(f"{path}:{number}", pair, result, plan)
                done[pair] = result
        except (ValueError, KeyError, TypeError) as error:
            if number == 1:
                raise StreamError(f"{path}:1:1: not a results.jsonl header ({error})") from None
            break  # not what this file's writer writes: nothing after it is trusted
        end += len(line)
    return done, end


def _check_place(where: str, pair: int, result: Result, plan: Sequence[tuple[str, str]]) -> None:
    """StreamError where the result is not of the (case, EP) the plan has at ``pair``: a line another writer put
    there, or a file edited by hand, would credit a result to another case."""
    if not 0 <= pair < len(plan):
        raise StreamError(f"{where}: pair {pair} is outside this run's {len(plan)} (case, EP) pair(s)")
    case, ep = plan[pair]
    if (result.case, result.ep) != (case, ep):
        raise StreamError(
            f"{where}: the result of {result.case} [{result.ep}] stands at pair {pair}, which is {case} [{ep}] in "
            "this run"
        )


class StreamWriteError(Exception):
    """results.jsonl could not take a result (a full disk): one line. The lines before it stay whole."""


class Stream:
    """Appends results to results.jsonl: a new file (with its header), or after a resumed file's whole lines."""

    def __init__(self, path: str, identity: dict[str, Any], keep_bytes: int | None = None) -> None:
        self.path = path
        if not keep_bytes:  # a new file; or a resumed one that kept nothing, not even its header
            # never through a link or into a FIFO planted at its name (results.NotOurFile)
            fd = open_own_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            self.handle: IO[bytes] = os.fdopen(fd, "wb")
            self._write(json.dumps({"run": identity}, allow_nan=False, default=str))
        else:
            self.handle = os.fdopen(open_own_file(path, os.O_RDWR), "r+b")
            self.handle.truncate(keep_bytes)
            self.handle.seek(keep_bytes)
        self.synced = time.monotonic()
        self.failed = False

    def _write(self, line: str) -> None:
        self.handle.write(line.encode() + b"\n")
        self.handle.flush()

    def add(self, pair: int, result: Result) -> None:
        """The result appended and flushed; StreamWriteError where the file cannot take it (then nothing more is
        appended: a line the failed write cut short is dropped by --resume, as a kill's is)."""
        if self.failed:
            raise StreamWriteError(f"cannot write {self.path}: it failed before")
        try:
            self._write(f'{{"pair": {pair}, "result": {json_text(result)}}}')
            if time.monotonic() - self.synced >= FSYNC_EVERY:
                os.fsync(self.handle.fileno())
                self.synced = time.monotonic()
        except OSError as error:
            self.failed = True
            raise StreamWriteError(f"cannot write {self.path}: {error.strerror or error}") from None

    def close(self) -> str | None:
        """Synced to the disk and closed; never raises: the reason, one line, where the last results written may
        not be on the disk (None where all are, or where ``add`` has already said why not)."""
        if self.handle.closed:
            return None
        try:
            os.fsync(self.handle.fileno())
            self.handle.close()
        except OSError as error:
            with contextlib.suppress(OSError):
                self.handle.close()  # a buffer the disk would not take is dropped: its line is cut, and dropped
            return None if self.failed else f"cannot write {self.path}: {error.strerror or error}"
        return None
