"""``dmlconf waivers``: tools for waiver files (docs/waivers.md). ``suggest RESULTS.json [--waivers FILE]`` prints
entries for a run's failures that the waiver file (given, else the one the run recorded) does not cover, or for
every failure without one (gate/suggest.py); ``lint FILE [PATH...]`` prints what is wrong with a waiver file that
loads, judged against the case library under PATH (default cases/): exit 1 with findings, 0 without (gate/lint.py).
Both read files only: nothing here loads onnxruntime or onnx."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from conformance.cases.limits import DEFAULT_MAX_ELEMENTS
from conformance.cli.output import say, warn
from conformance.cli.reports import chosen_gating, gated, read_run
from conformance.cli.shared import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError, collect_paths, print_problems
from conformance.gate.lint import lint
from conformance.gate.suggest import suggested
from conformance.gate.waiver_file import load_waiver_file
from conformance.run.options import WAIVERS

WAIVERS_OPTIONS = (WAIVERS,)
LIBRARY = "cases"


def waivers_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if args.tool == "suggest":
        return _suggest(args)
    return _lint(args)


def _suggest(args: argparse.Namespace) -> int:
    if len(args.paths) != 1:
        raise UsageError(f"waivers suggest takes one RESULTS.json, got {len(args.paths)} paths")
    path = args.paths[0]
    document = read_run(path)
    env, results = document.environment, document.results
    choice = chosen_gating(args.waivers, [env.waivers] if env.waivers is not None else [], path)
    gate, _ = gated(choice, env, results)
    if choice.line:
        warn(choice.line)
    say(suggested(env, results, gate, path).rstrip("\n"))
    return EXIT_OK


def _lint(args: argparse.Namespace) -> int:
    if args.waivers is not None:
        raise UsageError("--waivers: waivers lint takes the waiver file as its first path")
    path, library = args.paths[0], args.paths[1:] or [LIBRARY]
    if not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    file = load_waiver_file(path)  # its problems: CaseFileError lines, exit 2 (main)
    suite = collect_paths(library, DEFAULT_MAX_ELEMENTS)
    if suite.problems:
        print_problems(suite.problems)
        return EXIT_USAGE
    findings = lint(file, [entry.id for entry in suite.entries], ", ".join(library))
    if findings:
        say("\n".join(str(finding) for finding in findings))
        warn(f"{len(findings)} finding(s) in {path}")
        return EXIT_FAILED
    say(f"ok: {path} against {len(suite.entries)} case(s) of {', '.join(library)}")
    return EXIT_OK
