"""etcd I/O for failover: leader election, leases and node status keys over the v3 JSON gateway.

Keys under `prefix` (a path such as "/xstream/cluster-a"):

    <prefix>/leader        {"name": ..., "value": ...}   bound to the holder's lease; its
                           create_revision is the fencing epoch
    <prefix>/nodes/<name>  {"address", "role", "epoch", "offset", "replid",
                           "leaderless_after", "damaged", "writable"}   bound to that
                           node's lease, so a dead node's status disappears with its lease

Every node holds one lease (granted on first need, refreshed by `keepalive()`); its leader key
and status key are bound to it. Invariants:
- The leader key is only ever created by a txn guarded by `create_revision == 0`, so each
  leader gets its own, strictly greater create revision (the epoch), and it is deleted only by
  a txn guarded by that revision (`resign`) or by its lease expiring.
- `lease().sent_at` is the monotonic time at which the REQUEST of the last successful grant or
  keepalive was sent; etcd keeps the lease until at least that request's arrival + ttl. It is
  never moved by a failed call, and the lease is forgotten only when etcd says it is gone.

Transport: HTTP/1.1 POSTs of JSON to `/v3/...` (keys and values base64), served by etcd
3.4 and later, over TLS for https:// endpoints (verified with the node's CA, showing the
node's certificate: etcd's --client-cert-auth; system roots without a node CA); one new
connection per call, so calls from different threads do not share
state except the lease (guarded by a lock). Every call is bounded by `timeout` seconds in total
and tries the endpoints in turn, starting from the last one that answered; when none answers it
raises `EtcdUnavailableError`. All writes are safe to retry (guarded txns, idempotent puts).
The API is synchronous: a node runs its coordinator loop in a thread. Production needs etcd
3.5+ (3.4 is out of upstream support); 3.4.23 (Debian 12) serves the tests.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from xstream.coord.resolver import LeaderKey, Lease, NodeStatus, Role
from xstream.engine.errors import CoreError

__all__ = [
    "Election",
    "EtcdError",
    "EtcdUnavailableError",
    "Leader",
    "NodeRecord",
]

Json = dict[str, Any]
T = TypeVar("T")


class EtcdError(CoreError):
    """etcd answered with an error (bad request, unknown lease, ...)."""


class EtcdUnavailableError(EtcdError):
    """No endpoint answered within the call's timeout."""


@dataclass(frozen=True, slots=True)
class Leader:
    """The leader key as read."""

    name: str  # the holder's node name
    value: str  # what the holder campaigned with (its address)
    revision: int  # create revision: the fencing epoch
    lease: int  # the holder's lease id

    def key(self) -> LeaderKey:
        """As the resolver sees it."""
        return LeaderKey(self.name, self.value, self.revision, self.lease)


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One node's status key as read."""

    name: str
    address: str
    role: Role
    epoch: int
    offset: int
    replid: str
    mod_revision: int  # etcd revision of its last publish
    leaderless_after: int = -1  # NodeStatus.leaderless_after as published
    damaged: bool = False  # NodeStatus.damaged as published
    writable: bool = True  # NodeStatus.writable as published

    def status(self, heard_at: float) -> NodeStatus:
        """As the resolver sees it, read at `heard_at` on the observer's clock."""
        return NodeStatus(
            self.name,
            self.address,
            self.role,
            self.epoch,
            self.offset,
            self.replid,
            heard_at,
            self.leaderless_after,
            self.damaged,
            self.writable,
        )


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _unb64(text: str) -> str:
    return base64.b64decode(text).decode()


def _prefix_end(prefix: str) -> str:
    """The range_end that selects every key starting with `prefix` (prefix + 1 in its last byte)."""
    raw = bytearray(prefix.encode())
    raw[-1] += 1  # prefixes here end in "/", never 0xff
    return base64.b64encode(bytes(raw)).decode()


TlsContext = Callable[[], ssl.SSLContext]  # the client context of the moment (rotations)


class _Gateway:
    """POSTs JSON to one of several etcd endpoints, failing over between them."""

    def __init__(
        self, endpoints: Sequence[str], timeout: float, tls: TlsContext | None = None
    ) -> None:
        if not endpoints:
            raise ValueError("no etcd endpoints")
        self._hosts = [self._parse(e) for e in endpoints]  # (host, port, https) per endpoint
        self._first = 0  # index of the endpoint that answered last
        self.timeout = timeout  # seconds per call, all endpoints together
        self._tls = tls  # None: https endpoints verify with the system's roots

    @staticmethod
    def _parse(endpoint: str) -> tuple[str, int, bool]:
        url = urllib.parse.urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
        if url.scheme not in ("http", "https") or url.hostname is None:
            raise ValueError(f"etcd endpoint must be http(s)://host:port, not {endpoint!r}")
        return url.hostname, url.port or 2379, url.scheme == "https"

    def _connect(self, index: int, timeout: float) -> http.client.HTTPConnection:
        host, port, https = self._hosts[index]
        if not https:
            return http.client.HTTPConnection(host, port, timeout=timeout)
        ctx = self._tls() if self._tls is not None else ssl.create_default_context()
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx)

    def post(self, path: str, body: Json, timeout: float | None = None) -> Json:
        """One unary call; the JSON reply. Raises EtcdError or EtcdUnavailableError."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        errors = []
        for index in self._order():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            host, port, _ = self._hosts[index]
            try:
                reply = self._post_one(index, path, body, left)
            except (OSError, http.client.HTTPException) as exc:
                errors.append(f"{host}:{port}: {_why(exc)}")
                continue
            self._first = index
            return reply
        raise EtcdUnavailableError(f"POST {path}: no etcd endpoint answered: {'; '.join(errors)}")

    def stream(self, path: str, body: Json, timeout: float) -> Iterator[Json]:
        """A server-streaming call (watch): yields replies until `timeout` or the stream ends."""
        deadline = time.monotonic() + timeout
        index = self._order()[0]
        host, port, _ = self._hosts[index]
        conn = self._connect(index, max(deadline - time.monotonic(), 0))
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            while (left := deadline - time.monotonic()) > 0:
                if conn.sock is not None:
                    conn.sock.settimeout(left)
                line = resp.readline()
                if not line:
                    return
                yield self._unwrap(json.loads(line))
        except TimeoutError:
            return
        except (OSError, http.client.HTTPException) as exc:
            raise EtcdUnavailableError(f"POST {path} to {host}:{port}: {_why(exc)}") from exc
        finally:
            conn.close()

    def _order(self) -> list[int]:
        n = len(self._hosts)
        return [(self._first + i) % n for i in range(n)]

    def _post_one(self, index: int, path: str, body: Json, timeout: float) -> Json:
        conn = self._connect(index, timeout)
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if resp.status >= 500:  # unavailable, no leader, ...: another endpoint may serve
            raise http.client.HTTPException(f"HTTP {resp.status}: {data[:200]!r}")
        try:
            reply = json.loads(data) if data else {}
        except ValueError as exc:  # e.g. "404 page not found": not an etcd v3 gateway
            raise EtcdError(f"POST {path}: HTTP {resp.status}: {data[:200]!r}") from exc
        if resp.status != 200:
            raise EtcdError(f"POST {path}: HTTP {resp.status}: {reply}")
        return self._unwrap(reply)

    @staticmethod
    def _unwrap(reply: Json) -> Json:
        """Streaming replies are {"result": ...} or {"error": ...}; unary ones are bare."""
        if "error" in reply:
            raise EtcdError(f"etcd error: {reply['error']}")
        result = reply.get("result", reply)
        assert isinstance(result, dict)
        return result


def _why(exc: BaseException) -> str:
    """A failed call's reason; a TLS failure says what to check (with TLS 1.3 a refused client
    certificate shows up on the first read, often as a bare EOF)."""
    if isinstance(exc, ssl.SSLError):
        return (f"TLS failed ({exc!r}): does etcd trust this node's certificate "
                "(--trusted-ca-file), and this node's CA (--tls-ca) etcd's?")  # fmt: skip
    return repr(exc)


class Election:
    """One node's view of the election under `prefix`: campaign, lead, resign, observe.

    `ttl` is the lease time to live in whole seconds (etcd rounds up to its minimum, about
    1.5 x its election timeout); `timeout` bounds every call. `clock` must be the clock the
    node gates acknowledgements with (monotonic seconds). `tls` gives the client SSLContext
    of the moment for https:// endpoints.
    """

    def __init__(
        self,
        endpoints: Sequence[str],
        prefix: str,
        name: str,
        ttl: int,
        *,
        timeout: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        tls: TlsContext | None = None,
    ) -> None:
        if not name or "/" in name:
            raise ValueError(f"node name must be non-empty without '/': {name!r}")
        self.name = name  # this node's name
        self.ttl = ttl  # requested lease ttl, seconds
        self._gw = _Gateway(endpoints, timeout, tls)
        self._clock = clock
        self._prefix = prefix.rstrip("/")
        self._leader_key = f"{self._prefix}/leader"
        self._nodes_prefix = f"{self._prefix}/nodes/"
        self._lock = threading.Lock()  # guards _lease and _revision
        self._lease: Lease | None = None  # last successful grant/keepalive; None = none
        self._revision = 0  # create revision of the leader key we created; 0 = none
        self._seen = 0  # etcd revision of the last leader read, for observe()

    # --- lease ---------------------------------------------------------------------------

    def lease(self) -> Lease | None:
        """This node's lease as of its last successful grant or keepalive (None: none)."""
        with self._lock:
            return self._lease

    def keepalive(self) -> bool:
        """Refresh the lease (granting one if there is none). False if it is lost or etcd is
        unreachable; `lease()` tells the two apart (None only when etcd says it is gone)."""
        lease = self.lease()
        if lease is None:
            try:
                self._grant()
            except EtcdError:
                return False
            return True
        sent = self._clock()
        try:
            reply = self._gw.post("/v3/lease/keepalive", {"ID": str(lease.id)})
        except EtcdError:
            return False
        ttl = int(reply.get("TTL", 0))
        with self._lock:
            if self._lease is None or self._lease.id != lease.id:
                return False  # replaced meanwhile
            if ttl <= 0:
                self._lease = None
                self._revision = 0
                return False
            self._lease = Lease(lease.id, float(ttl), max(sent, self._lease.sent_at))
        return True

    def close(self) -> None:
        """Revoke the lease: the leader key (if ours) and our status key go at once."""
        lease = self.lease()
        with self._lock:
            self._lease, self._revision = None, 0
        if lease is not None:
            self._gw.post("/v3/lease/revoke", {"ID": str(lease.id)})

    def _grant(self) -> Lease:
        sent = self._clock()
        reply = self._gw.post("/v3/lease/grant", {"TTL": str(self.ttl)})
        lease = Lease(int(reply["ID"]), float(reply["TTL"]), sent)
        with self._lock:
            self._lease = lease
            self._revision = 0
        return lease

    def _with_lease(self, call: Callable[[Lease], T]) -> T:
        """`call(lease)` with our lease, granting one first if needed; once more with a new
        lease if etcd no longer knows ours."""
        lease = self.lease() or self._grant()
        try:
            return call(lease)
        except EtcdError as exc:
            if "lease not found" not in str(exc) or isinstance(exc, EtcdUnavailableError):
                raise
        with self._lock:
            if self._lease is not None and self._lease.id == lease.id:
                self._lease, self._revision = None, 0
        return call(self._grant())

    # --- leader key ------------------------------------------------------------------------

    def campaign(self, value: str) -> int | None:
        """Try to become leader with `value` (our address). The epoch (the leader key's create
        revision) if we hold the key after this call, None if another node does."""
        return self._with_lease(lambda lease: self._campaign(lease, value))

    def _campaign(self, lease: Lease, value: str) -> int | None:
        key = _b64(self._leader_key)
        doc = json.dumps({"name": self.name, "value": value})
        body = {
            "compare": [
                {"key": key, "target": "CREATE", "result": "EQUAL", "create_revision": "0"}
            ],
            "success": [{"request_put": {"key": key, "value": _b64(doc), "lease": str(lease.id)}}],
            "failure": [{"request_range": {"key": key}}],
        }
        reply = self._gw.post("/v3/kv/txn", body)
        if reply.get("succeeded"):
            revision = int(reply["header"]["revision"])
        else:
            # Lost, or a retried txn of ours had already won: the key tells which.
            kvs = reply["responses"][0]["response_range"].get("kvs", [])
            leader = self._parse_leader(kvs[0]) if kvs else None
            if leader is None or leader.lease != lease.id:
                return None
            revision = leader.revision
        with self._lock:
            self._revision = revision
        return revision

    def leader(self) -> Leader | None:
        """The current leader key, or None if there is none."""
        reply = self._gw.post("/v3/kv/range", {"key": _b64(self._leader_key)})
        self._seen = int(reply["header"]["revision"])
        kvs = reply.get("kvs", [])
        return self._parse_leader(kvs[0]) if kvs else None

    def resign(self) -> bool:
        """Delete the leader key if it is still the one we created. True if we deleted it."""
        with self._lock:
            revision, self._revision = self._revision, 0
        if revision == 0:
            return False
        reply = self._gw.post("/v3/kv/txn", self._guarded(revision, delete=self._leader_key))
        return bool(reply.get("succeeded"))

    def put_if_leader(self, key: str, value: str, epoch: int) -> bool:
        """Fenced write: put `key` only while the leader key's create revision is `epoch`."""
        reply = self._gw.post("/v3/kv/txn", self._guarded(epoch, put=(key, value)))
        return bool(reply.get("succeeded"))

    def observe(self, timeout: float) -> Leader | None:
        """Wait up to `timeout` s for the leader key to change since the last leader() or
        observe() read (changes in between are not missed), then return the current leader."""
        if self._seen == 0:
            return self.leader()
        watch = {
            "create_request": {"key": _b64(self._leader_key), "start_revision": str(self._seen + 1)}
        }
        try:
            for reply in self._gw.stream("/v3/watch", watch, timeout):
                if reply.get("events") or reply.get("compact_revision") or reply.get("canceled"):
                    break
        except EtcdUnavailableError:
            pass  # that endpoint is down: leader() below tries the others
        return self.leader()

    def _guarded(
        self, epoch: int, *, put: tuple[str, str] | None = None, delete: str | None = None
    ) -> Json:
        op: Json
        if put is not None:
            op = {"request_put": {"key": _b64(put[0]), "value": _b64(put[1])}}
        else:
            assert delete is not None
            op = {"request_delete_range": {"key": _b64(delete)}}
        key = _b64(self._leader_key)
        compare = {"key": key, "target": "CREATE", "result": "EQUAL", "create_revision": str(epoch)}
        return {"compare": [compare], "success": [op]}

    @staticmethod
    def _parse_leader(kv: Json) -> Leader | None:
        try:
            doc = json.loads(_unb64(kv.get("value", "")))
            return Leader(
                str(doc["name"]),
                str(doc["value"]),
                int(kv["create_revision"]),
                int(kv.get("lease", 0)),
            )
        except (ValueError, KeyError, TypeError):
            return None  # not written by us: treat as no leader we can follow

    # --- node status keys --------------------------------------------------------------------

    def publish_status(
        self,
        address: str,
        role: Role,
        epoch: int,
        offset: int,
        replid: str,
        leaderless_after: int = -1,
        damaged: bool = False,
        writable: bool = True,
    ) -> None:
        """Put this node's status key under its lease (granting one if needed)."""
        doc = {
            "address": address,
            "role": role.value,
            "epoch": epoch,
            "offset": offset,
            "replid": replid,
            "leaderless_after": leaderless_after,
            "damaged": damaged,
            "writable": writable,
        }
        key, value = _b64(self._nodes_prefix + self.name), _b64(json.dumps(doc))
        self._with_lease(
            lambda lease: self._gw.post(
                "/v3/kv/put", {"key": key, "value": value, "lease": str(lease.id)}
            )
        )

    def nodes(self) -> list[NodeRecord]:
        """Every node's status key (ours included), sorted by name."""
        body = {"key": _b64(self._nodes_prefix), "range_end": _prefix_end(self._nodes_prefix)}
        reply = self._gw.post("/v3/kv/range", body)
        records = []
        for kv in reply.get("kvs", []):
            name = _unb64(kv["key"])[len(self._nodes_prefix) :]
            try:
                doc = json.loads(_unb64(kv.get("value", "")))
                records.append(
                    NodeRecord(
                        name,
                        str(doc["address"]),
                        Role(doc["role"]),
                        int(doc["epoch"]),
                        int(doc["offset"]),
                        str(doc["replid"]),
                        int(kv["mod_revision"]),
                        int(doc.get("leaderless_after", -1)),
                        bool(doc.get("damaged", False)),
                        bool(doc.get("writable", True)),
                    )
                )
            except (ValueError, KeyError, TypeError):
                continue  # a malformed status is no candidate
        return sorted(records, key=lambda r: r.name)
