"""``dmlconf doctor``: is DirectML ready to run here? On Windows, the installed onnxruntime-directml; elsewhere each
link of the Wine chain on one line (conformance/ep/wine/doctor.py), the runner built and cached on the way."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from conformance.cli.shared import EXIT_FAILED, EXIT_OK


def doctor_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if sys.platform == "win32":
        from conformance.ep.directml import detect

        found = detect()
        print(f"native DirectML {found.version or '?'} ({found.source}): feature level {found.feature_level or '?'}")
        return EXIT_OK if found.feature_level is not None else EXIT_FAILED
    from conformance.ep.wine.doctor import links

    broken = False
    for link in links():
        print(link, flush=True)
        broken = broken or not link.ok
    if broken:
        print("the DirectML chain is broken at the link above: docs/directml-on-linux.md says how to set it up")
        return EXIT_FAILED
    print("the DirectML chain works: --ep dml runs the genuine DirectML here")
    return EXIT_OK
