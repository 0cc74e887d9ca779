"""A node's configuration: what `xstream primary|replica` is given (both roles use it, since a
node can change role in place)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xstream.node.acl import Acl, file_text
from xstream.node.tls import TlsConfigError, TlsFiles, is_loopback


class ConfigError(TlsConfigError):
    """A node's options refused before it starts (the CLI says why and exits 2)."""


@dataclass
class NodeConfig:
    role: str  # "primary" or "replica": the role it starts in
    port: int = 7700
    host: str = "127.0.0.1"
    data_dir: Path = Path("data")
    primary: str = ""  # replica: the primary's host:port
    name: str = ""  # default: host:port
    fsync: str = "everysec"
    backlog_bytes: int = 1 << 20  # both roles: the stream's tail in memory (older: on disk)
    snapshot_bytes: int = 64 << 20
    disk_reserve_bytes: int = 64 << 20  # writes are refused below this much free space
    acks_timeout_ms: int = 5000
    expect_replicas: int = 0
    replica_forget_after: float = 60.0  # seconds a departed replica still counts for acks
    repl_flow_lag_ms: int = 50  # flow control: how far a paced replica may lag (0: off)
    repl_flow_timeout_ms: int = 500  # a paced replica's acks stalled this long: ignored
    min_replicas_to_write: int = 0
    min_replicas_max_lag: float = 10.0
    metrics_port: int = 0  # 0 = no metrics endpoint
    node_max_bytes: int = 4096
    node_max_entries: int = 100
    log_level: str = "info"
    max_reply_bytes: int = 128 << 20  # a read's reply payload (slices.py)
    proto_max_bulk_len: int = 512 << 20  # one argument (Redis's proto-max-bulk-len)
    # The RESP server (server/resp): None = none; 0 = any free port. Host "" = `host`.
    resp_port: int | None = None
    resp_host: str = ""
    client_query_buffer_limit: int = 1 << 30  # unparsed input per RESP connection (Redis's)
    event_loop: str = "auto"  # auto | uvloop | asyncio (server/loops.py)
    enable_debug_command: str = "no"  # "yes": DEBUG is allowed (Redis's enable-debug-command)
    # Automatic failover (xstream node): etcd client URLs; empty = manual mode.
    etcd: tuple[str, ...] = ()
    etcd_prefix: str = "/xstream"
    lease_ttl: int = 2  # seconds, whole (etcd leases)
    advertise: str = ""  # host:port peers and clients dial; default host:port
    # TLS on every endpoint (node/tls.py): explicit files, or --tls-dir DIR with DIR/<name>.*
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_ca: Path | None = None
    tls_dir: Path | None = None
    tls_client_auth: str = "required"  # required | optional | no
    insecure: bool = False  # allow a non-loopback bind without TLS and passwords
    # Users (node/acl.py): --requirepass gives the default user a password; --aclfile FILE
    # holds users in Redis's format (ACL LOAD/SAVE's file). Neither is ever logged.
    requirepass: str = ""
    aclfile: Path | None = None
    # A replica's (and an elected node's) credentials on its link to the primary.
    primary_user: str = ""
    primary_password: str = ""
    primary_password_file: Path | None = None  # read into primary_password at start


def tls_files(cfg: NodeConfig) -> TlsFiles | None:
    """The node's TLS files, or None when TLS is off; TlsConfigError when the options are
    incomplete."""
    return TlsFiles.resolve(
        cert=cfg.tls_cert,
        key=cfg.tls_key,
        ca=cfg.tls_ca,
        directory=cfg.tls_dir,
        name=cfg.name,
        client_auth=cfg.tls_client_auth,
    )


def node_acl(cfg: NodeConfig) -> Acl:
    """The node's users: the default user (with --requirepass's password), then --aclfile's
    users if given (ConfigError with Redis's `<file>:<line>: ...` text when it is wrong)."""
    acl = Acl(requirepass=cfg.requirepass)
    if cfg.aclfile is not None:
        acl.file = str(cfg.aclfile)
        try:
            text = file_text(cfg.aclfile.read_bytes())
        except OSError as e:
            raise ConfigError(f"cannot read --aclfile {cfg.aclfile}: {e}") from None
        try:
            acl.users = acl.load(text, str(cfg.aclfile))
        except ValueError as e:
            raise ConfigError(f"--aclfile: {e}".rstrip()) from None
    return acl


def read_primary_password(cfg: NodeConfig) -> None:
    """--primary-password-file: the link's password is the file's first line (a secret
    mounted as a file: deploy/ gives it so, never in argv or the environment)."""
    if cfg.primary_password_file is None:
        return
    try:
        text = cfg.primary_password_file.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read --primary-password-file {cfg.primary_password_file}: "
                          f"{e}") from None  # fmt: skip
    lines = text.splitlines()
    if not lines or not lines[0]:
        raise ConfigError(f"--primary-password-file {cfg.primary_password_file} is empty")
    cfg.primary_password = lines[0]


def check_exposure(cfg: NodeConfig, tls: bool, password: bool = False) -> None:
    """Refuse to serve a non-loopback address in the clear to anonymous clients unless told
    (--insecure): a node reachable from other machines without TLS and without a password
    lets any of them write, flush, promote or replicate everything (Redis's protected mode,
    stricter). `password`: an anonymous connection must authenticate (Acl.requires_auth)."""
    if tls or password or cfg.insecure:
        return
    hosts = [cfg.host, cfg.resp_host if cfg.resp_port is not None and cfg.resp_host else ""]
    exposed = [h for h in dict.fromkeys(hosts) if h and not is_loopback(h)]
    if exposed:
        raise TlsConfigError(
            f"refusing to listen on {', '.join(exposed)} without TLS and without a password: "
            "anyone who can reach it could read, write, flush, promote or replicate this node. "
            "Give --tls-dir (see `xstream certs`) or --tls-cert/--tls-key/--tls-ca, or "
            "--requirepass/--aclfile with a default user that needs a password, bind "
            "127.0.0.1, or pass --insecure to accept the risk"
        )
