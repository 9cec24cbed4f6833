"""The options (run/command_line.py): every option declared once, each command and the pytest plugin listing the rows
they take, rendering them and refusing a bad value in the same words, deprecated spellings kept with a warning, and
the one builder to RunOptions (run/options.py)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.cases.limits import DEFAULT_LIMITS, DEFAULT_MAX_ELEMENTS
from conformance.cli.main import COMMAND_TABLE, main, options_of
from conformance.ep.providers import CPU, EpSpec
from conformance.model import FeatureLevel
from conformance.pytest_plugin.plugin import PLUGIN_OPTIONS
from conformance.run.command_line import Option, OptionError, add_options, checked
from conformance.run.options import RunOptions, run_options

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = str(REPO / "cases" / "top_k1" / "spec_examples.yaml")
PYTEST = "pytest"  # the plugin's options, beside the dmlconf commands'
FRONT_ENDS = [*COMMAND_TABLE, PYTEST]


def _options(where: str) -> Sequence[Option]:
    return PLUGIN_OPTIONS if where == PYTEST else options_of(where)


@pytest.mark.parametrize("where", FRONT_ENDS)
def test_no_front_end_sees_a_flag_twice(where: str) -> None:
    flags = Counter(flag for option in _options(where) for flag in (*option.flags, *option.deprecated))
    assert [flag for flag, count in flags.items() if count > 1] == []


def test_an_option_several_take_is_one_row_declared_once() -> None:
    # Each value's name is one row wherever it is taken (a command that needs it lists it as required).
    rows: dict[str, set[Option]] = {}
    for where in FRONT_ENDS:
        for option in _options(where):
            rows.setdefault(option.dest, set()).add(replace(option, required=False))
    assert {dest: found for dest, found in rows.items() if len(found) > 1} == {}


def _parser(where: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=where)
    add_options(parser.add_argument, _options(where), old_spellings=where != PYTEST)
    return parser


@pytest.mark.parametrize("where", FRONT_ENDS)
def test_each_front_end_gets_exactly_its_rows(where: str) -> None:
    parser = _parser(where)
    rendered = [action.dest for action in parser._actions if action.dest != "help"]
    assert rendered == [option.dest for option in _options(where)]


def test_values_are_checked_after_parsing_and_defaults_pass_as_they_are() -> None:
    parsed = vars(_parser("run").parse_args(["--ep", "cpu", "--feature-level", "4_1", "--shard", "2/3", "-j", "0"]))
    values = checked(parsed, _options("run"))
    assert values["ep"] == [EpSpec("cpu", CPU)]
    assert values["feature_level"] == FeatureLevel(4, 1)
    assert values["shard"] == (2, 3)
    assert values["jobs"] == 0
    assert values["max_elements"] == DEFAULT_MAX_ELEMENTS  # a default, untouched


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-elements", "0"], "--max-elements: must be at least 1, got 0"),
        (["--max-elements", "many"], "--max-elements: not a whole number: 'many'"),
        (["--case-timeout", "-1"], "--case-timeout: must be at least 0, got -1"),
        (["--ep", "tpu"], "--ep: unknown execution provider 'tpu'"),
        (["--feature-level", "three"], "--feature-level: not a feature level: 'three'"),
        (["--shard", "4/3"], "--shard: expected I/N with 1 <= I <= N, or auto, got '4/3'"),
        (["--pack", "0"], "--pack: must be at least 1, got 0"),
        (["-j", "-1"], "--jobs: must be at least 0, got -1"),
    ],
)
def test_a_bad_value_is_one_usage_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(OptionError, match="^" + message.replace("(", r"\(").split(" '")[0]):
        checked(vars(_parser("run").parse_args(args)), _options("run"))
    assert main(["run", EXAMPLES, *args]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"dmlconf: {message}"), err


def test_an_empty_feature_level_is_no_target() -> None:
    """``--feature-level "$FL"`` with FL unset: as the option left out (the old CLI's reading)."""
    assert checked(vars(_parser("run").parse_args(["--feature-level", ""])), _options("run"))["feature_level"] is None


def test_fuzz_takes_its_last_ep_and_any_seed() -> None:
    values = checked(
        vars(_parser("fuzz").parse_args(["--operator", "TOP_K1", "--ep", "bogus", "--ep", "cpu", "--seed", "-1"])),
        _options("fuzz"),
    )
    assert (values["fuzz_ep"], values["seed"]) == (EpSpec("cpu", CPU), -1)


def test_a_value_set_in_code_is_checked_too() -> None:
    """A conftest may set ``config.option.max_elements = 0``: checked as the same text would be."""
    with pytest.raises(OptionError, match="--max-elements: must be at least 1, got 0"):
        checked({"max_elements": 0}, PLUGIN_OPTIONS)


def test_a_parser_s_lists_are_its_own() -> None:
    first = checked(vars(_parser("run").parse_args([])), _options("run"))
    first["ep"].append("changed")
    assert checked(vars(_parser("run").parse_args([])), _options("run"))["ep"] == []


def test_only_the_old_spelling_warns(capsys: pytest.CaptureFixture[str]) -> None:
    assert _parser("run").parse_args(["--case-timeout", "5"]).case_timeout == "5"
    assert capsys.readouterr().err == ""
    assert _parser("run").parse_args(["--timeout", "5"]).case_timeout == "5"
    assert capsys.readouterr().err == "run: warning: --timeout is deprecated, use --case-timeout\n"


def test_fuzz_refuses_a_time_of_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", "--operator", "TOP_K1", "--ep", "cpu", "--time", "0"]) == 2
    assert capsys.readouterr().err == "dmlconf: --time: must be above 0, got 0\n"


def test_the_deprecated_spelling_still_works_and_says_so(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "conformance", "run", EXAMPLES, "--ep", "cpu", "--timeout", "30"]
    done = subprocess.run([*command, "--report-dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "dmlconf run: warning: --timeout is deprecated, use --case-timeout" in done.stderr
    current = subprocess.run(
        [*command[:-2], "--case-timeout", "30", "--report-dir", str(tmp_path / "b")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert current.returncode == 0 and "deprecated" not in current.stderr


def test_run_options_is_built_from_either_front_end_s_values() -> None:
    cli = checked(
        vars(_parser("run").parse_args(["--max-elements", "7", "--pack", "3", "--artifacts", "a"])), _options("run")
    )
    built = run_options(cli, {})
    expected = RunOptions(max_elements=7, artifacts="a", pack=3, file_limits=DEFAULT_LIMITS, case_timeout=300.0)
    assert built == expected
    plugin = checked(
        vars(_parser(PYTEST).parse_args(["--max-elements", "7", "--feature-level", "3_0"])), PLUGIN_OPTIONS
    )
    assert run_options(plugin, {}, threads=2) == RunOptions(FeatureLevel(3, 0), 7, threads=2, case_timeout=300.0)
    # 0 is no limit: no wait on the DirectML runner is bounded then, as no worker is timed out
    assert run_options(checked({"case_timeout": "0"}, _options("run")), {}).case_timeout is None


def test_a_command_s_parser_imports_no_other_command_s_module() -> None:
    # Each command's options live in its module: ``dmlconf schema`` must not import another command's to parse.
    probe = (
        "import sys\n"
        "from conformance.cli.main import main\n"
        "code = main(['schema'])\n"
        "names = ('run', 'reports', 'fuzz', 'selection', 'commands')\n"
        "others = [m for m in names if f'conformance.cli.{m}' in sys.modules]\n"
        "print(code, others, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr.strip() == "0 []", done.stderr
