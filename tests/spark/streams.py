"""Helpers of the Spark tier: filling streams on a primary, reading them back with XRANGE."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Node
from xstream.client import Client


def fill(primary: Node, key: str, n: int, first: int = 0) -> list[str]:
    """Append n entries {user_id, action, n} with automatic IDs; their IDs."""
    c = Client("127.0.0.1", primary.port, decode_responses=True)
    try:
        entries = [
            {"user_id": str(i % 7), "action": ("click", "view")[i % 2], "n": str(i)}
            for i in range(first, first + n)
        ]
        return list(c.xadd_many(key, entries))
    finally:
        c.close()


def xrange(
    node: Node, key: str, start: str = "-", end: str = "+"
) -> list[tuple[str, dict[str, str]]]:
    c = Client("127.0.0.1", node.port, decode_responses=True)
    try:
        return [(i, f) for i, f in c.xrange(key, start, end)]
    finally:
        c.close()


def rows(df: Any) -> list[tuple[str, str, dict[str, str]]]:
    return [(r["stream"], r["id"], dict(r["fields"])) for r in df.collect()]


def reader(
    spark: Any, streams: str, replicas: list[Node], streaming: bool = False, **options: str
) -> Any:
    """A batch (or streaming) `xstream` reader of `streams` on `replicas`, with `options`."""
    r = (
        (spark.readStream if streaming else spark.read)
        .format("xstream")
        .option("streams", streams)
        .option("replicas", ",".join(n.address for n in replicas))
    )
    for k, v in options.items():
        r = r.option(k, v)
    return r
