"""The JSON Schema of a case file (``dmlconf schema``, committed as cases/case.schema.json), rendered from keys.py's
table, so that an editor completes and checks case files as the loader reads them.

It is draft-07, which every editor's YAML support reads. A case is checked in one of three modes:

* complete: every required key, every value of its kind (the loader's own reading, parse*.py);
* swept (the case has a ``matrix:``): values of their kind, and each required key given by the case or set by the
  matrix in every variant; the matrix's paths must lead to keys of the case, its values be of their keys' kinds;
* negative (``expect: invalid``): key names only, since its values are meant to be wrong; a misspelt key is not.

What it cannot say is left to ``dmlconf validate``: the spec's rules (validate.py: Axis below the rank, a stride
of 0, Data's shape against Sizes, values in the DataType's range), which ids repeat, whether nested lists are ragged
and how many cases a matrix expands to; and JSON Schema counts 2.0 as an integer and NaN as a number. Where it is
stricter than the loader: ``feature_level`` must be text ("3_1"; the loader also reads the YAML number 3.1), and a
value the matrix replaces must still be of its kind where it is written.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from conformance.cases.fields import INT_MAX, INT_MIN, UINT_MAX
from conformance.cases.generate_kinds import GENERATOR_KINDS
from conformance.cases.keys import (
    ACTIVATION_TYPE,
    CASE_KEYS,
    DATA_OR_GENERATOR,
    EACH,
    EXPECT_INVALID,
    FILE_KEYS,
    GENERATOR_KEYS,
    GENERATOR_PARAMETER_HELP,
    MATRIX,
    MAX_ULP,
    MODE_KEYS,
    OUTPUT_KEYS,
    SEED_MAX,
    SEEDLESS_KINDS,
    TENSOR_KEYS,
    TOLERANCE_KEYS,
    UINT64_MAX,
    Key,
    Kind,
    activation_keys,
    expected_keys,
)
from conformance.cases.operators import OPERATORS
from conformance.cases.parse import case_keys
from conformance.model import ACTIVATION_PARAMS, FEATURE_LEVELS, Operator

DRAFT = "http://json-schema.org/draft-07/schema#"
SCHEMA_FILE = "cases/case.schema.json"  # where the repository commits the schema, from its root
EDITOR_COMMENT = "# yaml-language-server: $schema="  # a case file's first line, then the schema's relative path
Schema = dict[str, Any]

_ONE_LINE = 120  # characters: a value this short, indented, is written on one line
_LARGEST = 1.7976931348623157e308  # the largest finite float64: Fields.number refuses infinities
_DIGITS = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
# Text that Python's float() reads (fields.as_number): spaces around, no underscores; Data may hold NaN and
# infinities, a number field only finite values.
_FINITE_TEXT = rf"^\s*[-+]?{_DIGITS}\s*$"
_NON_NEGATIVE_TEXT = rf"^\s*\+?{_DIGITS}\s*$"


class Mode(enum.Enum):
    COMPLETE = "complete"
    SWEPT = "swept"
    NEGATIVE = "negative"


# Mappings whose key names parse*.py check; each may be left empty when optional (Fields.sub(required=False) reads
# that as the key left out). A generator's are checked too, once its Kind is known (its parameters are the Kind's),
# but a generator left empty is not read as left out: _CHECKED_WHEN_NEGATIVE adds it where only key names count.
_CHECKED = {Kind.TENSOR, Kind.OUTPUT, Kind.ACTIVATION, Kind.TOLERANCE, Kind.MODES, Kind.EXPECTED}
_CHECKED_WHEN_NEGATIVE = _CHECKED | {Kind.GENERATOR}
_TYPED_WHEN_NEGATIVE = {Kind.ID, Kind.MATRIX}  # read before the case itself: by parse_document and sweep.py
_EACH_KEY = rf"^{EACH}(?:_[\s\S]*)?$"


def _ref(name: str) -> Schema:
    return {"$ref": f"#/definitions/{name}"}


def _any_case(word: str) -> str:
    """A regular expression (ECMA 262 and Python alike) that matches ``word`` in any case."""
    if not re.fullmatch(r"\w+", word):
        raise ValueError(f"not a plain name: {word!r}")
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in word)


def _choice_pattern(choices: tuple[str, ...], prefix: str = "", padded: bool = False) -> str:
    space = r"\s*" if padded else ""
    optional = f"(?:{_any_case(prefix)})?" if prefix else ""
    return f"^{space}{optional}(?:{'|'.join(_any_case(c) for c in choices)}){space}$"


def _choice(key: Key) -> Schema:
    """The canonical names (what an editor completes) or any spelling the loader reads (lower case, prefixed)."""
    pattern = _choice_pattern(key.choices, key.prefix, key.padded)
    return {"anyOf": [{"enum": list(key.choices)}, {"type": "string", "pattern": pattern}]}


def _choice_keys() -> Iterator[Key]:
    """Every CHOICE key of the table, once per name (a tensor's and an output's DataType are one choice)."""
    keys = [*FILE_KEYS, *CASE_KEYS, *TENSOR_KEYS, *OUTPUT_KEYS, *GENERATOR_KEYS, ACTIVATION_TYPE]
    keys += [key for operator in Operator for key in OPERATORS[operator].keys]
    seen: dict[str, Key] = {}
    for key in keys:
        if key.kind is Kind.CHOICE and key.name not in seen:
            seen[key.name] = key
            yield key
        elif key.kind is Kind.CHOICE and (seen[key.name].choices, seen[key.name].prefix) != (key.choices, key.prefix):
            raise ValueError(f"two choices named {key.name}")


def _with_help(schema: Schema, help: str) -> Schema:
    if not help:
        return schema
    if "$ref" in schema:  # draft-07 ignores the siblings of $ref
        return {"description": help, "allOf": [schema]}
    return {"description": help, **schema}


def _integer(low: int, high: int) -> Schema:
    return {"type": "integer", "minimum": low, "maximum": high}


_SCALARS: dict[Kind, Schema] = {
    Kind.TEXT: {"type": ["string", "number"]},
    Kind.ID: {"anyOf": [{"type": "string", "pattern": r"\S"}, {"type": "number"}]},
    Kind.UINT: _integer(0, UINT_MAX),
    Kind.UINT64: _integer(0, UINT64_MAX),
    Kind.SIZES: {"type": "array", "minItems": 1, "items": _integer(0, UINT_MAX)},
    Kind.UINTS: {"type": "array", "items": _integer(0, UINT_MAX)},
    Kind.INTS: {"type": "array", "items": _integer(INT_MIN, INT_MAX)},
    Kind.SEED: _integer(0, SEED_MAX),
    Kind.ULP: _integer(0, MAX_ULP),
    Kind.NUMBER: _ref("number"),
    Kind.NON_NEGATIVE: {
        "anyOf": [
            {"type": "number", "minimum": 0, "maximum": _LARGEST},
            {"type": "string", "pattern": _NON_NEGATIVE_TEXT},
        ]
    },
    Kind.BOOLEAN: {"type": "boolean"},
    Kind.VALUES: _ref("values"),
    Kind.FEATURE_LEVEL: _ref("feature_level"),
    Kind.CASES: {"type": "array"},  # each case by the file's operator: case_schema
}


def _mapping(keys: tuple[Key, ...], mode: Mode, operator: Operator | None = None) -> Schema:
    """An object of exactly ``keys``; in complete mode the required ones must be there."""
    schema: Schema = {
        "type": "object",
        "properties": {key.name: _value(key, mode, operator) for key in keys},
        "additionalProperties": False,
    }
    required = [key.name for key in keys if key.required]
    if mode is Mode.COMPLETE and required:
        schema["required"] = required
    return schema


def _value(key: Key, mode: Mode, operator: Operator | None) -> Schema:
    """What the value of ``key`` may be in ``mode``."""
    if mode is Mode.NEGATIVE and key.kind not in _TYPED_WHEN_NEGATIVE:
        if key.kind in _CHECKED_WHEN_NEGATIVE:
            return _with_help({"anyOf": [{"not": {"type": "object"}}, _ref(_name(key.kind, mode, operator))]}, key.help)
        return _with_help({}, key.help)
    if key.kind is Kind.CHOICE:
        return _with_help(_ref(key.name), key.help)
    if key.kind in _SCALARS:
        return _with_help(_SCALARS[key.kind], key.help)
    if key.kind is Kind.MATRIX:
        return _with_help(_ref(_name(key.kind, mode, operator)), key.help)
    mapping = _ref(_name(key.kind, mode, operator))
    if key.kind in _CHECKED and (not key.required or mode is Mode.SWEPT):
        mapping = {"anyOf": [{"type": "null"}, mapping]}
    return _with_help(mapping, key.help)


def _name(kind: Kind, mode: Mode, operator: Operator | None) -> str:
    """The definition's name of a mapping kind in a mode (expected outputs and matrices are the operator's)."""
    if kind is Kind.MATRIX:
        return f"{operator}.matrix.{'negative' if mode is Mode.NEGATIVE else 'typed'}"
    if kind is Kind.EXPECTED:
        return f"{operator}.expected.{mode.value}"
    return f"{kind.name.lower()}.{mode.value}"


def _tensor(mode: Mode) -> Schema:
    schema = _mapping(TENSOR_KEYS, mode)
    if mode is Mode.COMPLETE:
        schema["oneOf"] = [{"required": [name]} for name in DATA_OR_GENERATOR]
    return schema


def _params_of(kinds: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(param for params in kinds.values() for param in params))


_GENERATOR_PARAMS = {kind: tuple(sorted(params)) for kind, params in GENERATOR_KINDS.items()}
_ACTIVATION_PARAMS = {activation: activation_keys(activation) for activation in ACTIVATION_PARAMS}


def _number_key(name: str, help: str) -> Key:
    return Key(name, Kind.NUMBER, help)


def _generator_keys(params: tuple[str, ...]) -> tuple[Key, ...]:
    return (*GENERATOR_KEYS, *(_number_key(p, GENERATOR_PARAMETER_HELP.get(p, "")) for p in params))


def _activation_keys(params: tuple[str, ...]) -> tuple[Key, ...]:
    return (ACTIVATION_TYPE, *(_number_key(p, f"The activation's {p} (its default when left out).") for p in params))


def _by_variant(
    selector: Key,
    variants: dict[str, tuple[str, ...]],
    keys_of: Callable[[tuple[str, ...]], tuple[Key, ...]],
    mode: Mode,
    seeded: bool = False,
) -> Schema:
    """A mapping whose keys depend on the value of ``selector`` (a generator's Kind, an activation's Type): in
    complete and negative mode each variant's own keys; in swept mode (the matrix may change the selector) all.
    ``seeded``: a generator, whose random kinds need a Seed."""
    if mode is Mode.SWEPT:
        return _mapping(keys_of(_params_of(variants)), mode)
    schema = _mapping((selector,), mode)
    schema.pop("additionalProperties")
    cases = []
    for variant, params in variants.items():
        then = _mapping(keys_of(params), mode)
        then["properties"][selector.name] = {}  # checked once, above
        if seeded and mode is Mode.COMPLETE and variant not in SEEDLESS_KINDS:
            then["required"] = [key.name for key in GENERATOR_KEYS]  # Kind and Seed
        match = {"type": "string", "pattern": _choice_pattern((variant,), selector.prefix, selector.padded)}
        cases.append({"if": {"required": [selector.name], "properties": {selector.name: match}}, "then": then})
    schema["allOf"] = cases
    return schema


def _matrix_paths(operator: Operator) -> Iterator[tuple[str, Key]]:
    """Every dotted path a matrix may set for ``operator``, with the key it sets."""
    for key in case_keys(operator):
        if key.kind is Kind.MATRIX:
            continue
        yield key.name, key
        for sub in _children(key.kind, operator):
            yield f"{key.name}.{sub.name}", sub
            for leaf in _children(sub.kind, operator):
                yield f"{key.name}.{sub.name}.{leaf.name}", leaf


def _children(kind: Kind, operator: Operator) -> tuple[Key, ...]:
    children: dict[Kind, tuple[Key, ...]] = {
        Kind.TENSOR: TENSOR_KEYS,
        Kind.OUTPUT: OUTPUT_KEYS,
        Kind.GENERATOR: _generator_keys(_params_of(_GENERATOR_PARAMS)),
        Kind.ACTIVATION: _activation_keys(_params_of(_ACTIVATION_PARAMS)),
        Kind.TOLERANCE: TOLERANCE_KEYS,
        Kind.MODES: MODE_KEYS,
        Kind.EXPECTED: expected_keys(operator),
    }
    return children.get(kind, ())


def _settings(operator: Operator, mode: Mode) -> Schema:
    """One setting of a matrix (an each/each_* entry): paths, each to one value of the key it sets."""
    values = Mode.NEGATIVE if mode is Mode.NEGATIVE else Mode.SWEPT
    setting = {path: _value(key, values, operator) for path, key in _matrix_paths(operator)}
    return {"type": "object", "minProperties": 1, "properties": setting, "additionalProperties": False}


def _matrix(operator: Operator, mode: Mode) -> Schema:
    """sweep.py's matrix: each key a path to a non-empty list of values for it, or each/each_* a non-empty list of
    non-empty mappings of paths to one value each (the settings; a listed value refers to its path's schema there)."""
    settings = _name(Kind.MATRIX, mode, operator) + ".settings"
    listed = {
        path: {"type": "array", "minItems": 1, "items": {"$ref": f"#/definitions/{settings}/properties/{path}"}}
        for path, _ in _matrix_paths(operator)
    }
    return {
        "type": "object",
        "minProperties": 1,
        "properties": listed,
        "patternProperties": {_EACH_KEY: {"type": "array", "minItems": 1, "items": _ref(settings)}},
        "additionalProperties": False,
    }


_REQUIRED_INSIDE = {Kind.TENSOR: TENSOR_KEYS, Kind.GENERATOR: GENERATOR_KEYS, Kind.ACTIVATION: (ACTIVATION_TYPE,)}


def _requirements(keys: tuple[Key, ...], at: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], ...]]:
    """What a complete case must hold, each as alternative key paths: a required key, a required key of a mapping
    (when the mapping is there), one of a tensor's Data and Generator."""
    for key in keys:
        path = (*at, key.name)
        if key.required:
            yield (path,)
        yield from _requirements(_REQUIRED_INSIDE.get(key.kind, ()), path)
    if keys is TENSOR_KEYS:
        yield tuple((*at, name) for name in DATA_OR_GENERATOR)


def _written(path: tuple[str, ...], value: Schema | None = None) -> Schema:
    """The case itself holds ``path`` (a value ``value`` allows), every mapping on the way included."""
    schema: Schema = {"required": [path[-1]]}
    if value is not None:
        schema["properties"] = {path[-1]: value}
    for name in reversed(path[:-1]):
        schema = {"required": [name], "properties": {name: schema}}
    return schema


def _pattern(within: Iterable[str], exactly: Iterable[str] = ()) -> str:
    """A pattern of the matrix paths that are one of ``within`` or lead inside one, or are one of ``exactly``."""
    ends = [re.escape(path) + r"(?:\.|$)" for path in within] + [re.escape(path) + "$" for path in exactly]
    return "^(?:" + "|".join(ends) + ")"


def _swept(pattern: str, every: bool) -> Schema:
    """The matrix sets a path that ``pattern`` matches: as one of its own keys, or in one of its each/each_* keys'
    entries (``every``: in each of them, so in every variant; else in some)."""
    has = {"not": {"propertyNames": {"not": {"pattern": pattern}}}}  # some key matches
    entries = {"items": has} if every else {"contains": has}
    in_each = {"not": {"patternProperties": {_EACH_KEY: {"not": entries}}}}  # some each_* key
    return {"required": [MATRIX], "properties": {MATRIX: {"anyOf": [has, in_each]}}}


def _met(alternatives: tuple[tuple[str, ...], ...]) -> Schema:
    """A swept case meets a requirement: the case holds one of the paths, or the matrix sets one in every variant
    (or a key inside it, or a mapping on its way whole), or the mapping the paths are in is not there and the matrix
    makes none of it (the mapping's own requirement, if any, says so)."""
    dotted = [".".join(path) for path in alternatives]
    wholes = sorted({".".join(path[:end]) for path in alternatives for end in range(1, len(path))})
    options = [*(_written(path) for path in alternatives), _swept(_pattern(dotted, wholes), every=True)]
    parent = alternatives[0][:-1]
    if parent:
        untouched = {"not": _swept(_pattern([".".join(parent)]), every=False)}
        options.append({"allOf": [{"not": _written(parent)}, untouched]})
    return {"anyOf": options}


def _swept_case(operator: Operator, definitions: Schema) -> Schema:
    """A case with a matrix: values of their kind, and each requirement met by the case or by its matrix (each
    requirement a definition of its own, ``requires.<paths>``, added to ``definitions``: the operators share most)."""

    def met(alternatives: tuple[tuple[str, ...], ...]) -> Schema:
        name = "requires." + "-or-".join(".".join(path) for path in alternatives)  # characters a URI takes as they are
        definitions.setdefault(name, _met(alternatives))
        return _ref(name)

    schema = _mapping(case_keys(operator), Mode.SWEPT, operator)
    read_first = {key.name for key in case_keys(operator) if key.kind in _TYPED_WHEN_NEGATIVE}  # the id: not swept
    schema["allOf"] = [met(needed) for needed in _requirements(case_keys(operator)) if needed[0][0] not in read_first]
    kind, seed = (key.name for key in GENERATOR_KEYS)
    seeded = [name for name in GENERATOR_KINDS if name not in SEEDLESS_KINDS]
    random_kind = {"type": "string", "pattern": _choice_pattern(tuple(seeded))}
    for tensor in (key.name for key in case_keys(operator) if key.kind is Kind.TENSOR):
        generator = (tensor, next(key.name for key in TENSOR_KEYS if key.kind is Kind.GENERATOR))
        schema["allOf"].append({"if": _written((*generator, kind), random_kind), "then": met(((*generator, seed),))})
    return schema


def _case(operator: Operator) -> Schema:
    """A case: negative, swept or complete (see the module's docstring)."""
    invalid = {"type": "string", "pattern": _choice_pattern((EXPECT_INVALID,))}
    return {
        "type": "object",
        "required": ["id"],
        "if": {"required": ["expect"], "properties": {"expect": invalid}},
        "then": _ref(f"{operator}.case.negative"),
        "else": {
            "if": {"required": [MATRIX]},
            "then": _ref(f"{operator}.case.swept"),
            "else": _ref(f"{operator}.case.complete"),
        },
    }


def _definitions() -> Schema:
    number = {"type": "string", "pattern": _FINITE_TEXT}
    value_text = rf"^\s*[-+]?(?:{_DIGITS}|{_any_case('inf')}(?:{_any_case('inity')})?|{_any_case('nan')})\s*$"
    levels = "|".join(f"{level.major}[_.]{level.minor}" for level in FEATURE_LEVELS)
    definitions: Schema = {
        "number": {"anyOf": [{"type": "number", "minimum": -_LARGEST, "maximum": _LARGEST}, number]},
        "value": {"anyOf": [{"type": "number"}, {"type": "string", "pattern": value_text}]},
        "values": {"type": "array", "anyOf": [{"items": _ref("value")}, {"items": _ref("values")}]},
        "feature_level": {
            "type": "string",
            # DirectML's closed list (model.FEATURE_LEVELS), in every spelling FeatureLevel.parse reads
            "pattern": rf"^\s*(?:{_any_case('DML_FEATURE_LEVEL_')})?(?:{levels})\s*$",
            "examples": [str(level) for level in FEATURE_LEVELS],
        },
    }
    definitions |= {key.name: _choice(key) for key in _choice_keys()}
    for mode in Mode:
        definitions[f"tensor.{mode.value}"] = _tensor(mode)
        definitions[f"output.{mode.value}"] = _mapping(OUTPUT_KEYS, mode)
        definitions[f"tolerance.{mode.value}"] = _mapping(TOLERANCE_KEYS, mode)
        definitions[f"modes.{mode.value}"] = _mapping(MODE_KEYS, mode)
        definitions[f"activation.{mode.value}"] = _by_variant(
            ACTIVATION_TYPE, _ACTIVATION_PARAMS, _activation_keys, mode
        )
        kind = GENERATOR_KEYS[0]
        definitions[f"generator.{mode.value}"] = _by_variant(kind, _GENERATOR_PARAMS, _generator_keys, mode, True)
    for operator in Operator:
        definitions[f"{operator}.case"] = _case(operator)
        for mode in Mode:
            swept = mode is Mode.SWEPT
            case = _swept_case(operator, definitions) if swept else _mapping(case_keys(operator), mode, operator)
            definitions[f"{operator}.case.{mode.value}"] = case
            definitions[f"{operator}.expected.{mode.value}"] = _mapping(expected_keys(operator), mode)
        for mode in (Mode.SWEPT, Mode.NEGATIVE):
            definitions[_name(Kind.MATRIX, mode, operator)] = _matrix(operator, mode)
            definitions[_name(Kind.MATRIX, mode, operator) + ".settings"] = _settings(operator, mode)
    return definitions


def case_schema() -> Schema:
    """The schema of a case file: its keys, then each case by the file's operator."""
    top = _mapping(FILE_KEYS, Mode.COMPLETE)
    by_operator = []
    for operator in Operator:
        operator_key = FILE_KEYS[0]
        match = {"type": "string", "pattern": _choice_pattern((operator,), operator_key.prefix, operator_key.padded)}
        cases = {"properties": {"cases": {"items": _ref(f"{operator}.case")}}}
        by_operator.append({"if": {"required": ["operator"], "properties": {"operator": match}}, "then": cases})
    return {
        "$schema": DRAFT,
        "title": "dml-conformance case file",
        "description": "Cases of one DirectML operator, in the spec's field names (generated by `dmlconf schema`).",
        **top,
        "allOf": by_operator,
        "definitions": _definitions(),
    }


def render_schema() -> str:
    """The schema as the committed cases/case.schema.json holds it: JSON indented by two, where a value fits on one
    line (``"required": ["id"]``) on one line, so that the file reads like a table of keys."""
    return _render(case_schema(), "") + "\n"


def _render(value: Any, indent: str) -> str:
    inner = indent + "  "
    flat = json.dumps(value, ensure_ascii=False)
    if len(indent) + len(flat) <= _ONE_LINE or not isinstance(value, dict | list) or not value:
        return flat
    if isinstance(value, dict):
        items = (f"{inner}{json.dumps(key)}: {_render(item, inner)}" for key, item in value.items())
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    return "[\n" + ",\n".join(inner + _render(item, inner) for item in value) + f"\n{indent}]"
