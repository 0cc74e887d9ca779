"""One error hierarchy (engine/errors.py): every exception class the service's floors define
derives from CoreError. The client's and the console's (redis-py's shapes, what a terminal
prints) and the Spark source's (PySpark's) belong to their own edges and are not looked at;
a private class (`_Short`: a loader's control flow, never raised out of its module) is not
an error either."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import xstream
import xstream.engine
import xstream.primary
import xstream.replica
from xstream.engine.errors import CoreError

OWN_EDGES = ("xstream.client", "xstream.console", "xstream.pipeline", "xstream.v1")


# Packages with their own source folder (pyproject's package-dir), walked apart.
PACKAGES = (xstream, xstream.engine, xstream.primary, xstream.replica)


def service_modules() -> list[str]:
    names = {
        m.name
        for package in PACKAGES
        for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
        if not m.name.startswith(OWN_EDGES)
    }
    return sorted(names)


def test_the_floors_are_all_walked() -> None:
    names = service_modules()
    for floor in ("engine", "node", "primary", "replica", "server", "coord"):
        assert any(n.startswith(f"xstream.{floor}.") for n in names), floor


@pytest.mark.parametrize("name", service_modules())
def test_every_error_is_a_core_error(name: str) -> None:
    module = importlib.import_module(name)
    outside = [
        cls.__qualname__
        for cls in vars(module).values()
        if inspect.isclass(cls)
        and cls.__module__ == name
        and issubclass(cls, BaseException)
        and not cls.__name__.startswith("_")
        and not issubclass(cls, CoreError)
    ]
    assert outside == [], f"{name}: {outside} outside CoreError"
