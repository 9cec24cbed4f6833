"""Every key a case file may hold and what its value is: the one table that parse.py, parse_tensor.py and each
operator's module (its descriptor's keys) take their key names, ranges and spellings from, and that schema.py renders
as the JSON Schema an editor checks case files with (``dmlconf schema``).

The readers are written by hand (each says what is wrong in its own words); this table states what they read, and
tests/test_schema.py holds them to it: every key removed, misspelt or given a value of the wrong kind is refused by
both the loader and the schema, or by neither.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from conformance.cases.generate_kinds import GENERATOR_KINDS
from conformance.ep_table import mode_options
from conformance.model import ACTIVATION_PARAMS, OUTPUT_NAMES, DataType, Operator


class Kind(enum.Enum):
    """What a key's value is, as the readers in fields.py read it."""

    TEXT = "text"  # Fields.text: a string, or a number read as its text
    ID = "id"  # TEXT that is not blank
    UINT = "UINT"  # Fields.uint: an integer in [0, 2**32 - 1]
    UINT64 = "UINT64"  # Fields.integer: an integer in [0, 2**64 - 1]
    SIZES = "sizes"  # a list of at least one UINT
    UINTS = "UINTs"  # Fields.int_list: a list of UINT
    INTS = "INTs"  # Fields.int_list(signed=True): a list of INT, [-2**31, 2**31 - 1]
    SEED = "seed"  # an integer in [0, SEED_MAX]
    ULP = "ulp"  # an integer in [0, MAX_ULP]
    NUMBER = "number"  # Fields.number: a finite number, or text that spells one (PyYAML reads 1e-5 as text)
    NON_NEGATIVE = "non-negative number"  # a NUMBER >= 0
    BOOLEAN = "boolean"
    VALUES = "values"  # numbers nested like Sizes (or flat); .nan, .inf, -.inf allowed
    FEATURE_LEVEL = "feature level"  # FeatureLevel.parse: "3_1", "3.1" or "DML_FEATURE_LEVEL_3_1"
    CHOICE = "choice"  # one of ``Key.choices`` in any case, optionally after ``Key.prefix``
    TENSOR = "tensor"  # TENSOR_KEYS
    OUTPUT = "output tensor"  # OUTPUT_KEYS
    GENERATOR = "generator"  # GENERATOR_KEYS plus the Kind's parameters (GENERATOR_KINDS)
    ACTIVATION = "activation"  # ACTIVATION_TYPE plus the Type's parameters (activation_keys)
    TOLERANCE = "tolerance"  # TOLERANCE_KEYS
    MODES = "modes"  # MODE_KEYS: execution modes, each read as TEXT and checked as its EP option (ep_table.py)
    EXPECTED = "expected"  # the operator's output names (OUTPUT_NAMES), each VALUES
    MATRIX = "matrix"  # sweep.py: dotted key paths to lists of values, and each/each_* lists of mappings
    CASES = "cases"  # a list of cases


@dataclass(frozen=True)
class Key:
    """One key of a mapping. ``choices`` (CHOICE): the accepted names, matched without regard to case, after an
    optional ``prefix``; ``padded``: spaces around the name are allowed (Fields.choice strips them)."""

    name: str
    kind: Kind
    help: str
    required: bool = False
    choices: tuple[str, ...] = ()
    prefix: str = ""
    padded: bool = False


def names(keys: tuple[Key, ...]) -> tuple[str, ...]:
    """The key names, in the table's order (the order an unknown-field message lists them in)."""
    return tuple(key.name for key in keys)


SEED_MAX = 2**64 - 1
MAX_ULP = 2**31
SEEDLESS_KINDS = frozenset({"arange"})  # generator kinds that draw no random numbers: Seed is optional
OPERATOR_PREFIX = "DML_"
DATA_TYPE_PREFIX = "DML_TENSOR_DATA_TYPE_"
ACTIVATION_PREFIX = "DML_OPERATOR_ACTIVATION_"
EXPECT_VALID, EXPECT_INVALID = "valid", "invalid"
MATRIX = "matrix"
EACH = "each"  # matrix keys "each" and "each_*" list mappings that set several fields together


def enum_values(kind: type[enum.Enum]) -> tuple[str, ...]:
    return tuple(str(member.value) for member in kind)


def _data_type(help: str, required: bool) -> Key:
    return Key("DataType", Kind.CHOICE, help, required, enum_values(DataType), DATA_TYPE_PREFIX, padded=True)


FILE_KEYS = (
    Key(
        "operator",
        Kind.CHOICE,
        "The DirectML operator every case of the file describes.",
        required=True,
        choices=enum_values(Operator),
        prefix=OPERATOR_PREFIX,
        padded=True,
    ),
    Key("feature_level", Kind.FEATURE_LEVEL, "The cases' DML_FEATURE_LEVEL unless a case says (default 2_1)."),
    Key("description", Kind.TEXT, "What the file's cases are for."),
    Key("cases", Kind.CASES, "The cases, each a descriptor in the spec's field names.", required=True),
)

CASE_KEYS = (
    Key("id", Kind.ID, "The case's name, unique in its file; its full id is <path>::<id>[<sweep variant>].", True),
    Key("description", Kind.TEXT, "What the case checks."),
    Key("feature_level", Kind.FEATURE_LEVEL, "The DML_FEATURE_LEVEL this case targets (default: the file's)."),
    Key("expected", Kind.EXPECTED, "Golden outputs the oracle must reproduce, nested like their Sizes."),
    Key("tolerance", Kind.TOLERANCE, "Overrides the data type's default comparison tolerance."),
    Key(
        "modes",
        Kind.MODES,
        "The execution modes the case runs in on an EP that has them, unless the EP's options say "
        "(docs/execution-providers.md#execution-modes): what it needs exercised, e.g. binding_offset: 16.",
    ),
    Key(
        "expect",
        Kind.CHOICE,
        "valid (default), or invalid: a negative case the validator must reject.",
        choices=(EXPECT_VALID, EXPECT_INVALID),
    ),
    Key("reason", Kind.TEXT, "Why an expect: invalid case is invalid (the spec rule it breaks)."),
    Key(
        MATRIX,
        Kind.MATRIX,
        "A sweep: dotted field paths (InputTensor.DataType) to lists of values, expanded to their product; "
        "each/each_* list mappings that set several fields together.",
    ),
)

# Every operator's descriptor begins with its InputTensor; each operator's module lists its own keys (``CaseOperator``).
INPUT_TENSOR_KEY = Key("InputTensor", Kind.TENSOR, "The input tensor.", required=True)

UINT64_MAX = 2**64 - 1
# DML_BUFFER_TENSOR_DESC's layout, of any input or output tensor (reference/layout.py; validate_layout.py).
_LAYOUT = (
    Key(
        "Strides",
        Kind.UINTS,
        "Elements to step over to the next element of each dimension, as DML_BUFFER_TENSOR_DESC.Strides "
        "(default: packed); 0 broadcasts an input.",
    ),
    Key(
        "TotalTensorSizeInBytes",
        Kind.UINT64,
        "The buffer's size in bytes: at least DMLCalcBufferTensorSize's, a multiple of 4 (default: that minimum).",
    ),
)
LAYOUT_KEYS = tuple(key.name for key in _LAYOUT)

TENSOR_KEYS = (
    Key("Sizes", Kind.SIZES, "The tensor's sizes, outermost first (its DimensionCount is their number).", True),
    _data_type("The DML_TENSOR_DATA_TYPE.", required=True),
    Key("Data", Kind.VALUES, "The values, nested like Sizes or flat (.nan, .inf, -.inf allowed); or a Generator."),
    Key("Generator", Kind.GENERATOR, "Seeded values (conformance/cases/generate.py); or Data."),
    *_LAYOUT,
)
DATA_OR_GENERATOR = ("Data", "Generator")  # a tensor has exactly one of them

OUTPUT_KEYS = (
    Key("Sizes", Kind.SIZES, "The output's sizes (checked against what the operator derives)."),
    _data_type("The output's DML_TENSOR_DATA_TYPE.", required=False),
    *_LAYOUT,
)

GENERATOR_KEYS = (
    Key(
        "Kind",
        Kind.CHOICE,
        "How the values are made: " + ", ".join(GENERATOR_KINDS) + ".",
        required=True,
        choices=tuple(GENERATOR_KINDS),
    ),
    Key("Seed", Kind.SEED, "The seed; each tensor of a case draws its own stream from it. Not needed by arange."),
)
GENERATOR_PARAMETER_HELP: Mapping[str, str] = MappingProxyType(
    {
        "Low": "The lowest value (inclusive).",
        "High": "The highest value (inclusive).",
        "Mean": "The normal distribution's mean (default 0).",
        "Std": "The normal distribution's standard deviation (default 1).",
        "Distinct": "How many distinct values ties takes (default 4).",
        "Step": "The step between values (default 1).",
        "Fraction": "The fraction of elements that take special values (default 0.5).",
        "Start": "The first value (default 0).",
    }
)

ACTIVATION_TYPE = Key(
    "Type",
    Kind.CHOICE,
    "The DML_OPERATOR_ACTIVATION_* fused after the normalization.",
    required=True,
    choices=tuple(ACTIVATION_PARAMS),
    prefix=ACTIVATION_PREFIX,
)
# YAML spelling of each activation parameter -> the oracle's key (model.ACTIVATION_PARAMS).
ACTIVATION_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "Alpha": "alpha",
        "Beta": "beta",
        "Gamma": "gamma",
        "Steepness": "steepness",
        "Bias": "bias",
        "Threshold": "threshold",
        "SigmoidInputScale": "sigmoid_input_scale",
    }
)

# A case's modes: each execution mode's option (ep_table.mode_options), its value checked as the EP checks it.
MODE_KEYS = tuple(Key(option, Kind.TEXT, f"The {option} execution mode.") for option in mode_options())

TOLERANCE_KEYS = (
    Key("max_ulp", Kind.ULP, "The largest error allowed, in units in the last place."),
    Key("atol", Kind.NON_NEGATIVE, "An absolute error allowed besides max_ulp."),
)


def activation_keys(activation: str) -> tuple[str, ...]:
    """The YAML parameter keys of one activation type (without its Type)."""
    return tuple(key for key, param in ACTIVATION_KEYS.items() if param in ACTIVATION_PARAMS[activation])


def expected_keys(operator: Operator) -> tuple[Key, ...]:
    """The keys of a case's ``expected:``: one per output the operator writes (model.OUTPUT_NAMES, not restated)."""
    return tuple(
        Key(name, Kind.VALUES, f"The expected {name}, nested like its Sizes.") for name in OUTPUT_NAMES[operator]
    )
