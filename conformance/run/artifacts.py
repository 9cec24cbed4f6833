"""--artifacts DIR: for each failing (case, EP), what a driver engineer needs to reproduce it without the
harness: the one-node ONNX model, its inputs, the expected (oracle) and actual (EP) outputs as .npy, and a README
with the few lines of onnxruntime that run it (for DirectML: the build, adapter and driver that ran it, and off
Windows the lines that run it through the harness's runner under Wine)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from conformance.cases.layouts import input_layouts, output_layouts
from conformance.environment import DirectMLRecord, Environment, EpRecord, ran_on
from conformance.ep.directml import DirectML
from conformance.ep.dml_fields import Inexpressible
from conformance.ep.dxdispatch import dxdispatch_readme, save_dxdispatch
from conformance.ep_table import DML, ExecutesOn, ep_facts
from conformance.model import Case
from conformance.problems import first_line
from conformance.records import RecordError, read_record
from conformance.results import Result, not_our_file, write_text_atomic

_UNSAFE = re.compile(r"[^A-Za-z0-9._=+,-]+")
MAX_NAME = 150  # a folder name well under every file system's limit


def folder_name(case: str, ep: str) -> str:
    """A file-system-safe folder name for one (case, EP): the case id and EP with other characters as "_", then a
    hash of the exact pair, so that two ids that read the same once cleaned ("a b", "a_b") never share a folder."""
    digest = hashlib.sha1(f"{case}@{ep}".encode()).hexdigest()[:8]
    name = _UNSAFE.sub("_", f"{case}@{ep}").strip("_.")[:MAX_NAME]
    return f"{name or 'case'}-{digest}"


def taken(folder: str) -> bool:
    """Whether a link, or anything but a folder, stands where a result's artifacts folder goes: the harness renames
    its own folder there and writes through nothing it did not make (NotOurFile)."""
    return os.path.islink(folder) or (os.path.lexists(folder) and not os.path.isdir(folder))


@contextlib.contextmanager
def _new_folder(directory: str, name: str) -> Iterator[str]:
    """A folder of the harness's own making to write one result's files into, put at ``directory/name`` once they
    are all written (a previous run's folder there is removed first): nothing is written through a link planted at
    that name or in a folder there (NotOurFile for one; the run refused such names before it began)."""
    staging = tempfile.mkdtemp(prefix=f".{name}.", dir=directory)
    try:
        os.chmod(staging, 0o755)  # as a folder made by os.makedirs under the usual umask (mkdtemp's is 0o700)
        yield staging
        final = os.path.join(directory, name)
        if taken(final):
            raise not_our_file(final, "a folder")
        if os.path.lexists(final):
            shutil.rmtree(final)  # never follows a link inside it
        os.rename(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def directml_text(found: DirectML) -> str:
    """The DirectML that executed a case, in words, for a reader of its artifacts without results.json: the reports'
    "ran on" line (environment.ran_on: the adapter with its PCI ids and driver, the chain under Wine, the DLLs'
    builds), and the feature level."""
    try:
        directml = read_record(DirectMLRecord, found.to_json(), "directml")
    except RecordError as error:  # the runner described the chain oddly: the build, and why nothing more
        return f"DirectML {found.version or '?'} ({found.source}); the device record is unreadable: {error}"
    from conformance.ep import device  # imports onnxruntime, which `dmlconf report` (folder_name) must not load

    # What the reports name the device from besides the EP's record: the GPUs the OS lists (the adapter on Windows,
    # a driver the Vulkan record lacks under Wine) and this process's onnxruntime (DirectML's on Windows).
    env = read_record(Environment, {"gpus": device.gpus(), "onnxruntime": device.runtime()["onnxruntime"]}, "")
    level = f"; feature level {found.feature_level}" if found.feature_level else ""
    return ran_on(EpRecord(label=DML.alias, name=DML.name, directml=directml), env) + level


def _on_directml(ep_name: str) -> bool:
    """Whether the EP ``ep_name`` that ran a model is DirectML (whose README says how to run it without Windows)."""
    return ep_facts(ep_name).executes_on is ExecutesOn.DIRECTML


def _readme(
    result: Result,
    feeds: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    ep_name: str,
    executed_by: str | None,
    dxdispatch: str = "",
) -> str:
    """What the folder holds and how to run its model again: with the harness, with onnxruntime alone, and for
    DirectML off Windows through the harness's runner under Wine (onnxruntime-directml is a Windows package)."""
    loads = "\n".join(f"    {name!r}: np.load('input_{_UNSAFE.sub('_', name)}.npy')," for name in feeds)
    ran = f"\nExecuted by: {ep_name}: {executed_by}\n" if executed_by else ""
    text = f"""{result.status.value} ({result.failure_kind}) {result.case} on {result.ep}

{first_line(result.message, None)}
{ran}
With the harness: {result.repro}

Without it (Python, numpy and onnxruntime with {ep_name}):

    import numpy as np, onnxruntime as ort
    session = ort.InferenceSession("model.onnx", providers=["{ep_name}"])
    outputs = session.run(None, {{
{loads}
    }})
    # compare with expected_*.npy (the spec's result) and actual_*.npy (what this EP gave in the run)
"""
    if not _on_directml(ep_name):
        return text
    return (
        text
        + dxdispatch
        + f"""
onnxruntime-directml is a Windows package. On Linux, DirectML runs in the harness's runner under Wine
(docs/directml-on-linux.md): with the harness installed (pip install -e . in its checkout) and the chain set up
(source .ci/dml-chain.sh there, or DMLCONF_VKD3D_PROTON and DISPLAY set), in this folder:

    import numpy as np
    from conformance.ep.directml import build_of
    from conformance.ep.providers import parse_ep
    from conformance.ep.wine.client import Runners
    from conformance.ep.wine.session import open_model
    ep = parse_ep({result.ep!r})
    runner = Runners().get(build_of(ep.options))  # DirectML.dll and onnxruntime.dll of the build that ran it
    session = open_model(runner, open("model.onnx", "rb").read(), ep, strict=True)
    outputs = session.run({list(outputs)!r}, {{
{loads}
    }})
"""
    )


def save_artifacts(
    directory: str,
    result: Result,
    model: bytes,
    feeds: Mapping[str, np.ndarray],
    expected: Mapping[str, np.ndarray],
    actual: Mapping[str, np.ndarray],
    ep_name: str,
    executed_by: str | None = None,
    case: Case | None = None,
    inputs: Mapping[str, np.ndarray] | None = None,
) -> str:
    """Write one failing result's files under ``directory``; the folder written. ``executed_by``: the DirectML
    build and device that ran it (``directml_text``), where the EP is DirectML. ``case`` and its ``inputs`` (the
    case's own, not the model's feeds): where the EP is DirectML, the case as a DxDispatch model too
    (dxdispatch.json), so that DirectML's operator runs it without onnxruntime."""
    folder_id = folder_name(result.case, result.ep)
    with _new_folder(directory, folder_id) as folder:
        with open(os.path.join(folder, "model.onnx"), "wb") as handle:
            handle.write(model)
        for prefix, arrays in (("input", feeds), ("expected", expected), ("actual", actual)):
            for name, array in arrays.items():
                np.save(os.path.join(folder, f"{prefix}_{_UNSAFE.sub('_', name)}.npy"), np.asarray(array))
        dxdispatch = ""
        if _on_directml(ep_name) and case is not None and inputs is not None:
            try:
                save_dxdispatch(Path(folder), case, input_layouts(case) | output_layouts(case), inputs)
                dxdispatch = "\n" + dxdispatch_readme(case)
            except Inexpressible as error:
                dxdispatch = f"\nNo DxDispatch model: {error}.\n"
        readme = _readme(result, feeds, list(expected), ep_name, executed_by, dxdispatch)
        write_text_atomic(os.path.join(folder, "README.txt"), readme)
    return os.path.join(directory, folder_id)


def save_operator_artifacts(
    directory: str,
    result: Result,
    case: Case,
    inputs: Mapping[str, np.ndarray],
    expected: Mapping[str, np.ndarray],
    actual: Mapping[str, np.ndarray],
    buffers: Mapping[str, bytes],
    execution_flags: Sequence[str],
    executed_by: str | None = None,
) -> str:
    """A failing ``--ep dmlop`` result's files: no ONNX model (none ran), the case's inputs, the spec's and
    DirectML's outputs, each output buffer's whole bytes (guard region included: buffer_*.bin), and the case as a
    DxDispatch model, so that Microsoft's own tool runs the same descriptor on Windows."""
    folder_id = folder_name(result.case, result.ep)
    with _new_folder(directory, folder_id) as folder:
        for prefix, arrays in (("input", inputs), ("expected", expected), ("actual", actual)):
            for name, array in arrays.items():
                np.save(os.path.join(folder, f"{prefix}_{_UNSAFE.sub('_', name)}.npy"), np.asarray(array))
        for name, data in buffers.items():
            with open(os.path.join(folder, f"buffer_{_UNSAFE.sub('_', name)}.bin"), "wb") as handle:
                handle.write(data)
        try:
            save_dxdispatch(Path(folder), case, input_layouts(case) | output_layouts(case), inputs, execution_flags)
            dxdispatch = dxdispatch_readme(case)
        except Inexpressible as error:
            dxdispatch = f"No DxDispatch model: {error}.\n"
        ran = f"\nExecuted by: DirectML's operator API: {executed_by}\n" if executed_by else ""
        readme = f"""{result.status.value} ({result.failure_kind}) {result.case} on {result.ep}

{first_line(result.message, None)}
{ran}
With the harness: {result.repro}

{dxdispatch}
buffer_*.bin hold each output buffer as DirectML left it: its binding (TotalTensorSizeInBytes) and the guard
region past it, both filled with the canary pattern before the dispatch.
"""
        write_text_atomic(os.path.join(folder, "README.txt"), readme)
    return os.path.join(directory, folder_id)
