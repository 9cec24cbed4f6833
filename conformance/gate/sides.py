"""Each side of a run-to-run diff: which EPs, GPU and driver a run is (``Side``), and what changed between the two
runs' environments (``EnvChange``): the short fields a driver team reads first, then ``identity_lines``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conformance.environment import NATIVE_TRANSPORT, Environment, EpRecord, pci_id
from conformance.gate.header import chain_line_name, ep_line_name, identity_lines, ran_on_line_name
from conformance.results import Result


@dataclass(frozen=True)
class EnvChange:
    """One line of the environment that differs, e.g. what="driver", old="580.1", new="581.0"."""

    what: str
    old: str
    new: str

    @property
    def line(self) -> str:
        return f"{self.what} {self.old} → {self.new}"


@dataclass(frozen=True)
class Side:
    """Which EPs and device one run of the diff is, from its results and environment: "dml" alone does not say
    which driver's DirectML a run was."""

    eps: tuple[str, ...] = ()  # the EP texts of its results (Result.ep), in order of first appearance
    described: tuple[str, ...] = ()  # one per EP: "dml (DmlExecutionProvider, DirectML 1.15.4 ...)"
    gpu: str = "—"
    driver: str = "—"
    results: int = 0


def _joined(values: Sequence[object]) -> str:
    return "; ".join(str(v) for v in values) if values else "—"


def _short_fields(env: Environment) -> dict[str, str]:
    """The fields a driver team reads first: GPU name, driver, onnxruntime and each onnxruntime package."""
    fields = {
        "GPU": _joined([g.name or "?" for g in env.gpus]),
        "driver": _joined([g.driver_version or "?" for g in env.gpus]),
        "onnxruntime": env.onnxruntime or "—",
    }
    fields.update(env.onnxruntime_packages)
    return fields


def _ep_device(record: EpRecord) -> str:
    """The device an EP's record names: DirectML's adapter under Wine, else the devices onnxruntime offered it."""
    chain = record.chain
    if chain is not None:
        adapter = chain.adapter.description if chain.adapter is not None else None
        how = "natively" if chain.transport == NATIVE_TRANSPORT else f"through {chain.transport or 'Wine'}"
        return f"{how} on {adapter or '?'}"
    devices = [f"{d.type or '?'} {pci_id(d.vendor_id)}:{pci_id(d.device_id)}" for d in record.devices]
    return f"on {'; '.join(devices)}" if devices else ""


def _described(label: str, record: EpRecord | None) -> str:
    """ "dml (DmlExecutionProvider, DirectML 1.15.4, through wine+vkd3d-proton on NVIDIA H100 80GB HBM3)"; the
    label alone where the environment does not record the EP (a hand-made or older results.json)."""
    if record is None:
        return label
    words = [record.name or label]
    if record.directml is not None:
        words.append(f"DirectML {record.directml.version or '?'}")
    words += [device] if (device := _ep_device(record)) else []
    if record.target_feature_level:
        words.append(f"target feature level {record.target_feature_level}")
    return f"{label} ({', '.join(words)})"


def side(results: Sequence[Result], env: Environment | None) -> Side:
    """Which EPs (as the results name them) and which GPU and driver one run is."""
    env = env or Environment()
    labels = tuple(dict.fromkeys(r.ep for r in results))
    short = _short_fields(env)
    described = tuple(_described(label, env.ep(label)) for label in labels)
    return Side(labels, described, short["GPU"], short["driver"], len(results))


def _identity(env: Environment, by_case: bool) -> dict[str, str]:
    """``identity_lines`` by what each says; paired by case, a run's one EP's lines lose its label ("EP",
    "DirectML chain"), so that two EPs' lines are compared with each other rather than each with nothing."""
    lines = dict(identity_lines(env))
    labels = [record.label for record in env.eps]
    if not by_case or len(labels) != 1:
        return lines
    own = {ep_line_name(labels[0]): "EP", chain_line_name(labels[0]): "DirectML chain"}
    return {own.get(what, what): line for what, line in lines.items()}


def environment_changes(old_env: Environment, new_env: Environment, by_case: bool = False) -> tuple[EnvChange, ...]:
    """Short fields that changed, then EP and platform lines of ``identity_lines`` that changed (an EP's
    options, devices or DirectML version; paired ``by_case``, one EP's against the other's); the GPU and
    onnxruntime lines are already told by the short fields."""
    old_short, new_short = _short_fields(old_env), _short_fields(new_env)
    changes = [
        EnvChange(what, old_short.get(what, "—"), new_short.get(what, "—"))
        for what in dict.fromkeys([*old_short, *new_short])
        if old_short.get(what) != new_short.get(what)
    ]
    old_lines, new_lines = _identity(old_env, by_case), _identity(new_env, by_case)
    # Each EP's "ran on" line restates its EP and chain lines, which are compared: it would say each change twice.
    told = {"GPU", "onnxruntime", *(ran_on_line_name(ep.label) for ep in (*old_env.eps, *new_env.eps))}
    for what in dict.fromkeys([*old_lines, *new_lines]):
        if what not in told and old_lines.get(what) != new_lines.get(what):
            changes.append(EnvChange(what, old_lines.get(what, "—"), new_lines.get(what, "—")))
    return tuple(changes)
