"""`xstream secrets`: everything a deployment needs to run with TLS and users on every link,
made once per deployment with fresh random passwords (compose's init service, Kubernetes'
Job, the drills), never kept in the repository.

    DIR/tls/     ca.crt, <node>.crt, <node>.key     the nodes' and etcd's --tls-dir: node
                                                    certificates (serverAuth + clientAuth;
                                                    SANs: the name, <name>.<domain> for every
                                                    --domain, localhost, loopback, --host);
                                                    ca.crt trusts both CAs (below)
                 nodes-ca.crt                       the node CA alone: etcd's
                                                    --trusted-ca-file, so a client
                                                    certificate cannot reach etcd
    DIR/users/   users.acl                          the nodes' --aclfile (Redis's format,
                                                    passwords as SHA-256 `#` hashes only)
                 replica.password                   the replication user's, for the nodes'
                                                    --primary-password-file
    DIR/client/  ca.crt, admin.crt/.key,            what a client needs: the node CA, a client
                 app.crt/.key,                      certificate per user (its CN is the user:
                 admin.password, app.password       over gRPC it logs in as that user) and
                                                    the passwords (RESP's AUTH, --user/--pass)
    DIR/ca/      ca.crt, ca.key                     the node CA (nodes, etcd members) and
                 clients/ca.crt, clients/ca.key     the client CA, to issue more later (only
                                                    the maker needs them: compose mounts
                                                    DIR/ca apart)

Users (USERS): `default` off (nothing anonymous), `admin` (+@all), `app` (reads and writes,
streams and groups, INFO for failover, nothing @dangerous), `replica` (+sync only: what a
node's link to its primary needs).

Invariants: DIR/.complete is written last; a DIR that has it is kept as it is (passwords and
certificates stay the same across restarts); one without it is made anew, reusing the CA in
DIR/ca if there is one; node certificates a complete DIR lacks are added with its node CA
(a node joins later). Keys and passwords are 0600, the rest 0644; with --owner (run as
root) every file is chowned to it, so an unprivileged node can read its key.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path

from xstream import certs

CLIENTS = ("admin", "app")  # users with a client certificate and a password in DIR/client
USERS = {  # name -> the rules after `user NAME on #<hash>`
    "admin": "~* &* +@all",
    "app": "~* &* +@all -@dangerous +info",
    "replica": "+sync",
}
MARK = ".complete"


def password() -> str:
    """A fresh random password: 256 bits, URL-safe (no quoting needed in a shell or a URL)."""
    return secrets.token_urlsafe(32)


def acl_text(passwords: dict[str, str]) -> str:
    """users.acl: the default user off, then USERS with their passwords' hashes."""
    lines = ["user default off resetpass -@all"]
    for name, rules in USERS.items():
        digest = hashlib.sha256(passwords[name].encode()).hexdigest()
        lines.append(f"user {name} on #{digest} {rules}")
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str, mode: int) -> None:
    certs._write(path, text.encode(), mode)  # whole, then renamed (as certificates are)


def _authority(folder: Path, name: str) -> certs.Authority:
    """The CA kept in `folder` (ca.crt, ca.key), made there first if missing."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = certs.load_ca(folder)
    if ca is None:
        ca = certs.make_ca(name=name)
        certs.write_pair(folder, "ca", ca.cert, ca.key)
    return ca


def make(
    out: Path,
    nodes: Sequence[str],
    *,
    domains: Sequence[str] = (),
    hosts: Sequence[str] = (),
    owner: tuple[int, int] | None = None,
) -> str:
    """Make DIR's tree for `nodes` ("made"), or keep a complete one ("kept"), adding the
    certificates of `nodes` it lacks with its node CA ("added")."""
    for n in nodes:
        certs.check_name(n)
    if (out / MARK).exists():
        return _add(out, nodes, domains, hosts, owner)
    dirs = {d: out / d for d in ("tls", "users", "client", "ca")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    node_ca = _authority(dirs["ca"], "xstream node CA")
    client_ca = _authority(dirs["ca"] / "clients", "xstream client CA")
    for name in nodes:
        sans = [*(f"{name}.{d}" for d in domains), *hosts]
        certs.write_pair(dirs["tls"], name, *certs.issue(node_ca, name, hosts=sans))
    for name in CLIENTS:
        certs.write_pair(dirs["client"], name, *certs.issue(client_ca, name, server=False))
    nodes_pem = (dirs["ca"] / "ca.crt").read_text()
    clients_pem = (dirs["ca"] / "clients" / "ca.crt").read_text()
    _write(dirs["tls"] / "ca.crt", nodes_pem + clients_pem, 0o644)
    _write(dirs["tls"] / "nodes-ca.crt", nodes_pem, 0o644)
    _write(dirs["client"] / "ca.crt", nodes_pem, 0o644)
    passwords = {name: password() for name in USERS}
    _write(dirs["users"] / "users.acl", acl_text(passwords), 0o600)
    _write(dirs["users"] / "replica.password", passwords["replica"] + "\n", 0o600)
    for name in CLIENTS:
        _write(dirs["client"] / f"{name}.password", passwords[name] + "\n", 0o600)
    if owner is not None:
        for path in [out, *out.rglob("*")]:
            os.chown(path, *owner)
    _write(out / MARK, "", 0o644)
    if owner is not None:
        os.chown(out / MARK, *owner)
    return "made"


def _add(
    out: Path,
    nodes: Sequence[str],
    domains: Sequence[str],
    hosts: Sequence[str],
    owner: tuple[int, int] | None,
) -> str:
    missing = [n for n in nodes if not (out / "tls" / f"{n}.crt").exists()]
    if not missing:
        return "kept"
    node_ca = certs.load_ca(out / "ca")
    if node_ca is None:
        raise ValueError(f"{out / 'ca'} holds no CA: cannot add certificates for {missing}")
    for name in missing:
        sans = [*(f"{name}.{d}" for d in domains), *hosts]
        certs.write_pair(out / "tls", name, *certs.issue(node_ca, name, hosts=sans))
        if owner is not None:
            for suffix in (".crt", ".key"):
                os.chown(out / "tls" / f"{name}{suffix}", *owner)
    return "added"


# ------------------------------------------------------------------ the command


def _owner(text: str) -> tuple[int, int]:
    uid, _, gid = text.partition(":")
    if not (uid.isdigit() and (gid or uid).isdigit()):
        raise argparse.ArgumentTypeError(f"{text} is not UID[:GID]")
    return int(uid), int(gid or uid)


def run(args: argparse.Namespace) -> int:
    nodes = [n for group in args.node for n in group]
    try:
        made = make(args.out, nodes, domains=args.domain, hosts=args.host, owner=args.owner)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{made} {args.out}")
    if args.kube_secrets:
        from xstream import kubesecrets  # noqa: PLC0415

        try:
            for line in kubesecrets.publish(args.out, args.kube_secrets):
                print(line)
        except kubesecrets.KubeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "secrets",
        help="make a deployment's certificates, users and passwords (once)",
        description="Make DIR/tls (CA certificate, a certificate per node), DIR/users "
        "(users.acl with hashed passwords, replica.password), DIR/client (CA certificate, "
        "admin and app client certificates and passwords) and DIR/ca (the CA's key), with "
        "fresh random passwords; a DIR already complete is kept, only the node certificates "
        "it lacks are added. Needs the server "
        "extra (the cryptography library).",
    )
    p.add_argument("--out", required=True, type=Path, help="directory to write into (DIR)")
    p.add_argument(
        "--node",
        type=certs._names,
        action="append",
        default=[],
        metavar="NAME[,NAME...]",
        help="node certificates (nodes and etcd members); repeatable",
    )
    p.add_argument(
        "--domain",
        action="append",
        default=[],
        metavar="DOMAIN",
        help="each node certificate also names NAME.DOMAIN (e.g. a headless Service); repeatable",
    )
    p.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="HOST",
        help="one more DNS name or IP address in every node certificate; repeatable",
    )
    p.add_argument(
        "--owner",
        type=_owner,
        metavar="UID[:GID]",
        help="chown every file to it (run as root for an unprivileged node, e.g. 10001)",
    )
    p.add_argument(
        "--kube-secrets",
        default="",
        metavar="PREFIX",
        help="in a Kubernetes pod: also store DIR/tls, users, client and ca as the Secrets "
        "PREFIX-tls, PREFIX-users, PREFIX-client, PREFIX-ca of its namespace (kept if they "
        "all exist already)",
    )
    p.set_defaults(func=run)
