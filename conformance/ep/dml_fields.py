"""A DML operator desc, described once: its fields in DirectML.h's order, each a field of its DML type (a tensor
desc, a UINT, an enum, an array, a fused activation's operator desc, ...) holding the case's value.

Each operator's module describes its desc so; ``dml_descriptor`` lays the fields out as the struct's bytes the
runner hands to CreateOperator, and ``dxdispatch`` writes them as DxDispatch's JSON: one description, two spellings
that cannot disagree. A value its field's C type cannot hold (a negative Axis in a UINT) is refused where the field
is made (Inexpressible), so that neither spelling can say it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from conformance.ep import dml_abi as abi
from conformance.model import ACTIVATION_PARAMS, Activation, DataType

if TYPE_CHECKING:
    import numpy as np


class Inexpressible(ValueError):
    """A case no DML descriptor can say (one line: which field, which value, its C type)."""


class TensorLayout(Protocol):
    """One tensor's DML_BUFFER_TENSOR_DESC as the run stage gives it (cases/layouts.py's Layout): ``strides`` None
    is packed (the desc's Strides NULL); ``total_bytes`` is the TotalTensorSizeInBytes the case writes (None: the
    minimum), ``buffer_bytes`` the size it comes to either way (the binding's); ``given``: the case writes Strides or
    TotalTensorSizeInBytes; ``buffer`` lays an array out in the buffer through the strides."""

    @property
    def name(self) -> str: ...
    @property
    def sizes(self) -> tuple[int, ...]: ...
    @property
    def data_type(self) -> DataType: ...
    @property
    def strides(self) -> tuple[int, ...] | None: ...
    @property
    def total_bytes(self) -> int | None: ...
    @property
    def buffer_bytes(self) -> int: ...
    @property
    def element_size(self) -> int: ...
    @property
    def given(self) -> bool: ...
    def buffer(self, array: np.ndarray, fill: bytes = b"\0") -> bytes: ...


def _uint(field: str, value: int) -> int:
    if not 0 <= value <= abi.UINT_MAX:
        raise Inexpressible(f"{field} {value} cannot be written in a DML descriptor: it is a UINT")
    return value


def _int(field: str, value: int) -> int:
    if not abi.INT_MIN <= value <= abi.INT_MAX:
        raise Inexpressible(f"{field} {value} cannot be written in a DML descriptor: it is an INT")
    return value


def _check_layout(layout: TensorLayout) -> None:
    if layout.strides is not None and len(layout.strides) != len(layout.sizes):
        raise Inexpressible(
            f"{layout.name}: {len(layout.strides)} Strides for {len(layout.sizes)} Sizes cannot be written in a "
            "DML_BUFFER_TENSOR_DESC: its one DimensionCount counts both"
        )
    for size in layout.sizes:
        _uint(f"{layout.name}.Sizes", size)
    for stride in layout.strides or ():
        _uint(f"{layout.name}.Strides", stride)


@dataclass(frozen=True)
class Tensor:
    """``const DML_TENSOR_DESC*``: a DML_BUFFER_TENSOR_DESC of the tensor's layout (bound under ``name``)."""

    name: str
    layout: TensorLayout

    def __post_init__(self) -> None:
        _check_layout(self.layout)


@dataclass(frozen=True)
class OptionalTensor:
    """``_Maybenull_ const DML_TENSOR_DESC*``: as ``Tensor``; None where the case leaves it out (NULL, unbound)."""

    name: str
    layout: TensorLayout | None

    def __post_init__(self) -> None:
        if self.layout is not None:
            _check_layout(self.layout)


@dataclass(frozen=True)
class Uint:
    """``UINT``."""

    name: str
    value: int

    def __post_init__(self) -> None:
        _uint(self.name, self.value)


@dataclass(frozen=True)
class Int:
    """``INT``."""

    name: str
    value: int

    def __post_init__(self) -> None:
        _int(self.name, self.value)


@dataclass(frozen=True)
class Float:
    """``FLOAT``: the case's value, made a 32-bit float where it is laid out."""

    name: str
    value: float


@dataclass(frozen=True)
class Bool:
    """``BOOL`` (a 32-bit int)."""

    name: str
    value: bool


@dataclass(frozen=True)
class Enum:
    """A field of a DirectML.h enum type (``DML_AXIS_DIRECTION``): the member, by its name without the prefix."""

    name: str
    enum: abi.DmlEnum
    member: str

    def __post_init__(self) -> None:
        if self.member not in self.enum.values:
            raise ValueError(f"{self.name}: {self.enum.name} has no member {self.member}")


@dataclass(frozen=True)
class UintArray:
    """``const UINT*``: an array its count field counts (NULL where empty)."""

    name: str
    values: tuple[int, ...]

    def __post_init__(self) -> None:
        for value in self.values:
            _uint(self.name, value)


@dataclass(frozen=True)
class IntArray:
    """``const INT*``: an array its count field counts (NULL where empty)."""

    name: str
    values: tuple[int, ...]

    def __post_init__(self) -> None:
        for value in self.values:
            _int(self.name, value)


@dataclass(frozen=True)
class FusedActivation:
    """``_Maybenull_ const DML_OPERATOR_DESC*``: a fused activation's DML_ACTIVATION_*_OPERATOR_DESC (its tensors
    NULL), or NULL where the case fuses none. An activation whose desc needs a tensor cannot be fused."""

    name: str
    activation: Activation | None

    def __post_init__(self) -> None:
        if self.activation is not None and self.activation.type not in abi.ACTIVATIONS:
            raise Inexpressible(
                f"FusedActivation {self.activation.type} cannot be fused in a DML descriptor: its desc needs a "
                "tensor (a fused activation's tensors are NULL)"
            )

    @property
    def operator_type(self) -> int:
        """The activation's DML_OPERATOR_TYPE value (the field is not None)."""
        assert self.activation is not None
        return abi.ACTIVATIONS[self.activation.type][0]

    @property
    def parameters(self) -> tuple[tuple[str, float], ...]:
        """The activation desc's FLOAT fields after its tensors, by DirectML.h's names, in its order: the case's
        values, else the defaults the case format gives (model.ACTIVATION_PARAMS)."""
        assert self.activation is not None
        given = {**ACTIVATION_PARAMS[self.activation.type], **self.activation.params}
        return tuple((name, given[key]) for name, key in abi.ACTIVATIONS[self.activation.type][1])


Field = Tensor | OptionalTensor | Uint | Int | Float | Bool | Enum | UintArray | IntArray | FusedActivation


def bindings(
    fields: Sequence[Field], outputs: Sequence[str]
) -> tuple[tuple[TensorLayout | None, ...], tuple[TensorLayout, ...]]:
    """The tensors in the operator's binding order: its inputs in the desc's order (None: an optional one left out),
    then its ``outputs`` (the DML names of its output tensors) in that order."""
    tensors: Mapping[str, TensorLayout | None] = {
        field.name: field.layout for field in fields if isinstance(field, Tensor | OptionalTensor)
    }
    found = []
    for name in outputs:
        layout = tensors[name]
        assert layout is not None, f"output {name} left out"
        found.append(layout)
    return tuple(layout for name, layout in tensors.items() if name not in outputs), tuple(found)
