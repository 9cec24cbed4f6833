"""``dmlconf schema``: print the case files' JSON Schema (cases/case.schema.json is this output, committed), which
an editor reads through a case file's first line ``# yaml-language-server: $schema=...``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from conformance.cases.schema import render_schema
from conformance.cli.shared import EXIT_OK


def schema_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    sys.stdout.write(render_schema())
    return EXIT_OK
