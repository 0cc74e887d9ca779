"""xstream.protocol: what client and server share, and the client's freedom from the server
(the `server` extra: its pins, and the CLI without it).

The import checks run in a fresh interpreter, so modules other tests imported do not count."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from xstream.engine.reply import NULL_ARRAY, PairMap, Reply, ReplyMap, Status
from xstream.protocol import acks_name, from_value, to_value, write_concern
from xstream.v1 import xstream_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
EXTRA = (
    "grpc_health",
    "grpc_reflection",
    "prometheus_client",
    "cryptography",
)  # the `server` extra's modules
SERVER_ONLY = (*EXTRA, "xstream.server", "xstream.node", "xstream.primary", "xstream.replica")
# grpc's own __init__ imports these two bare packages (license headers only) as backward-
# compatibility shims when they are installed; what a server uses is below them (.v1, ...).
GRPC_SHIMS = ("grpc_health", "grpc_reflection")
# Run first in a child: server-only packages cannot be imported, as without `xstream[server]`.
UNINSTALL = f"""
import sys
class Uninstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {EXTRA!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Uninstalled())
"""


def _loaded_after(code: str) -> list[str]:
    """The names in sys.modules after running `code` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


def _server_modules(loaded: list[str]) -> list[str]:
    found = [m for m in loaded if any(m == s or m.startswith(s + ".") for s in SERVER_ONLY)]
    return [m for m in found if m not in GRPC_SHIMS]


def test_importing_the_client_loads_no_server_module() -> None:
    loaded = _loaded_after("import xstream.client")
    assert "xstream.client" in loaded
    assert _server_modules(loaded) == []


A_CLIENT = "from xstream.client import Client\nClient('127.0.0.1', 1, nodes=[]).close()"


def test_a_grpc_client_loads_no_server_module() -> None:
    # Client() imports the gRPC transport lazily; building one opens no connection.
    loaded = _loaded_after(A_CLIENT)
    assert "xstream.client.grpc_transport" in loaded and "xstream.protocol" in loaded
    assert _server_modules(loaded) == []


def test_a_grpc_client_works_without_the_server_extra() -> None:
    loaded = _loaded_after(UNINSTALL + A_CLIENT)
    assert "xstream.client.grpc_transport" in loaded
    assert [m for m in loaded if m.split(".")[0] in EXTRA] == []


REPLIES: list[Reply] = [
    b"bulk",
    b"",
    42,
    -1,
    Status("OK"),
    None,
    NULL_ARRAY,
    [],
    [b"a", 1, None],
    [[b"1-0", [b"f", b"v"]], [b"2-0", []]],  # entries
    [[b"1-0", None]],  # not entries: a nil where the fields go
    ReplyMap([(b"length", 2), (b"groups", [])]),
    PairMap([[b"s", [[b"1-0", [b"f", b"v"]]]]]),
]


@pytest.mark.parametrize("reply", REPLIES, ids=repr)
def test_values_round_trip(reply: Reply) -> None:
    back = from_value(pb.Value.FromString(to_value(reply).SerializeToString()))
    assert back == reply and type(back) is type(reply)


def test_write_concern_names() -> None:
    assert write_concern() == pb.WriteConcern(acks=pb.ACKS_LEADER)
    assert write_concern("quorum", 500) == pb.WriteConcern(acks=pb.ACKS_QUORUM, timeout_ms=500)
    for name in ("leader", "quorum", "all"):
        assert acks_name(write_concern(name).acks) == name
    assert acks_name(99) == "quorum"  # unknown (a newer client): the safer reading
    with pytest.raises(ValueError, match="acks must be"):
        write_concern("most")


# ---------------------------------------------------------------- the `server` extra


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", r.strip(), maxsplit=1)[0].lower() for r in requirements}


def test_runtime_pins_are_the_core_and_the_server_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = _names(project["dependencies"])
    server = _names(project["optional-dependencies"]["server"])
    lines = (ROOT / "requirements/runtime.txt").read_text().splitlines()
    pinned = _names([x for x in lines if x.strip() and not x.startswith("#")])
    assert core == {"grpcio", "protobuf", "xxhash"}  # xxhash: IDMPAUTO; the client has the engine
    assert core | server == pinned and not core & server


def test_cli_names_what_the_node_floor_defines() -> None:
    from xstream import cli  # noqa: PLC0415
    from xstream.node.store import FSYNC_POLICIES  # noqa: PLC0415
    from xstream.server.loops import EVENT_LOOPS  # noqa: PLC0415

    assert cli.FSYNC_POLICIES == FSYNC_POLICIES
    assert cli.EVENT_LOOPS == EVENT_LOOPS
    assert cli.SERVER_EXTRA == EXTRA


def _cli_without_the_extra(*words: str) -> subprocess.CompletedProcess[str]:
    code = f"{UNINSTALL}\nfrom xstream.cli import main\nsys.exit(main({list(words)!r}))"
    return subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)


def test_the_cli_without_the_extra_helps_and_says_what_to_install(tmp_path: Path) -> None:
    assert _cli_without_the_extra("--help").returncode == 0
    assert _cli_without_the_extra("primary", "--help").returncode == 0
    data = tmp_path / "d"
    done = _cli_without_the_extra("primary", "--port", "0", "--data-dir", str(data))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "pip install 'xstream[server]'" in done.stderr
    assert not data.exists()
