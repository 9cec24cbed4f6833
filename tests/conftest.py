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
