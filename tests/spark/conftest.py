"""Spark tier: the `xstream` data source in a local[2] Spark session against real nodes.

One Spark session for the whole run (JVM start-up costs ~8 s here), one primary with two
replicas per test module. Without Java these tests skip, except under CI=true,
where they fail: CI must run them. pyspark is a pinned dev dependency, so it is never missing.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Cluster, Node

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def jvm_output(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Everything the test session's JVM (and its Python workers) print on stderr; the
    `spark` fixture copies what was printed while the session started to jvm-startup.log."""
    return tmp_path_factory.mktemp("spark") / "jvm-stderr.log"


@pytest.fixture(scope="session")
def java() -> None:
    if shutil.which("java") is None:  # the only allowed skip: no Java outside CI
        if os.environ.get("CI") == "true":
            pytest.fail("java is required under CI=true (scripts/test.sh installs a JRE)")
        pytest.skip("java is not installed")


@pytest.fixture(scope="session")
def spark(java: None, jvm_output: Path) -> Iterator[Any]:
    from xstream.pipeline import session  # noqa: PLC0415  (pyspark: requirements/spark.txt)

    try:
        spark = session.local("xstream-tests", quick_start=True, jvm_output=jvm_output)
    except session.JvmStartError as first:
        # A JVM died while starting once in CI (stop 26), its words lost; kept since, they
        # named gRPC's fork handler in the launcher's child, which session.py now avoids
        # ("spawn"). For any other cause: one more start; the first one's words are shown
        # here and kept beside the log, not counted as this session's start-up output.
        print(f"spark: {first}\nspark: starting the JVM once more", file=sys.stderr)
        if jvm_output.exists():
            jvm_output.rename(jvm_output.with_name("jvm-failed-start.log"))
        spark = session.local("xstream-tests", quick_start=True, jvm_output=jvm_output)
    printed = jvm_output.read_text() if jvm_output.exists() else ""
    jvm_output.with_name("jvm-startup.log").write_text(printed)
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Node, list[Node]]]:
    c = Cluster(tmp_path_factory.mktemp("xstream"))
    failed = True
    try:
        primary = c.primary("--node-max-entries", "50")
        replicas = [c.replica(primary, "--node-max-entries", "50") for _ in range(2)]
        yield c, primary, replicas
        failed = False
    finally:
        c.close(dump=failed)
