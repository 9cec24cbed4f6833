"""--artifacts DIR: for each failing (case, EP), what a driver engineer needs to reproduce it without the
harness: the one-node ONNX model, its inputs, the expected (oracle) and actual (EP) outputs as .npy, and a README
with the few lines of onnxruntime that run it."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping

import numpy as np

from conformance.problems import first_line
from conformance.results import Result, write_text_atomic

_UNSAFE = re.compile(r"[^A-Za-z0-9._=+,-]+")
MAX_NAME = 150  # a folder name well under every file system's limit


def folder_name(case: str, ep: str) -> str:
    """A file-system-safe folder name for one (case, EP): the case id and EP with other characters as "_", then a
    hash of the exact pair, so that two ids that read the same once cleaned ("a b", "a_b") never share a folder."""
    digest = hashlib.sha1(f"{case}@{ep}".encode()).hexdigest()[:8]
    name = _UNSAFE.sub("_", f"{case}@{ep}").strip("_.")[:MAX_NAME]
    return f"{name or 'case'}-{digest}"


def _readme(result: Result, feeds: Mapping[str, np.ndarray], ep_name: str) -> str:
    loads = "\n".join(f"    {name!r}: np.load('input_{name}.npy')," for name in feeds)
    return f"""{result.status.value} ({result.failure_kind}) {result.case} on {result.ep}

{first_line(result.message, None)}

With the harness: {result.repro}

Without it (Python, numpy and onnxruntime with {ep_name}):

    import numpy as np, onnxruntime as ort
    session = ort.InferenceSession("model.onnx", providers=["{ep_name}"])
    outputs = session.run(None, {{
{loads}
    }})
    # compare with expected_*.npy (the spec's result) and actual_*.npy (what this EP gave in the run)
"""


def save_artifacts(
    directory: str,
    result: Result,
    model: bytes,
    feeds: Mapping[str, np.ndarray],
    expected: Mapping[str, np.ndarray],
    actual: Mapping[str, np.ndarray],
    ep_name: str,
) -> str:
    """Write one failing result's files under ``directory``; the folder written."""
    folder = os.path.join(directory, folder_name(result.case, result.ep))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.onnx"), "wb") as handle:
        handle.write(model)
    for prefix, arrays in (("input", feeds), ("expected", expected), ("actual", actual)):
        for name, array in arrays.items():
            np.save(os.path.join(folder, f"{prefix}_{_UNSAFE.sub('_', name)}.npy"), np.asarray(array))
    write_text_atomic(os.path.join(folder, "README.txt"), _readme(result, feeds, ep_name))
    return folder
