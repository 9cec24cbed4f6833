"""dmlconf: ``validate`` case files, ``run`` them on execution providers (``list`` what a run selects),
``report`` and ``diff`` runs, map their ``coverage``, ``fuzz`` an EP, print the case files' ``schema``, suggest and
lint ``waivers``.

Exit codes: 0 nothing failed; 1 a FAIL or ERROR (run, report; with --waivers only unexpected ones), a regression
(diff), a clause left uncovered (coverage), a mismatch found (fuzz) or a finding (waivers lint); 2 invalid input or
usage (one line per problem).

Each command's module is imported only when that command runs: ``report``, ``diff``, ``merge``, ``validate``,
``list``, ``coverage``, ``waivers`` and ``schema`` never load onnxruntime or onnx. Each command lists the options it
takes in its module (``Command.options``), which the command line renders for that command alone: the parser is
built for the command named, so that no other command's module is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from conformance.cli.collector import exit_code
from conformance.cli.output import to_devnull
from conformance.cli.shared import EXIT_FAILED, EXIT_USAGE, UsageError
from conformance.model import Operator
from conformance.problems import CaseFileError
from conformance.run.command_line import Option, OptionError, add_options, checked


@dataclass(frozen=True)
class Positional:
    name: str
    nargs: str | None
    metavar: str
    help: str | None = None
    choices: tuple[str, ...] | None = None  # a subcommand's name (``waivers suggest``)


@dataclass(frozen=True)
class Command:
    """A dmlconf command: its help, its positional arguments, and where it is implemented (module, function), and
    the options it takes (``options``: their tuple's name in that module; None: it takes none), imported when it
    runs."""

    help: str
    positionals: tuple[Positional, ...]
    module: str
    function: str
    options: str | None = None


CASES = "case files or directories (default: cases/)"
COMMAND_TABLE: Mapping[str, Command] = MappingProxyType(
    {
        "validate": Command(
            "check case files against the spec, and their expected: outputs against the oracle; exit 0 valid, 2 "
            "invalid",
            (Positional("paths", "+", "PATH"),),
            "conformance.cli.commands",
            "validate_command",
            "VALIDATE_OPTIONS",
        ),
        "run": Command(
            "run cases on execution providers and write reports",
            (Positional("paths", "*", "PATH", CASES),),
            "conformance.cli.run",
            "run_command",
            "RUN_OPTIONS",
        ),
        "list": Command(
            "print the ids of the cases run would select, without running them (--json: with file, operator, data "
            "type, feature level); exit 0, or 2 for invalid case files",
            (Positional("paths", "*", "PATH", CASES),),
            "conformance.cli.selection",
            "list_command",
            "LIST_OPTIONS",
        ),
        "coverage": Command(
            "map the spec's clauses to the cases that exercise them (Markdown)",
            (Positional("paths", "*", "PATH", CASES),),
            "conformance.cli.commands",
            "coverage_command",
            "COVERAGE_OPTIONS",
        ),
        "report": Command(
            "render reports from a results.json without running anything",
            (Positional("results", None, "RESULTS.json"),),
            "conformance.cli.reports",
            "report_command",
            "REPORT_OPTIONS",
        ),
        "diff": Command(
            "compare two runs: regressions, fixes, new and removed cases, drift",
            (Positional("old", None, "OLD.json"), Positional("new", None, "NEW.json")),
            "conformance.cli.reports",
            "diff_command",
            "DIFF_OPTIONS",
        ),
        "merge": Command(
            "combine results.json files of shards or machines into one run",
            (Positional("results", "+", "RESULTS.json"),),
            "conformance.cli.reports",
            "merge_command",
            "MERGE_OPTIONS",
        ),
        "triage": Command(
            "re-run a finished run's failing DirectML results on a ladder of references, where they ran, and write "
            "whose failure each is into its results.json (docs/triage.md)",
            (Positional("results", None, "RESULTS.json"),),
            "conformance.cli.triage",
            "triage_command",
            "TRIAGE_OPTIONS",
        ),
        "waivers": Command(
            "waiver file tools: 'suggest RESULTS.json' prints entries for a run's unexpected failures; 'lint FILE "
            "[PATH...]' finds duplicate, overlapping and dead entries against the case library (default cases/)",
            (
                Positional("tool", None, "{suggest,lint}", "suggest or lint", ("suggest", "lint")),
                Positional("paths", "+", "FILE", "suggest: RESULTS.json; lint: the waiver file, then case paths"),
            ),
            "conformance.cli.waivers",
            "waivers_command",
            "WAIVERS_OPTIONS",
        ),
        "fuzz": Command(
            "random valid cases on an EP; a mismatch is shrunk to a case file under reports/fuzz/ (review it, then "
            "copy it to cases/found/)",
            (),
            "conformance.cli.fuzz",
            "fuzz_command",
            "FUZZ_OPTIONS",
        ),
        "doctor": Command(
            "check every link of the DirectML chain (Wine, vkd3d-proton, the device, DirectML); exit 0 when it works",
            (),
            "conformance.cli.doctor",
            "doctor_command",
        ),
        "schema": Command(
            "print the case files' JSON Schema (cases/case.schema.json), for editors",
            (),
            "conformance.cli.schema",
            "schema_command",
        ),
    }
)


DESCRIPTION = (
    f"DirectML operator conformance ({', '.join(Operator)}) against an exact reference: validate case files, run "
    "them on execution providers, report, diff and merge runs, map their spec coverage, fuzz an EP."
)
EPILOG = (
    "exit codes: 0 nothing failed; 1 a failure, a regression, a clause left uncovered or a mismatch found; 2 invalid "
    "input or usage, one line per problem. 'dmlconf COMMAND -h' lists a command's options; docs/cli.md says more."
)


class _Version(argparse.Action):
    """--version: the harness's version and where it is imported from (with its checkout's commit), worked out only
    when asked: an editable install may run another checkout's code than the one at hand."""

    def __init__(self, option_strings: Sequence[str], dest: str, **settings: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the harness's version and where it runs from")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_text())
        parser.exit()


def version_text() -> str:
    """ "dmlconf 0.1.0 (/path/to/checkout, git 0123456789ab)": the installed distribution's version, the folder the
    package is imported from and, in a git checkout, its commit."""
    from importlib import metadata

    from conformance.run.identity import CHECKOUT, git_commit

    try:
        version = metadata.version("dml-conformance")
    except metadata.PackageNotFoundError:
        version = "(not installed)"
    commit = git_commit()
    return f"dmlconf {version} ({CHECKOUT}{f', git {commit[:12]}' if commit else ''})"


def options_of(name: str) -> tuple[Option, ...]:
    """The options command ``name`` takes, in its help's order (its module imported)."""
    command = COMMAND_TABLE[name]
    if command.options is None:
        return ()
    options: tuple[Option, ...] = getattr(importlib.import_module(command.module), command.options)
    return options


def _parser(named: str | None) -> argparse.ArgumentParser:
    """The command line, for the command ``named`` (its positionals, options and -h); None: the commands alone,
    enough to tell which one is named. No option prefix matching anywhere (allow_abbrev=False): ``--qui`` must be
    an error, not ``--quick``, since a typo in a CI script must not change what runs."""
    parser = argparse.ArgumentParser(prog="dmlconf", description=DESCRIPTION, epilog=EPILOG, allow_abbrev=False)
    parser.add_argument("--version", action=_Version)
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log debug detail to stderr; run's console lists every known failure and result without a verdict",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMAND_TABLE.items():
        sub = commands.add_parser(
            name, help=command.help, description=command.help, allow_abbrev=False, add_help=name == named
        )
        if name != named:
            continue
        for positional in command.positionals:
            sub.add_argument(
                positional.name,
                nargs=positional.nargs,
                metavar=positional.metavar,
                help=positional.help,
                choices=positional.choices,
            )
        add_options(sub.add_argument, options_of(name))
    return parser


def _named(argv: Sequence[str]) -> str:
    """The command ``argv`` names (the top level's own -h, --version and usage errors end the process here, as
    they would after)."""
    command: str = _parser(None).parse_known_args(argv)[0].command
    return command


def _implementation(name: str) -> Callable[[argparse.Namespace, Sequence[str]], int]:
    command = COMMAND_TABLE[name]
    function: Callable[[argparse.Namespace, Sequence[str]], int] = getattr(
        importlib.import_module(command.module), command.function
    )
    return function


def _tolerant_output() -> None:
    """A console that cannot encode a case id (cp1252, a pipe) shows an escape instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors="backslashreplace")


def entry() -> int:
    """The ``dmlconf`` script and ``python -m conformance``: ``main``, in a process that ends with it."""
    return exit_code(main())


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _tolerant_output()
    named = _named(argv)
    parsed = _parser(named).parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if parsed.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        args = argparse.Namespace(**checked(vars(parsed), options_of(named)))
        return _implementation(args.command)(args, ["dmlconf", *argv])
    except (UsageError, OptionError) as error:
        print(f"dmlconf: {error}", file=sys.stderr)
        return EXIT_USAGE
    except CaseFileError as error:  # a waiver file's problems, one line each
        print("\n".join(str(p) for p in error.problems), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # before a run had anything to write (a run's own interruption is handled in it)
        print("dmlconf: interrupted", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # a reader of a command's output went away (| head): no traceback (cli/output.py)
        to_devnull(sys.stdout)
        to_devnull(sys.stderr)
        return EXIT_FAILED
