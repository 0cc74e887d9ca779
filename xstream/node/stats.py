"""What INFO counts for the node process: connections, commands, errors, changes and saves.

    STATS.connected(), disconnected()   a client connection opened / closed (the RESP edge)
    STATS.command()              one command received, whatever its outcome (both edges)
    STATS.error(line)            one error reply: its prefix counts in errorstats
    STATS.call(name, usec, ...)  one command run by the node (commandstats: calls, usec,
                                 rejected_calls before it ran, failed_calls when it erred)
    STATS.calls_in_batch(counts, total, usec)  a batch's commands (EXEC, pipelined writes)
    STATS.changed(n)             n writes applied (a primary's commit, a replica's records)
    STATS.saving(), saved(mark)  a snapshot began / was written (see `changes_since_save`)
    STATS.net_input_bytes, net_output_bytes   bytes read from and written to RESP clients
    STATS.sample(now)            every SAMPLE_SECONDS (runner.py): the instantaneous_* rates,
                                 each the mean of the last SAMPLES intervals' (Redis's
                                 trackInstantaneousMetric: 16 samples, 100 ms apart)
    STATS.reset()                CONFIG RESETSTAT

The one home of these counts: Prometheus's xstream_commands_total and xstream_errors_total
(metrics.py) are read from here at scrape time. One object per process, as the Prometheus
registry is: the counters belong
to the node, not to the role of the moment (a promotion or a demotion keeps them, as Redis's
stats survive REPLICAOF), and the edges, the roles and the server commands all reach it
without being handed it. All increments happen on the event loop.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

SAMPLE_SECONDS = 0.1  # Redis samples its instantaneous metrics in serverCron at hz 10
SAMPLES = 16  # STATS_METRIC_SAMPLES


class Tally(dict[str, int]):
    """A count per name, 0 for a name not counted yet, as a Counter reads. Not a Counter:
    Counter defines __delitem__ in Python, which sends every `c[name] += n` through a
    Python-level item slot, ~1,300 instructions more per update (callgrind), two updates per
    command in commandstats."""

    def __missing__(self, key: str) -> int:
        return 0


class Stats:
    def __init__(self) -> None:
        self.started = time.time()  # process start, unix seconds (uptime_in_seconds)
        self.tcp_port = 0  # the RESP port served (tcp_port); 0: none
        self.connected_clients = 0  # RESP connections open now
        self.connections_received = 0  # total_connections_received (RESP connections)
        self.commands_processed = 0  # total_commands_processed (RESP and gRPC)
        self.error_replies = 0  # total_error_replies
        self.errors: Tally = Tally()  # errorstat_<PREFIX>:count=N
        self.changes = 0  # writes applied since the process started (never reset)
        self.changes_at_save = 0  # `changes` when the last written snapshot began
        self.last_save = int(self.started)  # rdb_last_save_time: start counts as saved
        self.last_save_ok = True  # rdb_last_bgsave_status
        self.snapshots_running = 0  # rdb_bgsave_in_progress when > 0
        self.on_shutdown: Callable[[], None] | None = None  # SHUTDOWN asks the process to stop
        self.calls: Tally = Tally()  # cmdstat_<name>: calls (run, failed or not)
        self.usec: Tally = Tally()  # ... usec (time inside the node, blocking included)
        self.rejected: Tally = Tally()  # ... rejected_calls (refused before running)
        self.failed: Tally = Tally()  # ... failed_calls (ran and answered an error)
        self.net_input_bytes = 0  # total_net_input_bytes (RESP clients)
        self.net_output_bytes = 0  # total_net_output_bytes
        self._last: tuple[float, int, int, int] | None = None  # the last sample's counts
        self._rates: deque[tuple[float, float, float]] = deque(maxlen=SAMPLES)

    def connected(self) -> None:
        self.connections_received += 1
        self.connected_clients += 1

    def disconnected(self) -> None:
        self.connected_clients -= 1

    def command(self, n: int = 1) -> None:
        self.commands_processed += n

    def error(self, line: str) -> None:
        self.error_replies += 1
        self.errors[line.split(" ", 1)[0]] += 1

    def call(self, name: str, usec: int, failed: bool = False, rejected: bool = False) -> None:
        """One command, by its Redis name (`xinfo|stream` for a subcommand)."""
        if rejected:
            self.rejected[name] += 1
            return
        self.calls[name] += 1
        self.usec[name] += usec
        if failed:
            self.failed[name] += 1

    def calls_in_batch(self, counts: dict[str, int], total: int, usec: int) -> None:
        """The `total` commands of a batch (EXEC, a pipeline's run of writes), how many by
        each name in `counts`, its time shared."""
        each = usec // total if total else 0
        for name, n in counts.items():  # a pipeline's run of one command: one turn
            self.calls[name] += n
            self.usec[name] += each * n

    def changed(self, n: int = 1) -> None:
        self.changes += n

    @property
    def changes_since_save(self) -> int:
        """rdb_changes_since_last_save: writes applied since the last snapshot began."""
        return self.changes - self.changes_at_save

    def saving(self) -> int:
        """A snapshot begins; the mark `saved` takes once it is written."""
        self.snapshots_running += 1
        return self.changes

    def saved(self, mark: int, ok: bool) -> None:
        self.snapshots_running -= 1
        self.last_save_ok = ok
        if ok:
            self.last_save = int(time.time())
            self.changes_at_save = max(self.changes_at_save, mark)

    def sample(self, now: float) -> None:
        """One sample at monotonic time `now`: the rates since the one before."""
        ops, bytes_in, bytes_out = (
            self.commands_processed,
            self.net_input_bytes,
            self.net_output_bytes,
        )
        last, self._last = self._last, (now, ops, bytes_in, bytes_out)
        if last is None or now <= last[0]:
            return
        then, ops0, in0, out0 = last
        dt = now - then
        self._rates.append(((ops - ops0) / dt, (bytes_in - in0) / dt, (bytes_out - out0) / dt))

    def instantaneous(self) -> tuple[int, float, float]:
        """(instantaneous_ops_per_sec, instantaneous_input_kbps, ..._output_kbps)."""
        n = len(self._rates)
        if not n:
            return 0, 0.0, 0.0
        ops, bytes_in, bytes_out = (sum(r[i] for r in self._rates) / n for i in range(3))
        return round(ops), round(bytes_in / 1024, 2), round(bytes_out / 1024, 2)

    def reset(self) -> None:
        """CONFIG RESETSTAT: the counters Redis's resetServerStats clears."""
        self.connections_received = self.commands_processed = self.error_replies = 0
        self.net_input_bytes = self.net_output_bytes = 0
        self._last = None
        self._rates.clear()
        for counter in (self.errors, self.calls, self.usec, self.rejected, self.failed):
            counter.clear()


STATS = Stats()
