"""An option of either command line, ``dmlconf``'s or the pytest plugin's: its row, rendered and checked alike.

An ``Option`` is declared once, in the module of what it sets: the run's settings in ``run/options.py`` (shared by
``dmlconf run`` and the plugin), a command's own in its ``cli/`` module, the plugin's own in the plugin. Each command
lists the options it takes (coverage.py's way), an option shared by several commands listed by each (as
``required(...)`` where one of them needs it).

``add_options`` renders a list for argparse and for pytest's ``addoption`` alike; ``checked`` applies the rows'
checks to what either parsed, so that a bad value is the same one-line usage error, ``--max-elements: must be at
least 1, got 0``, from both. A check is a function from the text given to the value used (ValueError with a one-line
reason).

A spelling that changed is kept as a deprecated alias for one release (``--timeout`` for ``--case-timeout``: the
pytest plugin's name, which pytest-timeout's own ``--timeout`` would clash with); using it prints a warning.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol


class OptionError(ValueError):
    """An option's value that its check refused: ``--flag: reason``, one line."""


def whole_number(least: int | None) -> Callable[[str], int]:
    """A whole number's check, with a lower bound where ``least`` is one."""

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"not a whole number: {text!r}") from None
        if least is not None and value < least:
            raise ValueError(f"must be at least {least}, got {value}")
        return value

    return check


def seconds(above_zero: bool) -> Callable[[str], float]:
    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"not a number of seconds: {text!r}") from None
        if value != value or (value <= 0 if above_zero else value < 0):
            raise ValueError(f"must be {'above' if above_zero else 'at least'} 0, got {value:g}")
        return value

    return check


@dataclass(frozen=True)
class Option:
    """One option: ``flags`` as typed (the last names its value), its help and default.

    ``check`` turns the text given into the value used; an option without one keeps the text. ``flag``: takes no
    value (true when given); ``repeat``: may be given again, the values listed. ``required``: must be given (where a
    command lists it through ``required``). ``deprecated``: old spellings, accepted with a warning for one release."""

    flags: tuple[str, ...]
    help: str
    default: Any = None
    metavar: str | None = None
    check: Callable[[str], Any] | None = None
    flag: bool = False
    repeat: bool = False
    choices: tuple[str, ...] | None = None
    required: bool = False
    deprecated: tuple[str, ...] = ()
    key: str = ""  # the value's name where the flag's would not say it (-k: keyword)

    @property
    def dest(self) -> str:
        return self.key or self.flags[-1].lstrip("-").replace("-", "_")

    @property
    def name(self) -> str:
        return self.flags[-1]

    def value(self, given: Any) -> Any:
        """The checked value of what a parser stored: the default as it is (a repeatable option's, none given, is
        an empty list), anything else through ``check``, as text (a conftest may have set a number)."""
        if self.repeat:
            items = [] if given is None else list(given)
            return [self._checked(item) for item in items]
        if given is None or given == self.default or self.check is None:
            return given
        return self._checked(given)

    def _checked(self, given: Any) -> Any:
        if self.check is None or not isinstance(given, str | int | float):
            return given  # already a value (a list given by a conftest, of EpSpec say)
        try:
            return self.check(str(given))
        except ValueError as error:
            raise OptionError(f"{self.name}: {error}") from None


def required(option: Option) -> Option:
    """``option`` as a command that needs it lists it: the same row, to be given."""
    return replace(option, required=True)


class _Adder(Protocol):
    """argparse's ``add_argument`` and pytest's ``OptionGroup.addoption``: one signature, so one renderer."""

    def __call__(self, *flags: str, **settings: Any) -> Any: ...


def _deprecated(option: Option) -> type[argparse.Action]:
    """An argparse action that stores the value and, where one of ``option``'s old spellings was typed, says on
    stderr which spelling replaces it (argparse's own ``deprecated`` keyword is Python 3.13's)."""

    class Deprecated(argparse.Action):
        def __call__(
            self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, typed: str | None = None
        ) -> None:
            if typed in option.deprecated:
                print(f"{parser.prog}: warning: {typed} is deprecated, use {option.name}", file=sys.stderr)
            setattr(namespace, self.dest, values)

    return Deprecated


def _settings(option: Option) -> dict[str, Any]:
    """What ``add_argument``/``addoption`` is told of ``option``: values are kept as text, and checked by
    ``checked``, so that both front-ends report a bad value in the same words."""
    settings: dict[str, Any] = {"dest": option.dest, "help": option.help}
    if option.flag:
        return settings | {"action": "store_true", "default": False}
    settings |= {"default": option.default, "metavar": option.metavar}
    settings |= {"action": "append"} if option.repeat else {}
    settings |= {"choices": option.choices} if option.choices else {}
    settings |= {"required": True} if option.required else {}
    return settings


def add_options(add: _Adder, options: Iterable[Option], old_spellings: bool = True) -> None:
    """``options``, in their order, through ``add``: a parser's ``add_argument`` or a pytest group's ``addoption``.
    ``old_spellings``: deprecated spellings offered too (dmlconf's; pytest's names did not change)."""
    for option in options:
        settings = _settings(option)
        if not option.deprecated or not old_spellings:
            add(*option.flags, **settings)
            continue
        if option.flag or option.repeat:
            raise ValueError(f"{option.name}: an old spelling is supported for options that take one value")
        settings["help"] += f" ({', '.join(option.deprecated)}: the old spelling, deprecated)"
        add(*option.flags, *option.deprecated, **settings | {"action": _deprecated(option)})


def checked(values: Mapping[str, Any], options: Iterable[Option]) -> dict[str, Any]:
    """``values`` (a parser's, by dest) with each of ``options`` checked: OptionError (one line) for the first
    refused."""
    result = dict(values)
    for option in options:
        if option.dest in result:
            result[option.dest] = option.value(result[option.dest])
    return result
