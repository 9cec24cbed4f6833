"""``dmlconf fuzz``: random valid cases on an EP until a mismatch, shrunk to a minimal case file under --out
(reports/fuzz/), which a person reviews before copying it to cases/found/."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from conformance.cli.shared import EXIT_FAILED, EXIT_OK, chosen_eps
from conformance.fuzz.search import PROMOTE, fuzz
from conformance.model import Operator
from conformance.problems import first_line


def fuzz_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    (ep,) = chosen_eps([args.fuzz_ep] if args.fuzz_ep else [])
    operator: Operator = args.operator  # checked: the member a case file's operator: would name
    print(f"fuzzing {operator.value} on {ep.text} for {args.time:g} s, seed {args.seed}")
    outcome = fuzz(operator, ep, args.time, args.seed, args.out, args.special, args.shrink_examples)
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
