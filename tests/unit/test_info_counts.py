"""INFO's counted fields: the instantaneous rates (Stats.sample, Redis's 16 samples 100 ms
apart) and the engine's expired-key counts (lazy on a write, active in expire_cycle), and what
CONFIG RESETSTAT clears."""

from __future__ import annotations

from enginecalls import call

from xstream.engine import Engine
from xstream.node.stats import SAMPLES, Stats


def test_rates_are_the_mean_of_the_last_samples() -> None:
    s = Stats()
    assert s.instantaneous() == (0, 0.0, 0.0)
    s.sample(10.0)
    s.commands_processed, s.net_input_bytes, s.net_output_bytes = 100, 2048, 4096
    s.sample(10.1)  # 1,000 ops/s, 20 and 40 KiB/s
    s.commands_processed += 300
    s.sample(10.2)  # 3,000 ops/s, no bytes
    assert s.instantaneous() == (2000, 10.0, 20.0)
    for k in range(SAMPLES):  # a quiet 1.6 s pushes the busy samples out
        s.sample(10.3 + k / 10)
    assert s.instantaneous() == (0, 0.0, 0.0)
    s.sample(10.0)  # a clock that went back: no sample
    assert len(s._rates) == SAMPLES
    s.reset()
    assert s.instantaneous() == (0, 0.0, 0.0) and s.net_input_bytes == s.net_output_bytes == 0


def test_expired_keys_lazy_and_active() -> None:
    e = Engine()
    call(e, "SET", "a", "1", "PX", 10, now=1000)
    call(e, "SET", "b", "1", "PX", 10, now=1000)
    call(e, "SET", "c", "1", now=1000)
    call(e, "GET", "a", now=2000)  # a read hides it and deletes nothing
    assert (e.expired_keys, e.expired_keys_active) == (0, 0)
    call(e, "SET", "a", "2", "NX", now=2000)  # a write deletes it first
    assert (e.expired_keys, e.expired_keys_active) == (1, 0)
    result = e.expire_cycle(2000)
    assert result.effects == [[b"DEL", b"b"]]
    assert (e.expired_keys, e.expired_keys_active) == (2, 1)
    e.reset_stats()
    assert (e.expired_keys, e.expired_keys_active) == (0, 0)


def test_keyspace_hits_and_misses_as_redis_counts_them() -> None:
    """Each command's (hits, misses), as a Redis 8.8.0 server counted the same sequence."""
    e = Engine()
    for words in (("SET", "a", "1"), ("XADD", "s", "1-1", "f", "v"), ("RPUSH", "l", "x")):
        call(e, *words)
    for words, counted in [
        (("GET", "a"), (1, 0)), (("GET", "nokey"), (0, 1)), (("XRANGE", "s", "-", "+"), (1, 0)),
        (("EXISTS", "a", "nokey", "s"), (2, 1)), (("TYPE", "nokey"), (0, 1)),
        (("KEYS", "*"), (0, 0)), (("SCAN", "0", "TYPE", "string"), (0, 0)), (("DBSIZE",), (0, 0)),
        (("RANDOMKEY",), (0, 0)), (("MEMORY", "USAGE", "s"), (0, 0)), (("TTL", "a"), (1, 0)),
        (("OBJECT", "ENCODING", "a"), (1, 0)), (("LRANGE", "l", 0, -1), (1, 0)),
        (("XREAD", "STREAMS", "s", "nokey", "0", "0"), (2, 2)), (("SET", "b", "2"), (0, 0)),
        (("XGROUP", "CREATE", "s", "g", "0"), (0, 0)),
        (("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"), (2, 0)),
        (("COPY", "a", "c"), (1, 0)), (("LPOP", "l"), (0, 0)),
    ]:  # fmt: skip
        before = (e.clock.hits, e.clock.misses)
        call(e, *words)
        assert (e.clock.hits - before[0], e.clock.misses - before[1]) == counted, words
    e.reset_stats()
    assert (e.clock.hits, e.clock.misses) == (0, 0)
