"""Collect a suite: case files under the given paths, read, validated, filtered by -k and --shard; and what the
selection holds (--max-run-elements). The quick selection is coverage's (coverage/mapping.py). Case ids name their
file from its repository's root, else from the directory given (ids.py)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from conformance.cases.detect import CASE_FILE_SUFFIXES, is_case_file
from conformance.cases.ids import file_id
from conformance.cases.limits import DEFAULT_LIMITS, DEFAULT_MAX_ELEMENTS, FileLimits
from conformance.cases.load import load_document
from conformance.cases.memory import case_elements, cost_problem
from conformance.cases.parse import Entry, Rejected, display_path, parse_file
from conformance.cases.validate import validate
from conformance.model import Case, SourcePos
from conformance.problems import CaseFileError, Problem, one_line


class NoCaseFiles(ValueError):
    """A directory named on the command line that holds no case file: one line, a usage error."""


@dataclass(frozen=True)
class CaseFile:
    """A case file found under the paths given; ``given``: the directory given that it was found under (a file given
    itself: its folder), which its cases' ids name it from outside a repository (ids.py); ``refused``: why it is not
    read (a symbolic link out of the directory walked)."""

    path: str
    given: str
    refused: Problem | None = None


@dataclass(frozen=True)
class ShardOf:
    """Which shard of which selection a sharded suite is: shard ``index`` of ``count``, and the ids of every case
    the selection held before it was split (``of``, in order), so that a merge can tell a complete set of shards."""

    index: int
    count: int
    of: tuple[str, ...]


@dataclass(frozen=True)
class Suite:
    """The cases to run and the problems that make the input unusable (a run refuses to start on any, unless
    --keep-going). ``invalid_files``: the files with a problem, each time one is read, as entries name their file
    (``display_path``). ``skipped``: the YAML files a directory walk met that are not case files (detect.py)."""

    entries: tuple[Entry, ...]
    problems: tuple[Problem, ...]
    files: int
    invalid_files: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    shard: ShardOf | None = None  # set by ``shard``: which part of which selection this is


def outside(real_root: str, path: str) -> str | None:
    """The real path of ``path`` (a symbolic link) where it leads out of ``real_root``; None where it stays in."""
    target = os.path.realpath(path)
    try:
        inside = os.path.commonpath([real_root, target]) == real_root
    except ValueError:  # Windows: another drive
        inside = False
    return None if inside else target


def _walk(root: str) -> list[CaseFile]:
    """*.yaml and *.yml under ``root``, sorted. A symbolic link to a directory is never followed (os.walk's
    default): one that stays inside ``root`` leads to files the walk reaches anyway, and no loop can be entered. A
    symbolic link, to a file or a directory, whose real path lies outside ``root`` is refused, not read: a case
    folder from elsewhere (a pull request, an archive) must not make the harness read the rest of the machine."""
    real_root = os.path.realpath(root)
    found: list[CaseFile] = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        linked_dirs = [name for name in dirs if os.path.islink(os.path.join(folder, name))]
        for name in [*linked_dirs, *(n for n in names if n.endswith(CASE_FILE_SUFFIXES))]:
            path = os.path.join(folder, name)
            target = outside(real_root, path) if os.path.islink(path) else None
            if target is not None:
                message = f"a symbolic link to outside {root} ({target}): refused"
                found.append(CaseFile(path, root, Problem(SourcePos(path, 1, 1), "", message)))
            elif name in names:
                found.append(CaseFile(path, root))
    return sorted(found, key=lambda f: f.path)


@dataclass(frozen=True)
class Found:
    """The case files under the paths given, each once, and the YAML files the walks skipped as not case files."""

    files: tuple[CaseFile, ...]
    skipped: tuple[str, ...]


def _same_file_key(path: str) -> str:
    """``path`` absolute and normalized: "cases/x.yaml", "./cases/x.yaml" and "cases/../cases/x.yaml" are one file."""
    return os.path.normcase(os.path.normpath(os.path.abspath(path)))


def find_case_files(paths: Sequence[str]) -> Found:
    """Case files named by ``paths``: a file as given (the user's choice, read even through a link, whatever it
    holds), a directory walked (``_walk``), keeping the YAML files that are case files (``is_case_file``). A path
    reached twice (overlapping paths, another spelling of it) is read once, where it is first reached; a symbolic
    link stays a file of its own, as its cases' ids name it. NoCaseFiles for a directory that holds none."""
    found: dict[str, CaseFile] = {}
    skipped: dict[str, str] = {}
    for path in paths:
        if not os.path.isdir(path):
            found.setdefault(_same_file_key(path), CaseFile(path, os.path.dirname(path) or os.curdir))
            continue
        walked = _walk(path)
        kept = 0
        for file in walked:
            key = _same_file_key(file.path)
            if file.refused is not None or is_case_file(file.path):
                found.setdefault(key, file)
                kept += 1
            else:
                skipped.setdefault(key, file.path)
        if not kept:
            why = f"found ({len(walked)} YAML file(s) there are not case files)" if walked else "(*.yaml, *.yml) found"
            raise NoCaseFiles(f"{one_line(path)}: no case files {why}")
    return Found(tuple(found.values()), tuple(path for key, path in skipped.items() if key not in found))


def read_file(
    path: str, max_elements: int = DEFAULT_MAX_ELEMENTS, limits: FileLimits = DEFAULT_LIMITS, named: str | None = None
) -> tuple[list[Entry], list[Problem]]:
    """One case file's entries and its problems, deduplicated (a sweep repeats its base case's problems): the file's,
    each case's against the spec and ``max_elements`` (a case under a duplicate id, or with a key it does not know,
    as read: every problem of a case is reported, not only the first), and a valid case's frames and estimated memory
    on each of ``limits.paths`` against its protocol's frames and --max-case-bytes (``cost_problem``).
    ``named``: the file as its cases' ids name it (``file_id``)."""
    try:
        document = load_document(path, max_file_bytes=limits.max_file_bytes, max_nodes=limits.max_nodes)
        parsed = parse_file(document, named)
    except CaseFileError as error:
        return [], list(error.problems)
    problems = list(parsed.problems)
    for entry in parsed.read:  # a duplicate id's cases too: no entries, but their problems are theirs
        if isinstance(entry, Rejected) and entry.expect_invalid is None:
            problems.extend(entry.problems)
            if entry.as_read is not None:  # read as written but for what it names twice or wrongly: the spec too
                problems.extend(validate(entry.as_read, max_elements))
        elif isinstance(entry, Case) and entry.expect_invalid is None:
            found = validate(entry, max_elements)  # the estimate needs sizes the validator accepts
            cost = None if found else cost_problem(entry, limits)
            problems.extend(found if cost is None else [cost])
    return list(parsed.entries), list(dict.fromkeys(problems))


@dataclass(frozen=True)
class FileRead:
    """One case file as ``read_files`` read it: its entries (those -k keeps) and its problems; ``path``: the file as
    entries name it (``display_path``)."""

    path: str
    entries: tuple[Entry, ...]
    problems: tuple[Problem, ...]


Mapper = Callable[[Callable[..., Any], Iterable[Any]], Iterable[Any]]  # map, or an executor's: same order


def read_files(
    files: Sequence[CaseFile],
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    keyword: str | None = None,
    limits: FileLimits = DEFAULT_LIMITS,
    mapper: Mapper = map,
) -> Iterator[FileRead]:
    """Each file read in turn, given as soon as it is: a run starts its first cases while the later files are read
    (cli/run_stream.py), and ``collect`` gathers them all. ``mapper`` reads them (``read_file``): ``map`` here, or a
    process pool's, which reads several files at once and gives them in order."""
    named: dict[str, str] = {}
    planned = []
    for file in files:  # which files are read, and under which names, decided in order before any is read
        prefix = file_id(file.path, file.given)
        planned.append((file, prefix, file.refused or same_ids(named, file.path, prefix)))
    readable = [(file.path, max_elements, limits, prefix) for file, prefix, refused in planned if refused is None]
    reads = iter(mapper(_read, readable))
    for file, _, refused in planned:
        file_entries, file_problems = next(reads) if refused is None else ([], [refused])
        kept = tuple(e for e in file_entries if keyword is None or keyword in e.id)
        yield FileRead(display_path(file.path), kept, tuple(file_problems))


def _read(job: tuple[str, int, FileLimits, str]) -> tuple[list[Entry], list[Problem]]:
    """``read_file`` of one (path, max_elements, limits, named): what a process pool runs."""
    return read_file(*job)


def gathered(reads: Sequence[FileRead], found: Found, keyword: str | None = None) -> Suite:
    """The suite the files read give, in order: their entries (a full id given to -k, which a reproduction command
    gives, selects that case alone, not every id it is a prefix of) and problems."""
    entries = [entry for read in reads for entry in read.entries]
    problems = tuple(problem for read in reads for problem in read.problems)
    invalid = tuple(read.path for read in reads if read.problems)
    exact = tuple(e for e in entries if e.id == keyword)
    return Suite(exact or tuple(entries), problems, len(found.files), invalid, found.skipped)


def collect(
    paths: Sequence[str],
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    keyword: str | None = None,
    limits: FileLimits = DEFAULT_LIMITS,
) -> Suite:
    return collected(find_case_files(paths), max_elements, keyword, limits)


def collected(
    found: Found,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    keyword: str | None = None,
    limits: FileLimits = DEFAULT_LIMITS,
) -> Suite:
    """The suite of the case files ``found``, every file read first."""
    return gathered(list(read_files(found.files, max_elements, keyword, limits)), found, keyword)


def same_ids(named: dict[str, str], path: str, prefix: str) -> Problem | None:
    """A file whose cases' ids would be another file's (``prefix``, the name both have from their roots: two
    folders outside any repository, each given, both holding x.yaml), refused; ``named`` records each prefix's file."""
    first = named.setdefault(prefix, path)
    if first == path:
        return None
    message = (
        f"its case ids ({prefix}::...) would be those of {first}: outside a repository ids name a file from the "
        "directory given, so give one directory above both"
    )
    return Problem(SourcePos(path, 1, 1), "", message)


def valid_files_only(suite: Suite) -> Suite:
    """--keep-going: the entries of the files without a problem; a file with any problem contributes none (its
    problems stay, for the report)."""
    invalid = set(suite.invalid_files)
    entries = tuple(e for e in suite.entries if e.path not in invalid)
    return replace(suite, entries=entries, files=suite.files - len(suite.invalid_files))


def run_elements(entries: Sequence[Entry], eps: int) -> int:
    """Elements the (case, EP) pairs of a run hold: each case's on each of ``eps`` execution providers."""
    return eps * sum(case_elements(entry) for entry in entries)


@dataclass(frozen=True)
class ShardVariables:
    """Where ``--shard auto`` finds a machine's shard: a CI's variable for its index (counted from ``first``) and the
    one for the count (None: ``--shard auto/N`` or DMLCONF_SHARD_COUNT gives it)."""

    ci: str
    index: str
    first: int
    count: str | None


SHARD_COUNT = "DMLCONF_SHARD_COUNT"
# In the order they are looked for: the pair a GitHub Actions matrix (or any CI) sets for dml-conformance, GitLab's
# parallel: jobs, and a Kubernetes Indexed Job's completion index (whose count the job's spec holds, not a variable).
SHARD_VARIABLES = (
    ShardVariables("a GitHub Actions matrix (docs/ci.md)", "DMLCONF_SHARD_INDEX", 1, SHARD_COUNT),
    ShardVariables("GitLab CI parallel:", "CI_NODE_INDEX", 1, "CI_NODE_TOTAL"),
    ShardVariables("a Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", 0, None),
)
AUTO = "auto"


def parse_shard(text: str, environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """ "I/N" (1 <= I <= N) -> (I, N); "auto" or "auto/N": this machine's shard from its CI's variables
    (SHARD_VARIABLES, read from ``environ``, else the process's); ValueError with a one-line reason otherwise."""
    if text == AUTO or text.startswith(AUTO + "/"):
        return _auto_shard(text.removeprefix(AUTO).removeprefix("/"), os.environ if environ is None else environ)
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit()) or not 1 <= int(index) <= int(count):
        raise ValueError(f"expected I/N with 1 <= I <= N, or auto, got {text!r}")
    return int(index), int(count)


def _auto_shard(given_count: str, environ: Mapping[str, str]) -> tuple[int, int]:
    """The shard the first CI's variables found name: (index from 1, count)."""
    if given_count and not given_count.isdigit():
        raise ValueError(f"expected auto/N with N a whole number, got auto/{given_count}")
    source = next((s for s in SHARD_VARIABLES if environ.get(s.index, "").strip()), None)
    if source is None:
        looked = ", ".join(f"{s.index} ({s.ci})" for s in SHARD_VARIABLES)
        raise ValueError(f"auto: no CI shard variable is set (looked for {looked})")
    raw_index = environ[source.index].strip()
    raw_count = given_count or (environ.get(source.count, "") if source.count else "") or environ.get(SHARD_COUNT, "")
    raw_count = raw_count.strip()
    if not raw_count:
        raise ValueError(f"auto: {source.index} ({source.ci}) is set without a count: give auto/N or {SHARD_COUNT}")
    if not (raw_index.isdigit() and raw_count.isdigit()):
        raise ValueError(f"auto: {source.index}={raw_index!r} and a count of {raw_count!r} are not whole numbers")
    index, count = int(raw_index) - source.first + 1, int(raw_count)
    if not 1 <= index <= count:
        raise ValueError(f"auto: {source.index}={raw_index} ({source.ci}) is no shard of {count}")
    return index, count


def in_shard(case_id: str, index: int, count: int) -> bool:
    """Whether a case belongs to shard ``index`` of ``count``: by a hash of its full id, so a case stays in its shard
    when others are added or removed, and every machine computes the same split."""
    return int(hashlib.sha1(case_id.encode("utf-8")).hexdigest(), 16) % count == index - 1


def shard(suite: Suite, index: int, count: int, seconds: Mapping[str, float] | None = None) -> Suite:
    """Shard ``index`` of ``count``: the shards of one suite are disjoint and together hold every case. By a hash of
    each id, or with ``seconds`` (each case's time in an earlier run: --shard-by-time) balanced by time."""
    ids = [e.id for e in suite.entries]
    if seconds is None:
        kept = tuple(e for e in suite.entries if in_shard(e.id, index, count))
    else:
        mine = {case for case, place in balanced(ids, count, seconds).items() if place == index}
        kept = tuple(e for e in suite.entries if e.id in mine)
    return replace(suite, entries=kept, shard=ShardOf(index, count, tuple(ids)))


def balanced(ids: Sequence[str], count: int, seconds: Mapping[str, float]) -> dict[str, int]:
    """Each case's shard (1 to ``count``), the longest first onto the shard with the least time so far (the longest
    processing time rule: within 4/3 of the best split). A case the earlier run did not time counts the median of those
    it did. The same ids and times give every machine the same split: ties go by id, then to the lowest shard."""
    known = sorted(seconds[i] for i in ids if i in seconds)
    typical = known[len(known) // 2] if known else 1.0
    loads = [0.0] * count
    placed = {}
    for case in sorted(ids, key=lambda i: (-seconds.get(i, typical), i)):
        emptiest = min(range(count), key=lambda s: (loads[s], s))
        loads[emptiest] += seconds.get(case, typical)
        placed[case] = emptiest + 1
    return placed
