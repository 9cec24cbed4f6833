"""Fixtures shared by the test modules."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def chain_ready() -> None:
    """The DirectML chain (Wine + vkd3d-proton + the onnxruntime-directml wheel) is here: else the test is skipped,
    and under CI (CI=true) it fails, since CI must run the tests that go through the genuine DirectML."""
    from conformance.ep.wine.chain import ChainMissing, find_chain  # only where a test asks: not every test's import

    try:
        find_chain()
    except ChainMissing as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must have the DirectML chain: {error}")
        pytest.skip(f"no DirectML chain here: {error}")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Where the DirectML chain is set up, the runner is built (or found built) before the first test, saying so:
    its first build takes about a minute on 2 cores, which a test would otherwise sit through without a word."""
    if not os.environ.get("DMLCONF_VKD3D_PROTON") or hasattr(session.config, "workerinput"):
        return
    import time

    from conformance.ep.wine.chain import ChainMissing, find_chain

    writer = session.config.get_terminal_writer()
    writer.line("dml-conformance tests: the DirectML runner, built once per runner source (about a minute the first "
                "time) ...", flush=True)  # fmt: skip
    started = time.monotonic()
    try:
        find_chain()
    except ChainMissing as error:  # the tests that need the chain say it (chain_ready)
        writer.line(f"dml-conformance tests: no DirectML chain: {error}")
        return
    writer.line(f"dml-conformance tests: the DirectML runner is ready ({time.monotonic() - started:.0f} s)")
