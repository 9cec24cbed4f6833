"""``dmlconf doctor``: is DirectML ready to run here? On Windows, the installed onnxruntime-directml and the native
runner's links; elsewhere each link of the Wine chain on one line (conformance/ep/wine/doctor.py), the runner built
and cached on the way."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from conformance.cli.shared import EXIT_FAILED, EXIT_OK
from conformance.ep_table import DML, DMLOP


def doctor_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    native = None
    if sys.platform == "win32":  # --ep dml in this process; --ep dmlop in the runner, natively: both checked
        from conformance.ep.directml import detect

        native = detect()
        print(f"native DirectML {native.version or '?'} ({native.source}): feature level {native.feature_level or '?'}")
    from conformance.ep.wine.doctor import links

    broken = None
    for link in links():
        print(link, flush=True)
        broken = broken or (None if link.ok else link.name)
    if broken:
        where = (
            "docs/execution-providers.md#dmlop-on-windows" if native else "docs/directml-on-linux.md#when-doctor-fails"
        )
        print(f"the DirectML chain is broken at its {broken!r} link: {where} says what each failure means")
        return EXIT_FAILED
    if native is not None:
        print(f"the native runner works: --ep {DMLOP.alias} runs DirectML's operator API here")
        return EXIT_OK if native.feature_level is not None else EXIT_FAILED
    print(f"the DirectML chain works: --ep {DML.alias} runs the genuine DirectML here")
    return EXIT_OK
