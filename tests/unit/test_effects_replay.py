"""Effects reproduce state: a seeded workload runs on a primary engine, every effect is applied
to a replica engine with other node limits, and after every step both engines show the same
entries (XRANGE), the same XINFO STREAM metadata, types and digest (STYLE.md habit 2)."""

from __future__ import annotations

import random

import pytest
from enginecalls import argv, call, engine, error, ids_of

from xstream.engine import Engine, ReplyMap, StreamError

META = [
    b"length",
    b"last-generated-id",
    b"max-deleted-entry-id",
    b"entries-added",
    b"recorded-first-entry-id",
    b"first-entry",
    b"last-entry",
]
KEYS = [b"s", b"t"]


def observe(e: Engine) -> list[object]:
    seen: list[object] = []
    for key in KEYS:
        kind = call(e, "TYPE", key)
        seen.append(kind)
        if kind == "stream":
            meta = call(e, "XINFO", "STREAM", key)
            assert isinstance(meta, ReplyMap)
            seen += [meta.get(k) for k in META]
            seen.append(call(e, "XRANGE", key, "-", "+"))
    return seen


class Workload:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = 1_000

    def trim(self) -> list[bytes]:
        rng = self.rng
        if rng.random() < 0.5:
            words = [b"MAXLEN", b"%d" % rng.randrange(40)]
        else:
            words = [b"MINID", b"%d-%d" % (self.now - rng.randrange(60), rng.randrange(3))]
        if rng.random() < 0.6:
            words.insert(1, b"~")
            if rng.random() < 0.5:
                words += [b"LIMIT", b"%d" % rng.randrange(25)]
        elif rng.random() < 0.3:
            words.insert(1, b"=")
        if rng.random() < 0.3:
            words.append(rng.choice([b"KEEPREF", b"DELREF", b"ACKED"]))
        return words

    def command(self) -> list[bytes]:
        rng = self.rng
        self.now += rng.choice([0, 0, 1, 2, -3])  # the clock also goes backwards
        key = rng.choice(KEYS)
        op = rng.random()
        if op < 0.55:
            words = [b"XADD", key]
            if rng.random() < 0.3:
                words += self.trim()
            if rng.random() < 0.1:
                words.append(b"NOMKSTREAM")
            words.append(rng.choice([b"*", b"*", b"%d-*" % self.now]))
            for _ in range(rng.randint(1, 3)):
                words += [
                    rng.choice([b"f", b"g", b"%d" % rng.randrange(300)]),
                    b"v" * rng.randrange(9),
                ]
            return words
        if op < 0.75:
            return [b"XTRIM", key, *self.trim()]
        if op < 0.9:
            return [b"XDEL", key] + [
                b"%d-%d" % (self.now - rng.randrange(40), rng.randrange(3))
                for _ in range(rng.randint(1, 4))
            ]
        if op < 0.95:
            return [b"XSETID", key, b"%d-%d" % (self.now + rng.randrange(5), rng.randrange(5))]
        return rng.choice([[b"DEL", key], [b"SET", key, b"x"], [b"FLUSHALL"]])


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(
    ("primary", "replica"),
    [((4096, 100), (0, 3)), ((0, 3), (4096, 100)), ((120, 2), (1, 1)), ((1, 1), (0, 0))],
)
def test_replaying_effects_reaches_the_same_state(
    seed: int, primary: tuple[int, int], replica: tuple[int, int]
) -> None:
    p = engine(*primary)
    r = engine(*replica)
    work = Workload(seed)
    shipped = 0
    for _ in range(250):
        words = work.command()
        try:
            result = p.execute(words, now_ms=work.now)
        except StreamError:
            continue
        for effect in result.effects:
            r.apply(effect)
            shipped += 1
        p.check_integrity()
        r.check_integrity()
        assert observe(r) == observe(p), words
        assert r.digest() == p.digest(), words
    assert shipped > 50  # the workload really wrote


def test_replayed_trims_ignore_limit_and_need_no_tilde() -> None:
    # A replica obeys what it is sent (Redis's "must obey client"): LIMIT is forced to 0.
    e = engine(max_entries=2)
    for i in range(1, 11):
        call(e, "XADD", "s", f"{i}-0", "f", "v")
    assert error(e, "XTRIM", "s", "MAXLEN", "2", "LIMIT", "3").endswith("special ~ option")
    assert e.apply(argv("XTRIM", "s", "MAXLEN", "2", "LIMIT", "3")).reply == 8
    assert ids_of(e) == [b"9-0", b"10-0"]
    assert e.apply(argv("XADD", "s", "MAXLEN", "~", "0", "LIMIT", "1", "11-0", "f", "v")).reply
    assert call(e, "XLEN", "s") == 0  # both nodes went, LIMIT 1 notwithstanding


def test_replay_never_consults_the_clock() -> None:
    p = engine()
    r = engine()
    for now in (50, 40, 60):
        for effect in p.execute(argv("XADD", "s", "*", "f", "v"), now_ms=now).effects:
            r.apply(effect)
    assert ids_of(r) == ids_of(p) == [b"50-0", b"50-1", b"60-0"]
