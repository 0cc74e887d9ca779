"""The command line's ACL user (tools.add_auth_args) against a real node with users.

`xstream cli`, `info`, `promote` take `--user`/`--password` (a warning on stderr, as
redis-cli's -a), `--askpass`, or $XSTREAM_USER/$XSTREAM_PASSWORD; a password alone is the
default user's. Refusals print Redis's lines; the password itself is never printed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import Cluster, Node

USERS = """\
user default on >Def-pw-1 ~* &* +@all
user admin on >Admin-pw-2 ~* &* +@all
user reader on >Reader-pw-3 ~* +@read
"""
WARNING = "Warning: a password given with --password can be seen by other users"


@pytest.fixture
def node(cluster: Cluster) -> Node:
    aclfile = cluster.root / "users.acl"
    aclfile.write_text(USERS)
    n = cluster._node("primary", ["--aclfile", str(aclfile)])
    n.auth = (("xstream-user", "admin"), ("xstream-password", "Admin-pw-2"))
    return n.start()


def run(*words: str, env: dict[str, str] | None = None, stdin: str = "") -> tuple[int, str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("XSTREAM_")}
    out = subprocess.run(
        [sys.executable, "-m", "xstream.cli", *words],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**base, **(env or {})},
        input=stdin,
        start_new_session=True,  # no controlling terminal: --askpass reads stdin
    )
    assert "Pw-" not in out.stdout + out.stderr.replace("Password: ", "")
    return out.returncode, out.stdout, out.stderr


def test_cli_users(node: Node) -> None:
    at = ("cli", "--node", node.address)
    code, out, err = run(*at, "XLEN", "s")
    assert (code, out.strip()) == (1, "(error) NOAUTH Authentication required.")

    code, out, err = run(*at, "--user", "reader", "--password", "Reader-pw-3", "XLEN", "s")
    assert (code, out.strip()) == (0, "(integer) 0") and WARNING in err

    readers = {"XSTREAM_USER": "reader", "XSTREAM_PASSWORD": "Reader-pw-3"}
    code, out, err = run(*at, "XADD", "s", "*", "f", "v", env=readers)
    assert code == 1 and not err
    assert out.strip() == "(error) NOPERM User reader has no permissions to run the 'xadd' command"

    code, out, _ = run(*at, "--user", "reader", "XLEN", "s", env={"XSTREAM_PASSWORD": "nope"})
    assert out.strip() == "(error) WRONGPASS invalid username-password pair or user is disabled."

    code, out, err = run(*at, "XADD", "s", "*", "f", "v", env={"XSTREAM_PASSWORD": "Def-pw-1"})
    assert code == 0 and out.strip().endswith('-0"') and not err  # the default user's password

    code, out, err = run(*at, "--user", "admin", "--askpass", "XLEN", "s", stdin="Admin-pw-2\n")
    assert (code, out.strip()) == (0, "(integer) 1") and WARNING not in err


def test_info_and_promote_users(node: Node) -> None:
    code, _, err = run("info", "--node", node.address)
    assert code == 1 and "UNAUTHENTICATED: NOAUTH Authentication required." in err
    admin = {"XSTREAM_USER": "admin", "XSTREAM_PASSWORD": "Admin-pw-2"}
    code, out, _ = run("info", "--node", node.address, env=admin)
    assert code == 0 and out.startswith("role:") and "primary" in out.splitlines()[0]
    readers = {"XSTREAM_USER": "reader", "XSTREAM_PASSWORD": "Reader-pw-3"}
    code, _, err = run("promote", "--node", node.address, env=readers)
    assert code == 1
    assert "PERMISSION_DENIED: NOPERM User reader has no permissions to run the 'failover'" in err
