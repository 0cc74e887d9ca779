"""Hypothesis strategies for the property tier: command specs, garbage argv, effect checks.

IDs are drawn near the interesting places of the current stream (its last ID, its live
entries and their neighbours, max-deleted-entry-id, the ends of the ID space), so that both
successes and each error of the ID rules come up often. Field sets repeat (SAMEFIELDS), values
include integer-looking strings in and out of canonical form and long strings that cross the
listpack string encodings and the node byte limits.
"""

from __future__ import annotations

import re

from hypothesis import strategies as st
from naive_streams import (
    MAX,
    MIN,
    U64,
    Bound,
    Id,
    MStream,
    Trim,
    XAdd,
    XDel,
    XRange,
    XRead,
    XSetId,
    XTrim,
    decr,
    enc,
    incr,
)

from xstream.engine import Engine, StreamError

KEYS = [b"s0", b"s1", b"s2"]
keys = st.sampled_from(KEYS)

FIELD_SETS = [(b"a",), (b"a", b"b"), (b"name", b"0", b"12"), (b"f", b"f")]
FIELD_WORDS = [b"a", b"b", b"f", b"name", b"0", b"12", b"-3", b"007", b""]
INTISH = [
    b"0", b"-5", b"007", b"1", b"-0", b"+5", b"127", b"128", b"4095", b"4096", b"-4096",
    b"-4097", b"32767", b"32768", b"-32769", b"8388607", b"8388608", b"2147483648",
    b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808",
    b"-9223372036854775809", b"", b"hello", b"*", b"~",
]  # fmt: skip
LONG_SIZES = [60, 62, 63, 64, 127, 128, 300, 4094, 4095, 4096, 5000]

values = st.one_of(
    st.sampled_from(INTISH),
    st.binary(max_size=8),
    st.sampled_from(LONG_SIZES).map(lambda n: b"v" * n),
    st.integers(20, 200).map(lambda n: b"w" * n),
)


def cased(word: bytes) -> st.SearchStrategy[bytes]:
    """The word as typed in upper, lower or mixed case."""
    return st.sampled_from([word.upper(), word.lower(), word.capitalize()])


@st.composite
def field_values(draw: st.DrawFn) -> list[bytes]:
    fields = draw(
        st.one_of(
            st.sampled_from(FIELD_SETS),
            st.lists(st.sampled_from(FIELD_WORDS), min_size=1, max_size=4).map(tuple),
        )
    )
    out: list[bytes] = []
    for f in fields:
        out += [f, draw(values)]
    return out


def interesting_ids(s: MStream | None) -> list[Id]:
    """IDs where the rules change: the stream's edges, entries and their neighbours."""
    found: list[Id | None] = [MIN, (0, 1), (1, 0), MAX, (U64, 0), (U64 - 1, U64)]
    if s is not None:
        for i in [s.last_id, s.max_deleted, *s.ids()[:3], *s.ids()[-3:]]:
            found += [i, incr(i), decr(i), (i[0] + 1, 0) if i[0] < U64 else None]
        found += [(s.last_id[0], 0), (s.last_id[0], U64)]
    return sorted({i for i in found if i is not None})


def small_ids() -> st.SearchStrategy[Id]:
    return st.tuples(st.integers(0, 3000), st.integers(0, 4))


def any_ids() -> st.SearchStrategy[Id]:
    return st.tuples(st.integers(0, U64), st.integers(0, U64))


def ids_near(s: MStream | None) -> st.SearchStrategy[Id]:
    live = s.ids() if s is not None and s.entries else [MIN]
    return st.one_of(
        st.sampled_from(interesting_ids(s)),
        st.sampled_from(live),
        small_ids(),
        any_ids(),
    )


@st.composite
def id_text(draw: st.DrawFn, i: Id) -> bytes:
    """A strict-parse spelling of `i`, sometimes in a form only strtoull accepts."""
    ms, seq = i
    spell = draw(st.sampled_from(["plain", "plain", "plain", "zero", "plus", "space"]))
    ms_text = {"plain": b"%d", "zero": b"0%d", "plus": b"+%d", "space": b" %d"}[spell] % ms
    if seq == 0 and draw(st.booleans()):
        return ms_text
    return ms_text + b"-%d" % seq


@st.composite
def xadd_ids(draw: st.DrawFn, s: MStream | None) -> tuple[str, Id, bytes]:
    last = s.last_id if s is not None else MIN
    form = draw(st.sampled_from(["auto", "auto", "auto", "explicit", "explicit", "autoseq"]))
    if form == "auto":
        return form, MIN, b"*"
    if form == "autoseq":
        ms = draw(
            st.one_of(
                st.sampled_from([last[0], last[0], last[0] + 1, max(last[0] - 1, 0), U64, 0]),
                st.integers(0, 3000),
            )
        )
        ms = min(ms, U64)
        return form, (ms, 0), b"%d-*" % ms
    near = st.tuples(st.integers(last[0], last[0] + 3), st.integers(0, 3))
    i = draw(st.one_of(near, ids_near(s)).filter(lambda i: i[0] <= U64 and i[1] <= U64))
    return form, i, draw(id_text(i))


@st.composite
def trims(draw: st.DrawFn, s: MStream | None) -> Trim:
    strategy = draw(st.sampled_from([b"MAXLEN", b"MINID"]))
    op = draw(st.sampled_from([b"", b"=", b"~", b"~"]))
    t = Trim(draw(cased(strategy)), op)
    length = s.length if s is not None else 0
    if strategy == b"MAXLEN":
        t.maxlen = draw(st.one_of(st.integers(length // 2, length + 2), st.integers(0, length)))
        if draw(st.integers(0, 15)) == 0:
            t.maxlen = -1  # an error
    else:
        t.minid = draw(ids_near(s))
    if op == b"~":
        t.limit = draw(st.one_of(st.none(), st.integers(0, 12)))
    elif draw(st.integers(0, 15)) == 0:
        t.limit = draw(st.integers(0, 3))  # LIMIT without `~`: an error
    if t.limit is not None:
        t.limit_word = draw(cased(b"LIMIT"))
    return t


POLICIES = [None, None, None, b"KEEPREF", b"DELREF", b"ACKED"]


@st.composite
def policies(draw: st.DrawFn) -> bytes | None:
    p = draw(st.sampled_from(POLICIES))
    return None if p is None else draw(cased(p))


@st.composite
def xadds(draw: st.DrawFn, key: bytes, s: MStream | None, fv: list[bytes] | None = None) -> XAdd:
    form, i, text = draw(xadd_ids(s))
    c = XAdd(key, form, i, text, fv if fv is not None else draw(field_values()))
    if draw(st.integers(0, 5)) == 0:
        c.nomkstream = draw(cased(b"NOMKSTREAM"))
    c.policy = draw(policies())
    if draw(st.booleans()):
        c.trim = draw(trims(s))
    n = (c.nomkstream is not None) + (c.policy is not None)
    n += len(c.trim.groups()) if c.trim is not None else 0
    c.order = draw(st.permutations(range(n)))
    return c


@st.composite
def xtrims(draw: st.DrawFn, key: bytes, s: MStream | None) -> XTrim:
    c = XTrim(key, draw(trims(s)), draw(policies()))
    n = len(c.trim.groups()) + (c.policy is not None)
    c.order = draw(st.permutations(range(n)))
    return c


@st.composite
def xdels(draw: st.DrawFn, key: bytes, s: MStream | None) -> XDel:
    return XDel(key, draw(st.lists(ids_near(s), min_size=1, max_size=4)))


@st.composite
def bounds(draw: st.DrawFn, s: MStream | None) -> Bound:
    kind = draw(st.sampled_from(["-", "+", "id", "id", "ms", "(id", "(id", "(ms"]))
    return Bound(kind, draw(ids_near(s)))


@st.composite
def xranges(draw: st.DrawFn, key: bytes, s: MStream | None) -> XRange:
    count = draw(st.one_of(st.none(), st.none(), st.integers(-2, 6)))
    return XRange(key, draw(st.booleans()), draw(bounds(s)), draw(bounds(s)), count)


@st.composite
def xreads(draw: st.DrawFn, streams: dict[bytes, MStream | None]) -> XRead:
    ks = draw(st.lists(keys, min_size=1, max_size=3))
    texts = []
    for k in ks:
        choice = draw(st.sampled_from(["$", "+", "id", "id", "ms"]))
        if choice in ("$", "+"):
            texts.append(choice.encode())
        else:
            i = draw(ids_near(streams.get(k)))
            texts.append(enc(i) if choice == "id" else b"%d" % i[0])
    count = draw(st.one_of(st.none(), st.integers(-1, 4)))
    block = draw(st.one_of(st.none(), st.none(), st.sampled_from([0, 100])))
    return XRead(ks, texts, count, block)


def settable_ids(s: MStream | None) -> list[Id]:
    """IDs XSETID accepts on `s`: not below its last entry nor its max-deleted-entry-id."""
    if s is None:
        return [MIN, (5, 0)]
    floor = max(s.max_deleted, s.entries[-1][0] if s.entries else MIN)
    found = [floor, incr(floor), s.last_id, incr(s.last_id), (s.last_id[0] + 7, 0)]
    return sorted({i for i in found if i is not None and i[0] <= U64})


@st.composite
def xsetids(draw: st.DrawFn, key: bytes, s: MStream | None) -> XSetId:
    c = XSetId(key, draw(st.one_of(st.sampled_from(settable_ids(s)), ids_near(s))))
    length = s.length if s is not None else 0
    added = s.entries_added if s is not None else 0
    if draw(st.booleans()):
        c.entries_added = draw(
            st.sampled_from([length, added, added + 5, length + 1, length - 1, -1, 0])
        )
    if draw(st.booleans()):
        c.max_deleted = draw(st.one_of(st.just(MIN), st.just(c.id), ids_near(s)))
    c.md_first = draw(st.booleans())
    return c


# -- garbage: argv the engine must reject ------------------------------------------------------

KNOWN = {
    b"xadd", b"xtrim", b"xdel", b"xsetid", b"xlen", b"xrange", b"xrevrange", b"xread",
    b"del", b"exists", b"type", b"keys", b"scan", b"flushall", b"set", b"get", b"xinfo",
    b"memory",
}  # fmt: skip

# Never a valid ID anywhere: a letter, a bad shape, an overflow, or longer than 127 bytes.
BAD_IDS = st.one_of(
    st.sampled_from(
        [
            b"",
            b"abc",
            b"1-",
            b"1-2-3",
            b"18446744073709551616-0",
            b"1-18446744073709551616",
            b"1.5",
            b"1-x",
            b"9" * 128,
            b"0x1",
            b"--",
            b"1 -1",
            b"-1",
            b"(",
            b"1-1 ",
        ]
    ),
    st.text(alphabet="0123456789-abcxyz*+( ", min_size=1, max_size=12)
    .filter(lambda t: any(ch.isalpha() for ch in t))
    .map(str.encode),
)
# Invalid only where parsing is strict (XADD's ID excepted for `*` and `<ms>-*`).
BAD_STRICT_IDS = st.one_of(BAD_IDS, st.sampled_from([b"-", b"+", b"*", b"5-*"]))
BAD_XADD_IDS = st.one_of(BAD_IDS, st.sampled_from([b"-", b"+"]))
BAD_XREAD_IDS = st.one_of(BAD_IDS, st.sampled_from([b"-", b"*", b"5-*"]))
NOT_INTS = st.sampled_from([b"abc", b"1.5", b"", b"01", b"+1", b"9223372036854775808", b" 1"])


@st.composite
def garbage(draw: st.DrawFn, stream_keys: list[bytes], missing_keys: list[bytes]) -> list[bytes]:
    """An argv that must fail with a StreamError whatever the keyspace holds.

    `stream_keys` hold streams (some checks come after the key lookup), `missing_keys` do not
    exist.
    """
    k = draw(keys)
    f = [b"f", b"v"]
    makers = [
        lambda: [draw(st.binary(max_size=8).filter(lambda w: w.lower() not in KNOWN)), k],
        lambda: [b"XADD", k, draw(BAD_XADD_IDS), *f],
        lambda: [b"XADD", k, b"*", b"f"],
        lambda: [b"XADD", k, b"*", b"f", b"v", b"g"],
        lambda: [b"XADD", k, b"0-0", *f],
        lambda: [b"XADD", k, b"MAXLEN", draw(NOT_INTS), b"*", *f],
        lambda: [b"XADD", k, b"MAXLEN", b"1", b"MINID", b"1", b"*", *f],
        lambda: [b"XADD", k, b"MINID", draw(BAD_STRICT_IDS), b"*", *f],
        lambda: [b"XADD", k, b"LIMIT", b"5", b"*", *f],
        lambda: [b"XADD", k, b"MAXLEN", b"~", b"1", b"LIMIT", b"-1", b"*", *f],
        lambda: [b"XADD", k],
        lambda: [b"XTRIM", k, b"MAXLEN"],
        lambda: [b"XTRIM", k, b"FOO", b"1"],
        lambda: [b"XTRIM", k, b"LIMIT", b"0"],
        lambda: [b"XTRIM", k, b"MAXLEN", b"=", b"1", b"LIMIT", b"1"],
        lambda: [b"XTRIM", k, b"MINID", draw(BAD_STRICT_IDS)],
        lambda: [b"XTRIM", k, b"MAXLEN", b"-1"],
        lambda: [b"XTRIM", k, b"MAXLEN", b"1", b"DELREF", b"ACKED"],
        lambda: [b"XRANGE", k, draw(BAD_IDS), b"+"],
        lambda: [b"XREVRANGE", k, draw(BAD_IDS), b"-"],
        lambda: [b"XRANGE", k, b"-", b"+", b"COUNT"],
        lambda: [b"XRANGE", k, b"-", b"+", b"COUNT", draw(NOT_INTS)],
        lambda: [b"XRANGE", k, b"(" + draw(st.sampled_from([b"-", b"+"])), b"+"],
        lambda: [b"XRANGE", k, b"(18446744073709551615-18446744073709551615", b"+"],
        lambda: [b"XRANGE", k, b"-", b"(0-0"],
        lambda: [b"XRANGE", k, b"-"],
        lambda: [b"XLEN"],
        lambda: [b"XLEN", k, b"extra"],
        lambda: [b"XREAD", b"STREAMS", k],
        lambda: [b"XREAD", b"STREAMS", k, k, b"0"],
        lambda: [b"XREAD", b"FOO", b"STREAMS", k, b"0"],
        lambda: [b"XREAD", b"COUNT", draw(NOT_INTS), b"STREAMS", k, b"0"],
        lambda: [b"XREAD", b"BLOCK", b"-1", b"STREAMS", k, b"0"],
        lambda: [b"XREAD", b"STREAMS", k, draw(BAD_XREAD_IDS)],
        lambda: [b"XREAD", b"STREAMS", k, b">"],
        lambda: [b"XREAD", b"NOACK", b"STREAMS", k, b"0"],
        lambda: [b"XSETID", k, draw(BAD_STRICT_IDS)],
        lambda: [b"XSETID", k],
        lambda: [b"XSETID", k, b"1-1", b"0"],
        lambda: [b"XSETID", k, b"1-1", b"ENTRIESADDED", draw(NOT_INTS)],
        lambda: [b"XSETID", k, b"1-1", b"MAXDELETEDID", b"1-2"],
        lambda: [b"XDEL", k],
        lambda: [b"DEL"],
        lambda: [b"XINFO", b"STREAM"],
        lambda: [b"XINFO", b"NOPE", k],
    ]
    if stream_keys:
        sk = draw(st.sampled_from(stream_keys))
        makers.append(lambda: [b"XDEL", sk, b"1-1", draw(BAD_STRICT_IDS)])
    if missing_keys:
        mk = draw(st.sampled_from(missing_keys))
        makers.append(lambda: [b"XSETID", mk, b"1-1"])
        makers.append(lambda: [b"XINFO", b"STREAM", mk])
    return draw(st.sampled_from(makers))()


# -- effects ---------------------------------------------------------------------------------

CONCRETE_ID = re.compile(rb"^\d+-\d+$")
EFFECT_COMMANDS = {b"XADD", b"XAPPEND", b"XTRIM", b"XDEL", b"XSETID", b"DEL", b"FLUSHALL", b"SET"}


def xadd_effect_parts(effect: list[bytes]) -> tuple[list[bytes], bytes, list[bytes]]:
    """Split a shipped XADD into (options, ID, field-values), checking its shape."""
    assert effect[0].upper() == b"XADD", effect
    i = 2
    opts: list[bytes] = []
    while effect[i].upper() in (b"KEEPREF", b"DELREF", b"ACKED", b"MAXLEN", b"MINID"):
        if effect[i].upper() in (b"MAXLEN", b"MINID"):
            assert effect[i + 1] == b"=", f"a shipped trim must be exact: {effect}"
            opts += effect[i : i + 3]
            i += 3
        else:
            opts.append(effect[i])
            i += 1
    fv = effect[i + 1 :]
    assert fv and len(fv) % 2 == 0, effect
    return opts, effect[i], fv


def check_effect_shape(effect: list[bytes]) -> None:
    """Effects are deterministic: concrete IDs, exact trims, no `*`, `~` or LIMIT."""
    name = effect[0].upper()
    assert name in EFFECT_COMMANDS, effect
    if name == b"XADD":
        opts, eid, _ = xadd_effect_parts(effect)
        assert CONCRETE_ID.match(eid), f"XADD shipped a non-concrete ID: {effect}"
        words = [*opts, eid]
    elif name == b"XAPPEND":
        assert CONCRETE_ID.match(effect[2]), f"XAPPEND shipped a non-concrete ID: {effect}"
        words = effect[2:4]
    elif name == b"SET":
        words = []
    else:
        words = effect[1:]
    for w in words:
        assert w not in (b"*", b"~") and w.upper() != b"LIMIT", f"non-deterministic effect {effect}"
    if name == b"XTRIM":
        assert effect[3] == b"=" and effect[2].upper() in (b"MAXLEN", b"MINID"), effect
    if name == b"XDEL":
        assert all(CONCRETE_ID.match(w) for w in effect[2:]), effect


def shipped_trim(effect: list[bytes]) -> tuple[int | None, Id | None] | None:
    """The exact `(maxlen, minid)` an XADD or XTRIM effect carries, or None."""
    words = xadd_effect_parts(effect)[0] if effect[0].upper() == b"XADD" else effect[2:]
    for j, w in enumerate(words):
        if w.upper() == b"MAXLEN":
            return int(words[j + 2]), None
        if w.upper() == b"MINID":
            ms, _, seq = words[j + 2].partition(b"-")
            return None, (int(ms), int(seq))
    return None


def parse_id(text: bytes) -> tuple[int, int]:
    """An `<ms>-<seq>` reply as a pair of ints, for ordering IDs in the models."""
    ms, _, seq = text.partition(b"-")
    return int(ms), int(seq)


def ship(replica: Engine, argv: list[bytes], effects: list[list[bytes]]) -> None:
    """Apply the primary's effects for `argv` on the replica; a rejection fails the test."""
    for effect in effects:
        try:
            replica.apply(effect)
        except StreamError as err:
            raise AssertionError(f"{argv}: replica rejected {effect}: {err.line}") from err
