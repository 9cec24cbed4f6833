"""``dmlconf fuzz``: random valid cases on an EP until a mismatch, shrunk to a minimal case file under --out
(reports/fuzz/), which a person reviews before copying it to cases/found/; ``FUZZ_OPTIONS``, its options, are its
own."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from conformance.cases.fields import member, unknown_operator
from conformance.cases.keys import OPERATOR_PREFIX
from conformance.cli.shared import EXIT_FAILED, EXIT_OK, chosen_eps
from conformance.ep.providers import parse_ep
from conformance.fuzz.search import PROMOTE, SHRINK_EXAMPLES, fuzz
from conformance.model import Operator
from conformance.problems import first_line
from conformance.run.command_line import Option, seconds, whole_number


def operator(text: str) -> Operator:
    """--operator's check: an operator named as a case file's ``operator:`` names it (cases/fields.py's ``member``:
    any case, the DML_ prefix optional), and one it does not name refused as a case file's is (with the nearest)."""
    found = member(Operator, text, OPERATOR_PREFIX)
    if found is None:
        raise ValueError(unknown_operator(text, OPERATOR_PREFIX))
    return found


FUZZ_OPTIONS = (
    Option(
        ("--ep",),
        "the EP, as for run (default: the best available); given more than once, the last",
        metavar="EP",
        check=parse_ep,
        key="fuzz_ep",
    ),
    Option(
        ("--operator",),
        f"the operator to fuzz: {', '.join(op.value for op in Operator)} (as in a case file: any case, DML_ optional)",
        metavar="OP",
        check=operator,
        required=True,
    ),
    Option(
        ("--time",), "how long to search (default 60)", default=60.0, metavar="SECONDS", check=seconds(above_zero=True)
    ),
    Option(
        ("--seed",), "the same seed draws the same cases (default 0)", default=0, metavar="N", check=whole_number(None)
    ),
    Option(
        ("--out",),
        "where a minimal case goes (default: reports/fuzz); review it, then copy it to cases/found/ to keep it as a "
        "regression test that every run reads",
        default="reports/fuzz",
        metavar="DIR",
    ),
    Option(("--special",), "draw NaN, infinities and denormals too", flag=True),
    Option(
        ("--shrink-examples",),
        f"candidates run while shrinking a mismatch (default {SHRINK_EXAMPLES})",
        default=SHRINK_EXAMPLES,
        metavar="N",
        check=whole_number(1),
    ),
)


PROGRESS_EVERY = 10.0  # seconds between the search's progress lines


def fuzz_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    (ep,) = chosen_eps([args.fuzz_ep] if args.fuzz_ep else [])
    operator: Operator = args.operator  # checked: the member a case file's operator: would name
    print(f"fuzzing {operator.value} on {ep.text} for {args.time:g} s, seed {args.seed}", flush=True)
    said = [0.0]

    def progress(examples: int, elapsed: float) -> None:
        """A line every PROGRESS_EVERY seconds of the search: it runs for --time without a word otherwise."""
        if elapsed - said[0] >= PROGRESS_EVERY:
            said[0] = elapsed
            print(f"  {examples} example(s) in {elapsed:.0f} s of {args.time:g}, no mismatch yet", flush=True)

    outcome = fuzz(operator, ep, args.time, args.seed, args.out, args.special, args.shrink_examples, progress)
    print(f"{outcome.examples} example(s) in {outcome.seconds:.1f} s, {outcome.shrunk} of them shrinking")
    if outcome.result is None or outcome.case_file is None:
        print("no mismatch found")
        return EXIT_OK
    first = first_line(outcome.result.message, None)
    print(f"{outcome.result.status.value} ({outcome.result.failure_kind}): {first}")
    again = "yes" if outcome.reproduced or outcome.rerun is None else f"NO, it gave {outcome.rerun.status.value}"
    print(f"minimal case: {outcome.case_file} (feature level {outcome.feature_level}; reproduces: {again})")
    print(f"reproduce: {outcome.reproduce}")
    print(PROMOTE)
    return EXIT_FAILED
