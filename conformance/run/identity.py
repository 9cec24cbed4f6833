"""The identity of what a run tested, for results.json's ``environment``: the device (GPU name and driver), the
software (onnxruntime and EP packages, DirectML and its feature level), the platform and the exact command line.
A report without the device is not a conformance report.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from collections.abc import Sequence
from typing import Any

from conformance.ep import device
from conformance.ep.directml import DirectML, package_version
from conformance.ep.providers import DML, EpSpec, is_plugin, plugin_devices
from conformance.problems import Problem
from conformance.run.options import RunOptions

log = logging.getLogger(__name__)

PACKAGES = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-directml", "onnxruntime-ep-webgpu")


def _ep_name_and_devices(ep: EpSpec) -> tuple[str, list[dict[str, Any]]]:
    """The EP's onnxruntime name (a plugin library's is learnt by registering it) and its devices."""
    name = ep.name
    if is_plugin(ep):
        try:
            name = plugin_devices(ep)[0]
        except Exception as error:  # missing package or a library that does not load: the record says so
            log.debug("plugin EP %s not loaded: %s", ep.alias, error)
    return name, device.ep_devices(name)


def ep_record(ep: EpSpec, options: RunOptions, directml: DirectML | None) -> dict[str, Any]:
    """One EP of the run: how it was named, its options, the devices onnxruntime offered it, its target level."""
    name, devices = _ep_name_and_devices(ep)
    target = options.target_level(ep)
    record: dict[str, Any] = {
        "label": ep.text,
        "alias": ep.alias,
        "name": name,
        "options": dict(ep.options),
        "library": ep.library,
        "devices": devices,
        "target_feature_level": str(target) if target else None,
    }
    if ep.name == DML and directml is not None:
        record["directml"] = directml.to_json()
    return record


def environment(
    eps: Sequence[EpSpec],
    options: RunOptions,
    argv: Sequence[str],
    directml: DirectML | None = None,
    problems: Sequence[Problem] = (),
) -> dict[str, Any]:
    """What was tested with what: GPUs, versions, EPs, platform and the exact command line; with --keep-going,
    the case files' problems (their files' cases were not run), so that every report of the run can say so."""
    import numpy

    runtime = device.runtime()
    return {
        "command": list(argv),
        "cwd": os.getcwd(),
        "python_executable": sys.executable,
        "dml_conformance": package_version("dml-conformance"),
        "gpus": device.gpus(),
        # nvidia-smi lists every GPU of the machine; this says which ones the run's CUDA EP could see (a shard per GPU)
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "onnxruntime": runtime["onnxruntime"],
        "onnxruntime_packages": {p: v for p in PACKAGES if (v := package_version(p)) is not None},
        "available_providers": runtime["available_providers"],
        "onnx": runtime["onnx"],
        "numpy": numpy.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "eps": [ep_record(ep, options, directml) for ep in eps],
        "target_feature_level": str(options.feature_level) if options.feature_level else None,
        "pack": options.pack,
        # where --artifacts kept each FAIL's files (artifacts.py names them), so that report.html links to them
        "artifacts": os.path.abspath(options.artifacts) if options.artifacts else None,
        **({"problems": [str(p) for p in problems]} if problems else {}),
    }
