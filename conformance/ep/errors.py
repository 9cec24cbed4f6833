"""How an execution can fail, in the words the rest of the harness acts on: the EP does not run a lowering itself
(``NotSupported``), onnxruntime failed otherwise (``ExecutionError``), the process that ran it for us died or hung
(``ProcessDied``, ``ProcessHung``), the device is gone (``device_lost``, read from onnxruntime's error or a dead
worker's stderr), or the harness's own machinery cannot run cases at all (``InfrastructureError``)."""

from __future__ import annotations

import re

# Words the EPs and drivers use when the device is gone: DirectML/D3D12 (DXGI_ERROR_DEVICE_REMOVED 0x887A0005,
# _HUNG 0x887A0006, _RESET 0x887A0007, the removal reason E_OUTOFMEMORY aside), CUDA (errors that leave the context
# unusable: cudaErrorIllegalAddress 700, cudaErrorLaunchFailure 719, ECC 214, device unavailable 46), WebGPU/Dawn
# (device lost callbacks).
DEVICE_LOST_TEXT = re.compile(
    r"DXGI_ERROR_DEVICE_(REMOVED|HUNG|RESET)|887A000[567]|DEVICE_LOST|device (was |is )?lost|DeviceLost"
    r"|illegal memory access|unspecified launch failure|uncorrectable ECC error"
    r"|CUDA_ERROR_(ILLEGAL_ADDRESS|LAUNCH_FAILED)|cudaErrorIllegalAddress|cudaErrorLaunchFailure|cudaErrorDevicesUnavailable",
    re.IGNORECASE,
)


class NotSupported(Exception):
    """The EP does not run this lowering itself: ``kind`` is "no_kernel", "placed_elsewhere" (a node went to another
    EP) or "ep_not_started" (the EP could not create the session at all)."""

    def __init__(self, message: str, kind: str = "no_kernel") -> None:
        super().__init__(message)
        self.kind = kind


class ExecutionError(Exception):
    """Anything else that went wrong in onnxruntime."""


class ProcessDied(ExecutionError):
    """The process that ran the case for us (the DirectML runner) ended while we waited on it: the case's verdict is
    a CRASH, or DEVICE_LOST where the message (its last words) says so."""


class ProcessHung(ProcessDied):
    """The process that ran the case for us gave no answer within the case's time limit (--case-timeout) and was
    killed: the case's verdict is a TIMEOUT, as a worker's silence is."""


class InfrastructureError(Exception):
    """The harness's own machinery cannot run cases (the DirectML runner fails to start again and again): no case's
    verdict, and the run stops with this one line, as it does when its workers cannot start."""


def device_lost(text: str) -> bool:
    return DEVICE_LOST_TEXT.search(text) is not None
