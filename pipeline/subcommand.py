"""`xstream pipeline ...`: the Spark pipeline's commands (pyspark is imported only when run)."""

from __future__ import annotations

from typing import Any

from . import example


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "pipeline",
        help="Spark pipelines on xstream",
        description="Spark pipelines on xstream (needs pyspark and Java).",
    )
    cmds = p.add_subparsers(dest="pipeline_command", required=True)
    ex = cmds.add_parser(
        "example",
        help="per-minute aggregates of an events stream (to a stream and Parquet)",
        description=example.DESCRIPTION,
    )
    example.add_arguments(ex)
    ex.set_defaults(func=example.run)
