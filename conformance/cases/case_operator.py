"""The cases stage's entry for one operator (``CaseOperator``): everything this stage knows of it, from its keys to its
oracle. Each operator's module (named after it) builds one, and operators.py's table holds them; the stage's shared
modules (parse, validate, layouts, generate, oracle, parameters, memory) look the case's operator up there and never
branch on it themselves.

An operator's module imports its reference/ function from the submodule (``reference.top_k1``), not the package: an
editable install made before reference/ had an __init__.py imports ``reference`` as a namespace package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from conformance.cases.fields import Fields
from conformance.cases.keys import Key
from conformance.cases.validate_checker import Checker
from conformance.model import DataType, Descriptor, FeatureLevel, Operator, OutputDesc, TensorSpec


@dataclass(frozen=True)
class DerivedOutput:
    """An output tensor's Sizes and DataType as the descriptor gives them (the spec page's rules)."""

    sizes: tuple[int, ...]
    data_type: DataType


# A descriptor field as a report shows it (parameters.py formats it): a tensor, a list of integers, or text.
Described = TensorSpec | tuple[int, ...] | str


@dataclass(frozen=True)
class CaseOperator:
    """One operator's knowledge in the cases stage. Its callables take the operator's own descriptor (each narrows
    ``Descriptor`` to it with an assert) and are only given cases of ``operator``."""

    operator: Operator
    descriptor: type[Descriptor]  # its descriptor's type (model.py)
    keys: tuple[Key, ...]  # its descriptor's keys, in the struct's order (parse.py's case_keys adds the case's own)
    # Its descriptor from a case's fields and the output descriptors the case writes; None once a problem says why.
    read: Callable[[Fields, Mapping[str, OutputDesc]], Descriptor | None]
    # The spec page's rules at the case's feature level, as problems citing the clauses they enforce.
    validate: Callable[[Checker, Descriptor], None]
    inputs: Callable[[Descriptor], dict[str, TensorSpec]]  # its input tensors by DML name, InputTensor first
    # Its output tensors' Sizes and DataType as the descriptor derives them, by DML name (model.OUTPUT_NAMES' order).
    outputs: Callable[[Descriptor], dict[str, DerivedOutput]]
    # reference/'s outputs for the case's input arrays (by DML name), by DML name.
    oracle: Callable[[Descriptor, Mapping[str, np.ndarray]], dict[str, np.ndarray]]
    # Its descriptor's fields after InputTensor, in the struct's order, for reports (parameters.py).
    describe: Callable[[Descriptor], dict[str, Described]]
    bytes_per_element: int  # the harness's own peak memory per InputTensor element (memory.py)
    # The feature level its page's Availability gives ("This operator was introduced in DML_FEATURE_LEVEL_2_1."):
    # a case below it is refused, citing the catalogue's ``<operator>.introduced-<level>`` clause.
    introduced: FeatureLevel
