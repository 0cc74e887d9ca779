"""The `xstream` data source's options: parsed and validated once, on the driver.

Spark hands options over as a case-insensitive dict of strings. Everything is checked here,
before any partition is planned, so a typo fails the query at once with a message naming the
option, never inside a task. The result is a frozen, picklable `Options`.

    streams            comma list of stream keys (read); the target stream (write; or a
                       `stream` column)
    replicas           comma list of HOST:PORT to read from (reads are spread across them)
    primary            HOST:PORT of the primary (writes; reads when no replicas are given)
    startingOffsets    earliest | latest | JSON {"stream": "earliest"|"latest"|"<ms>-<seq>"}
                       (an ID is the last entry already consumed: reading starts after it)
    endingOffsets      batch only: latest | JSON {"stream": "latest"|"<ms>-<seq>"} (inclusive)
    maxRecordsPerBatch streaming admission control: at most this many entries per micro-batch
    minPartitions      at least this many input partitions (default: one per replica or
                       primary, at least one per stream)
    failOnDataLoss     true (default): a range trimmed away fails the query; false: skip it
    replicaWaitMs      how long a task waits for its replica to apply the end of its range
                       (default 30000); a lagging replica never silently returns fewer rows
    fetchSize          entries per read call and per Arrow batch (default 10000; whole
                       stream nodes, so a batch may hold up to one node's entries more)
    acks               writes: leader | quorum (default) | all;  ackTimeoutMs (default 5000)
    idempotent         writes: true (default) = XADD with IDMP keyed by (query, batch,
                       partition), so a replayed batch appends nothing twice
    idmpBuckets        writes: producers per (query, batch, partition) (default 16)
    writeId            writes: the query part of the IDMP key for batch writes (default:
                       one random ID per write job, shared by its task retries)
    tls                true: TLS to every node (default false; implied by the files below)
    tlsCaFile          CA bundle (PEM) that verifies the nodes (default: the system's roots)
    tlsCertFile        client certificate (PEM), with tlsKeyFile: nodes require one by
                       default (--tls-client-auth required)
    tlsKeyFile         its private key (PEM)
                       The files are read where each task runs: the same paths must exist on
                       the driver (checked here) and on every executor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_ID = re.compile(r"^\d{1,20}-\d{1,20}$")
_ADDR = re.compile(r"^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")
_U64 = (1 << 64) - 1


@dataclass(frozen=True)
class TlsFiles:
    """TLS to the nodes (paths, read where a channel is opened); all None = system roots."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None


class OptionError(ValueError):
    """An invalid option: the message names the option and what it accepts."""


@dataclass(frozen=True)
class Options:
    streams: tuple[str, ...] = ()
    replicas: tuple[str, ...] = ()
    primary: str | None = None
    starting: dict[str, str] | str = "earliest"  # "earliest" | "latest" | per stream
    ending: dict[str, str] | str = "latest"
    max_records_per_batch: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    replica_wait_ms: int = 30_000
    fetch_size: int = 10_000
    acks: str = "quorum"
    ack_timeout_ms: int = 5_000
    idempotent: bool = True
    idmp_buckets: int = 16
    write_id: str | None = None
    default_start: str = "earliest"  # for streams a JSON startingOffsets leaves out
    tls: TlsFiles | None = None  # None: plaintext

    @property
    def read_nodes(self) -> tuple[str, ...]:
        """Where reads go: the replicas, or the primary when none are given."""
        if self.replicas:
            return self.replicas
        assert self.primary is not None
        return (self.primary,)


KNOWN = {
    "streams",
    "replicas",
    "primary",
    "startingoffsets",
    "endingoffsets",
    "maxrecordsperbatch",
    "minpartitions",
    "failondataloss",
    "replicawaitms",
    "fetchsize",
    "acks",
    "acktimeoutms",
    "idempotent",
    "idmpbuckets",
    "writeid",
    "tls",
    "tlscafile",
    "tlscertfile",
    "tlskeyfile",
}
SPARK_OWN = {"path", "checkpointlocation", "queryname"}  # Spark passes these through


def parse(raw: Mapping[str, str], *, mode: str, streaming: bool = False) -> Options:
    """Validate `raw` for `mode` "read" or "write"; raise OptionError on the first problem."""
    opts = {k.lower(): str(v) for k, v in raw.items()}
    unknown = sorted(set(opts) - KNOWN - SPARK_OWN)
    if unknown:
        raise OptionError(
            f"unknown option(s) {', '.join(unknown)}; the xstream source accepts: "
            + ", ".join(sorted(KNOWN))
        )
    streams = _streams(opts.get("streams") or opts.get("path"), required=mode == "read")
    replicas = tuple(_addresses("replicas", opts.get("replicas", "")))
    primary = opts.get("primary") or None
    if primary is not None:
        _address("primary", primary)
    if mode == "read" and not replicas and primary is None:
        raise OptionError("reading needs option 'replicas' (HOST:PORT,...) or 'primary'")
    if mode == "write" and primary is None:
        raise OptionError("writing needs option 'primary' (HOST:PORT of the primary)")
    default_start = "latest" if streaming else "earliest"
    starting = _offsets("startingOffsets", opts.get("startingoffsets", default_start), streams)
    if "endingoffsets" in opts and streaming:
        raise OptionError("endingOffsets is for batch queries only")
    ending = _offsets("endingOffsets", opts.get("endingoffsets", "latest"), streams)
    if ending == "earliest" or (isinstance(ending, dict) and "earliest" in ending.values()):
        raise OptionError("endingOffsets cannot be 'earliest'")
    acks = opts.get("acks", "quorum").lower()
    if acks not in ("leader", "quorum", "all"):
        raise OptionError(f"acks must be leader, quorum or all, not {acks!r}")
    return Options(
        streams=streams,
        replicas=replicas,
        primary=primary,
        starting=starting,
        ending=ending,
        max_records_per_batch=_positive(opts, "maxRecordsPerBatch", None),
        min_partitions=_positive(opts, "minPartitions", None),
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        replica_wait_ms=_positive(opts, "replicaWaitMs", 30_000, zero=True) or 0,
        fetch_size=_positive(opts, "fetchSize", 10_000) or 10_000,
        acks=acks,
        ack_timeout_ms=_positive(opts, "ackTimeoutMs", 5_000) or 5_000,
        idempotent=_bool(opts, "idempotent", True),
        idmp_buckets=_positive(opts, "idmpBuckets", 16) or 16,
        write_id=opts.get("writeid") or None,
        default_start=default_start,
        tls=_tls(opts),
    )


def _tls(opts: dict[str, str]) -> TlsFiles | None:
    files = {k: opts.get(f"tls{k}file") or None for k in ("ca", "cert", "key")}
    if (files["cert"] is None) != (files["key"] is None):
        raise OptionError("options 'tlsCertFile' and 'tlsKeyFile' go together")
    for k, path in files.items():
        if path is not None and not Path(path).is_file():
            raise OptionError(f"option 'tls{k.capitalize()}File': no file {path!r}")
    if not _bool(opts, "tls", False) and not any(files.values()):
        return None
    return TlsFiles(files["ca"], files["cert"], files["key"])


def _streams(value: str | None, required: bool) -> tuple[str, ...]:
    if not value:
        if required:
            raise OptionError("option 'streams' is required: a comma-separated list of keys")
        return ()
    names = [s.strip() for s in value.split(",")]
    if any(not n for n in names):
        raise OptionError(f"option 'streams' has an empty stream name: {value!r}")
    if len(set(names)) != len(names):
        raise OptionError(f"option 'streams' names a stream twice: {value!r}")
    return tuple(names)


def _address(name: str, value: str) -> str:
    if not _ADDR.match(value) or not 0 < int(value.rsplit(":", 1)[1]) < 65536:
        raise OptionError(f"option {name!r} needs HOST:PORT entries, got {value!r}")
    return value


def _addresses(name: str, value: str) -> list[str]:
    if not value.strip():
        return []
    return [_address(name, v.strip()) for v in value.split(",")]


def valid_id(value: str) -> bool:
    if not _ID.match(value):
        return False
    ms, seq = value.split("-")
    return int(ms) <= _U64 and int(seq) <= _U64


def _offsets(name: str, value: str, streams: tuple[str, ...]) -> dict[str, str] | str:
    text = value.strip()
    if text in ("earliest", "latest"):
        return text
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        raise OptionError(
            f"{name} must be 'earliest', 'latest' or a JSON object "
            f'{{"stream": "earliest"|"latest"|"<ms>-<seq>"}}, got {value!r}'
        ) from None
    if not isinstance(parsed, dict):
        raise OptionError(f"{name} JSON must be an object keyed by stream, got {value!r}")
    out: dict[str, str] = {}
    for key, v in parsed.items():
        if streams and key not in streams:
            raise OptionError(f"{name} names stream {key!r}, which is not in 'streams'")
        if not isinstance(v, str) or not (v in ("earliest", "latest") or valid_id(v)):
            raise OptionError(
                f"{name} for stream {key!r} must be 'earliest', 'latest' or an ID "
                f"'<ms>-<seq>', got {v!r}"
            )
        out[key] = v
    return out


def _positive(
    opts: dict[str, str], name: str, default: int | None, zero: bool = False
) -> int | None:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    try:
        n = int(raw)
    except ValueError:
        raise OptionError(f"option {name!r} must be an integer, got {raw!r}") from None
    if n < 0 or (n == 0 and not zero):
        raise OptionError(f"option {name!r} must be {'>= 0' if zero else '> 0'}, got {n}")
    return n


def _bool(opts: dict[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise OptionError(f"option {name!r} must be true or false, got {raw!r}")


def start_for(opts: Options, stream: str) -> str:
    """The starting offset of one stream: 'earliest', 'latest' or an ID."""
    if isinstance(opts.starting, str):
        return opts.starting
    return opts.starting.get(stream, opts.default_start)


def end_for(opts: Options, stream: str) -> str:
    if isinstance(opts.ending, str):
        return opts.ending
    return opts.ending.get(stream, "latest")
