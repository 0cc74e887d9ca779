"""Fixtures of the drills: the node image (built once per session) and a Cluster per test.

Without a Docker daemon the drills are skipped, except under CI=true where that is a failure:
CI must never pass by skipping them. A failed test's report carries every node's logs.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator

import pytest

from .harness import Cluster, build_node_image, docker_available


@pytest.fixture(scope="session")
def node_image() -> str:
    """The xstream-node:<hash> tag, from scripts/images.sh (seconds on a warm cache)."""
    if not docker_available():
        if os.environ.get("CI") == "true":
            pytest.fail("no Docker daemon: the drills need one under CI=true")
        pytest.skip("no Docker daemon (the drills need one)")
    return build_node_image()


@pytest.fixture
def cluster(node_image: str) -> Iterator[Cluster]:
    """An empty Cluster of node_image on its own network, removed after the test."""
    with Cluster(node_image) as c:
        yield c


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach every node's logs to the report of a test that failed while its cluster was up
    (in the test, or in a fixture starting nodes on it)."""
    report = yield
    c = getattr(item, "funcargs", {}).get("cluster")
    if report.when in ("setup", "call") and report.failed and isinstance(c, Cluster):
        report.sections.append(("xstream node logs", c.logs()))
    return report
