"""Each execution path's implementation, by the ``PathKind`` the EP table gives an EP (conformance/ep_table.py): the
one place that maps the table's paths to code. Adding a path is a ``PathKind``, a module implementing
execution_path.ExecutionPath, and its line here (tests/test_execution_paths.py checks every kind has one)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from conformance.ep.providers import EpSpec, facts
from conformance.ep_table import PathKind
from conformance.run.execution_path import ExecutionPath
from conformance.run.onnxruntime_path import OnnxruntimePath
from conformance.run.operator_api import OperatorApiPath

PATHS: Mapping[PathKind, ExecutionPath] = MappingProxyType(
    {
        PathKind.ONNXRUNTIME: OnnxruntimePath(),
        PathKind.OPERATOR_API: OperatorApiPath(),
    }
)


def path_for(ep: EpSpec) -> ExecutionPath:
    """The execution path that runs ``ep``'s cases, as its row of the EP table says."""
    return PATHS[facts(ep).path]
