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

    broken = None
    for link in links():
        print(link, flush=True)
        broken = broken or (None if link.ok else link.name)
    if broken:
        print(
            f"the DirectML chain is broken at its {broken!r} link: docs/directml-on-linux.md#when-doctor-fails says "
            "what each failure means"
        )
        return EXIT_FAILED
    print("the DirectML chain works: --ep dml runs the genuine DirectML here")
    return EXIT_OK
