"""xstream.protocol: what client and server share, and the client's freedom from the server.

The import checks run in a fresh interpreter, so modules other tests imported do not count."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from xstream.engine.reply import NULL_ARRAY, PairMap, Reply, ReplyMap, Status
from xstream.protocol import acks_name, from_value, to_value, write_concern
from xstream.v1 import xstream_pb2 as pb

SERVER_ONLY = ("grpc_health", "grpc_reflection", "prometheus_client", "xstream.server")
SERVER_ONLY += ("xstream.node", "xstream.primary", "xstream.replica")
# grpc's own __init__ imports these two bare packages (license headers only) as backward-
# compatibility shims when they are installed; what a server uses is below them (.v1, ...).
GRPC_SHIMS = ("grpc_health", "grpc_reflection")
# Run first in a child: server-only packages cannot be imported, as without `xstream[server]`.
UNINSTALL = f"""
import sys
class Uninstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {SERVER_ONLY[:3]!r}:
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
    assert [m for m in loaded if m.split(".")[0] in SERVER_ONLY[:3]] == []


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
