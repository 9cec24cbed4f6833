"""Case packing and session reuse: many cases in one session give what each gives alone, and anything but a clean
PASS sends a pack back to one case per session."""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable
from dataclasses import replace
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from conformance.cases.parse import Entry
from conformance.cases.suite import read_file
from conformance.cli.main import main
from conformance.environment import Environment
from conformance.ep.errors import NotSupported
from conformance.ep.execute import Execution, execute, open_session, run_session
from conformance.ep.lower import Lowering
from conformance.ep.pack import Unattributed, pack, prefix, unpack
from conformance.ep.placement import PlacedNode
from conformance.ep.providers import EpSpec, parse_ep
from conformance.ep.sessions import Opened, Sessions
from conformance.gate.summary import summarize
from conformance.model import Status
from conformance.report.console import render_console
from conformance.report.html import render_html
from conformance.report.markdown import render_markdown
from conformance.results import Result
from conformance.run.batch import Unwatched, _run_group, run_batch
from conformance.run.options import RunOptions
from conformance.run.runner import Prepared, prepare, run_entry

CPU = parse_ep("cpu")
REPO = Path(__file__).resolve().parent.parent

# Three operators, two of one structure (same sizes, other data), and one the CPU EP has no kernel for.
CASES = """\
operator: TOP_K1
feature_level: "3_1"
cases:
  - id: a
    InputTensor: {Sizes: [2, 3, 5], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    Axis: 2
    K: 2
  - id: same-structure-as-a
    InputTensor: {Sizes: [2, 3, 5], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 2}}
    Axis: 2
    K: 2
  - id: int8
    InputTensor: {Sizes: [4, 6], DataType: INT8, Generator: {Kind: uniform, Seed: 3}}
    Axis: 0
    K: 3
    AxisDirection: INCREASING
  - id: uint32-no-cpu-kernel
    InputTensor: {Sizes: [1, 1, 2, 4], DataType: UINT32, Data: [[[[1, 5, 3, 2], [9, 8, 7, 6]]]]}
    Axis: 3
    K: 2
"""


@pytest.fixture(scope="module")
def entries(tmp_path_factory: pytest.TempPathFactory) -> list[Entry]:
    path = tmp_path_factory.mktemp("pack") / "cases.yaml"
    path.write_text(CASES, encoding="utf-8")
    read, problems = read_file(str(path))
    assert problems == []
    return read


def _prepared(entries: list[Entry]) -> list[Prepared]:
    prepared = [prepare(entry, CPU, RunOptions()) for entry in entries]
    assert all(isinstance(p, Prepared) for p in prepared)
    return [p for p in prepared if isinstance(p, Prepared)]


def _without_time(results: list[Result]) -> list[Result]:
    return [replace(result, seconds=0.0) for result in results]


def test_a_packed_session_gives_each_case_its_own_outputs(entries: list[Entry]) -> None:
    lowerings = [p.lowering for p in _prepared(entries[:3])]
    packed = pack(lowerings)
    opened = open_session(packed, CPU)
    executions = unpack(lowerings, run_session(opened, packed), opened.records, opened.ep_name)
    for lowering, packed_run in zip(lowerings, executions, strict=True):
        alone = execute(lowering, CPU)
        assert alone.outputs.keys() == packed_run.outputs.keys() == {"OutputValueTensor", "OutputIndexTensor"}
        for name, array in alone.outputs.items():
            np.testing.assert_array_equal(packed_run.outputs[name], array, strict=True)
        assert packed_run.placement == alone.placement  # the same node names, without the pack's prefix
    assert len(set(packed.nodes)) == 3 and all(n.startswith(prefix(i)) for i, n in enumerate(packed.nodes))


def _records(lowerings: list[Lowering], extra: PlacedNode | None = None) -> list[PlacedNode]:
    records = [
        PlacedNode(prefix(i) + node, "TopK", "CPUExecutionProvider")
        for i, lo in enumerate(lowerings)
        for node in lo.nodes
    ]
    return records + ([extra] if extra else [])


def test_unpack_gives_each_record_to_its_case(entries: list[Entry]) -> None:
    lowerings = [p.lowering for p in _prepared(entries[:2])]
    outputs = {prefix(i) + name: np.zeros(1) for i, lo in enumerate(lowerings) for name in lo.outputs}
    clean = unpack(lowerings, outputs, _records(lowerings), "CPUExecutionProvider")
    assert [type(e) for e in clean] == [Execution, Execution]
    stray = PlacedNode("TopK_0", "TopK", "CPUExecutionProvider")  # no prefix, and no case expands into a TopK
    with pytest.raises(Unattributed, match="of no one case") as refused:
        unpack(lowerings, outputs, _records(lowerings, stray), "CPUExecutionProvider")
    assert refused.value.suspects == frozenset()
    cast = PlacedNode("InsertedPrecisionFreeCast_" + prefix(1) + "x", "Cast", "CPUExecutionProvider")
    judged = unpack(lowerings, outputs, _records(lowerings, cast), "CPUExecutionProvider")
    assert isinstance(judged[0], Execution) and isinstance(judged[1], NotSupported)  # Cast is no op of case 1
    unnamed_cast = PlacedNode("", "Cast", "CPUExecutionProvider")  # neither case has float16 data: whose?
    with pytest.raises(Unattributed):
        unpack(lowerings, outputs, _records(lowerings, unnamed_cast), "CPUExecutionProvider")


def test_models_of_different_opsets_are_not_packed(entries: list[Entry]) -> None:
    low = _prepared(entries[:1])[0].lowering
    model = onnx.load_from_string(low.model)
    model.opset_import[0].version += 2
    other = replace(low, model=model.SerializeToString())
    with pytest.raises(ValueError, match="different opsets"):
        pack([low, other])


def test_a_batch_gives_the_results_of_one_session_per_case(entries: list[Entry]) -> None:
    sessions = Sessions()
    batch = run_batch(entries, CPU, RunOptions(), sessions)
    alone = [run_entry(entry, CPU, RunOptions()) for entry in entries]
    assert [r.status for r in alone] == [Status.PASS] * 3 + [Status.NOT_SUPPORTED]
    assert _without_time(batch) == _without_time(alone)
    # The pack of 4 is refused, naming the UINT32 TopK (no CPU kernel): it is refused alone, and the other three
    # run packed in one session.
    assert (sessions.created, sessions.reused) == (1, 0)


def test_a_non_pass_in_a_pack_is_judged_again_alone(entries: list[Entry]) -> None:
    group = _prepared(entries[:3])
    wrong = {name: np.asarray(array) + 1 for name, array in group[2].expected.items()}
    group[2] = replace(group[2], expected=wrong)  # an oracle stand-in the EP cannot agree with
    sessions = Sessions()
    results = _run_group(group, range(len(group)), CPU, RunOptions(), sessions, Unwatched())
    assert [r.status for r in results] == [Status.PASS, Status.PASS, Status.FAIL]
    # 3 packed (the two PASSes stand), then the FAIL alone.
    assert (sessions.created, sessions.reused) == (2, 0)


class Perturbed:
    """A packed session whose outputs for the case at place 1 come back wrong: an EP whose result for a node
    depends on the other nodes of the model."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def run(self, names: list[str], feeds: dict[str, Any]) -> list[Any]:
        values = self.session.run(names, feeds)
        return [
            v + 1 if n.startswith(prefix(1)) and v.dtype.kind == "f" else v for n, v in zip(names, values, strict=True)
        ]


class PerturbingPacks(Sessions):
    def open(self, lowering: Lowering, ep: EpSpec, create: Callable[[Lowering, EpSpec], Opened]) -> Opened:
        opened = super().open(lowering, ep, create)
        return replace(opened, session=Perturbed(opened.session)) if len(lowering.nodes) > 1 else opened


def test_a_verdict_that_differs_packed_is_the_one_alone_and_says_so(entries: list[Entry]) -> None:
    group = _prepared(entries[:3])
    results = _run_group(group, range(len(group)), CPU, RunOptions(), PerturbingPacks(), Unwatched())
    assert [r.status for r in results] == [Status.PASS] * 3  # each case's own verdict, alone for the second
    assert [bool(r.packed) for r in results] == [False, True, False]
    assert results[1].packed.startswith("FAIL when packed with 2 other case(s), PASS alone: values: ")
    assert _without_time([replace(results[1], packed="")]) == _without_time([run_entry(entries[1], CPU, RunOptions())])
    summary = summarize(Environment(), results)
    assert summary.packed_differences == (f"{results[1].case} [cpu]: {results[1].packed}",)
    assert "1 case(s) got another verdict packed with other cases than alone" in render_markdown(summary)
    assert "packing: 1 case(s) got another verdict" in render_console(summary)
    html = render_html(summary, results)
    assert "Verdicts that differed when packed (1)" in html and escape(results[1].packed) in html


class Attempts(Sessions):
    """Sessions that count every attempt to open one, refused ones included."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts: list[int] = []

    def open(self, lowering: Lowering, ep: EpSpec, create: Callable[[Lowering, EpSpec], Opened]) -> Opened:
        self.attempts.append(len(lowering.nodes))
        return super().open(lowering, ep, create)


def test_a_refusal_sends_every_case_of_the_named_signature_alone(entries: list[Entry], tmp_path: Path) -> None:
    more = tmp_path / "more.yaml"
    uint32 = CASES[CASES.index("  - id: uint32-no-cpu-kernel") :]
    more.write_text(CASES.split("cases:")[0] + "cases:\n" + uint32.replace("id: uint32-no-cpu-kernel", "id: other"))
    read, problems = read_file(str(more))
    assert problems == []
    group = _prepared([entries[3], *entries[:3], *read])  # two UINT32 TopKs (no CPU kernel) among three that run
    sessions = Attempts()
    results = _run_group(group, range(len(group)), CPU, RunOptions(), sessions, Unwatched())
    assert [r.status for r in results] == [Status.NOT_SUPPORTED, *[Status.PASS] * 3, Status.NOT_SUPPORTED]
    # The pack of 5 is refused naming one UINT32 TopK: both run alone (refused), and the three others run packed.
    assert sessions.attempts == [5, 1, 1, 3]
    alone = [run_entry(entry, CPU, RunOptions()) for entry in (entries[3], read[0])]
    assert _without_time([results[0], results[4]]) == _without_time(alone)


def test_sessions_are_reused_for_one_structure_and_bounded(entries: list[Entry]) -> None:
    first, second, third = (p.lowering for p in _prepared(entries[:3]))
    assert first.model == second.model
    assert not np.array_equal(first.feeds["InputTensor"], second.feeds["InputTensor"])
    sessions = Sessions(capacity=1)
    runs = [execute(lowering, CPU, sessions) for lowering in (first, second, third, first)]
    assert (sessions.created, sessions.reused) == (3, 1)  # the third evicted the first
    for lowering, run in zip((first, second, third, first), runs, strict=True):
        assert_same(run, execute(lowering, CPU))


def test_no_session_is_open_while_another_is_created(entries: list[Entry]) -> None:
    # An EP's state can outlive a session while any other lives (WebGPU's program cache): each case's session is
    # created with no other case's session open, so that no verdict depends on the cases before it.
    lowerings = [p.lowering for p in _prepared(entries[:3])]
    alive: list[weakref.ref[Opened]] = []

    def create(lowering: Lowering, ep: EpSpec) -> Opened:
        assert [ref for ref in alive if ref() is not None] == []
        opened = open_session(lowering, ep)
        alive.append(weakref.ref(opened))
        return opened

    sessions = Sessions()
    for lowering in (lowerings[0], lowerings[1], lowerings[2], lowerings[0]):
        sessions.open(lowering, CPU, create)
    assert (sessions.created, sessions.reused) == (3, 1)  # the second has the first one's model; the last is new again


def assert_same(one: Execution, other: Execution) -> None:
    assert one.outputs.keys() == other.outputs.keys()
    for name in one.outputs:
        np.testing.assert_array_equal(one.outputs[name], other.outputs[name], strict=True)


def test_the_library_gives_the_same_results_packed_and_one_per_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    files = ["cases/top_k1/spec_examples.yaml", "cases/slice1", "cases/found/mean_variance_normalization1.yaml"]
    assert main(["run", *files, "--ep", "cpu", "--pack", "1", "--report-dir", str(tmp_path / "one")]) == 0
    assert main(["run", *files, "--ep", "cpu", "--pack", "16", "--report-dir", str(tmp_path / "packed")]) == 0
    one, packed = (json.loads((tmp_path / d / "results.json").read_text())["results"] for d in ("one", "packed"))
    assert len(one) > 100
    assert [{**r, "seconds": 0} for r in packed] == [{**r, "seconds": 0} for r in one]


def test_pack_must_be_positive(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert (
        main(["run", str(REPO / "cases/top_k1/spec_examples.yaml"), "--pack", "0", "--report-dir", str(tmp_path)]) == 2
    )
    assert capsys.readouterr().err.strip() == "dmlconf: --pack: must be at least 1, got 0"


class LostDevicePacks(Sessions):
    """A packed session whose run says the device was lost, as CUDA's illegal address does: on a real device every
    later session of the process fails too, so splitting the pack in halves there would blame the cases run first."""

    def open(self, lowering: Lowering, ep: EpSpec, create: Callable[[Lowering, EpSpec], Opened]) -> Opened:
        opened = super().open(lowering, ep, create)
        return replace(opened, session=LostDevice()) if len(lowering.nodes) > 1 else opened


class LostDevice:
    def run(self, names: list[str], feeds: dict[str, Any]) -> list[Any]:
        raise RuntimeError("CUDA failure 700: an illegal memory access was encountered")


class LostWatch(Unwatched):
    def __init__(self) -> None:
        self.lost: list[tuple[list[int], str]] = []

    def device_lost(self, places: Any, message: str) -> None:
        self.lost.append((list(places), message))


def test_a_pack_that_loses_the_device_is_reported_whole_and_its_cases_run_alone(entries: list[Entry]) -> None:
    group = _prepared(entries[:3])
    watch = LostWatch()
    results = _run_group(group, [10, 11, 12], CPU, RunOptions(), LostDevicePacks(), watch)
    [(places, message)] = watch.lost  # a worker exits here; the supervisor runs each case alone in a fresh one
    assert places == [10, 11, 12] and "illegal memory access" in message
    # In this process (-j 0) each case then runs alone, not the pack in halves: three sessions of one node.
    assert [r.status for r in results] == [Status.PASS] * 3


# -- what one pack may cost (issue 28: 60 MVN1 cases in one DirectML pack took 7.6 GB) --------------------------


def _of_nodes(*op_types: str) -> Lowering:
    """A lowering of one node per op type (its cost is all that is asked of it)."""
    nodes = [onnx.helper.make_node(op, ["x"], [f"y{i}"], name=f"n{i}") for i, op in enumerate(op_types)]
    graph = onnx.helper.make_graph(nodes, "g", [], [])
    return Lowering("any", onnx.helper.make_model(graph).SerializeToString(), {}, {}, tuple(n.name for n in nodes))


def test_mvn1_packs_are_smaller_than_top_k_packs() -> None:
    from conformance.ep.pack import PACK_MAX_COST, compile_cost, pack_spans

    top_k, slice_, mvn = _of_nodes("TopK"), _of_nodes("Slice"), _of_nodes("InstanceNormalization")
    mvn13, mean = _of_nodes("MeanVarianceNormalization"), _of_nodes("ReduceMean", "Sub")
    variance = _of_nodes("ReduceMean", "Sub", "Mul", "ReduceMean", "Add", "Sqrt", "Div")
    # issue 28's lavapipe measurements (descriptor heaps) set these: DirectML's MVN and InstanceNormalization 4
    # units, a ReduceMean 10, every other node none
    costs = [compile_cost(lowering, parse_ep("dml")) for lowering in (top_k, slice_, mvn, mvn13, mean, variance)]
    assert costs == [0, 0, 4, 4, 10, 20]
    # DirectML's heaps alone: another EP's packs are bounded by --pack and their elements only
    for other in ("cpu", "cuda", "webgpu"):
        assert [compile_cost(lowering, parse_ep(other)) for lowering in (mvn, variance)] == [0, 0]
    assert PACK_MAX_COST == 64  # the budget the numbers below are worked out on
    small = [1] * 100
    # 100 TopK cases: --pack's 64, then the rest; 20 single-node MVN1 cases: 16 a pack; decompositions 3 or 6 a pack
    assert [len(span) for span in pack_spans([0] * 100, small, 64)] == [64, 36]
    assert [len(span) for span in pack_spans([4] * 20, small[:20], 64)] == [16, 4]
    assert [len(span) for span in pack_spans([20] * 7, small[:7], 64)] == [3, 3, 1]
    assert [len(span) for span in pack_spans([10] * 7, small[:7], 64)] == [6, 1]
    assert [len(span) for span in pack_spans([0] * 40, small[:40], 10)] == [10, 10, 10, 10]  # --pack bounds the count


def test_a_pack_holds_at_most_pack_max_total_elements() -> None:
    from conformance.ep.pack import PACK_MAX_ELEMENTS, PACK_MAX_TOTAL, pack_spans

    largest = PACK_MAX_ELEMENTS  # the largest case packed at all
    assert PACK_MAX_TOTAL // largest == 8
    # 20 of the largest: 8, 8, then 4 with the 8 half their size that fill the rest of that pack, then 2
    sizes = [largest] * 20 + [largest // 2] * 10
    spans = pack_spans([0] * 30, sizes, 64)
    assert [len(span) for span in spans] == [8, 8, 12, 2]
    assert all(sum(sizes[i] for i in span) <= PACK_MAX_TOTAL for span in spans)


def test_a_case_dearer_than_a_pack_runs_alone_and_the_spans_cover_every_case() -> None:
    from conformance.ep.pack import PACK_MAX_TOTAL, pack_spans

    spans = pack_spans([1, 100, 1, 1, 70, 3], [1] * 6, 64)
    assert [list(span) for span in spans] == [[0], [1], [2, 3], [4], [5]]
    spans = pack_spans([0, 0, 0], [1, PACK_MAX_TOTAL + 1, 1], 64)
    assert [list(span) for span in spans] == [[0], [1], [2]]
    assert pack_spans([], [], 64) == []
