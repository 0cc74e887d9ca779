"""RESP codec: exact encodings, round trips, any chunking, and Redis's protocol errors.

Expected request-parsing errors were checked against redis-server 7.0.15; the compat tier
(tests/compat/test_harness.py) compares them with a live server.
"""

from __future__ import annotations

import random
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xstream.engine import Engine
from xstream.engine.errors import StreamError
from xstream.engine.reply import NULL_ARRAY, OK, Reply, ReplyMap, Status, flatten
from xstream.server.resp.codec import (
    NEED_MORE,
    PROTO_INLINE_MAX_SIZE,
    Parsed,
    ProtocolError,
    ReplyParser,
    RespParser,
    decode_reply,
    encode,
    encode_bulks,
    encode_error,
    split_args,
)

# --- Helpers -------------------------------------------------------------------------------------


def replies_fed(data: bytes, chunk_sizes: list[int] | None = None) -> list[Parsed]:
    """Every reply in `data`, fed in chunks of the given sizes (byte by byte if None)."""
    parser = ReplyParser()
    out: list[Parsed] = []
    for chunk in _chunks(data, chunk_sizes):
        parser.feed(chunk)
        while (reply := parser.next_reply()) is not NEED_MORE:
            out.append(reply)
    assert parser.buffered == 0
    return out


def commands_fed(data: bytes, chunk_sizes: list[int] | None = None) -> list[list[bytes]]:
    parser = RespParser()
    out: list[list[bytes]] = []
    for chunk in _chunks(data, chunk_sizes):
        parser.feed(chunk)
        while (argv := parser.next_command()) is not None:
            out.append(argv)
    return out


def _chunks(data: bytes, sizes: list[int] | None) -> list[bytes]:
    if sizes is None:
        return [data[i : i + 1] for i in range(len(data))]
    out, i = [], 0
    for size in sizes:
        out.append(data[i : i + size])
        i += size
    return [*out, data[i:]]


def command_error(data: bytes) -> str:
    parser = RespParser()
    parser.feed(data)
    with pytest.raises(ProtocolError) as info:
        while parser.next_command() is not None:
            pass
    return info.value.message


def reply_error(data: bytes, parser: ReplyParser | None = None) -> str:
    parser = parser or ReplyParser()
    parser.feed(data)
    with pytest.raises(ProtocolError) as info:
        while parser.next_reply() is not NEED_MORE:
            pass
    return info.value.message


XRANGE_REPLY: Reply = [
    [b"1-1", [b"field", b"value", b"f2", b""]],
    [b"1-2", [b"\x00\r\n\xff", b"x" * 2000]],
]


# --- Encoding ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "resp2", "resp3"),
    [
        (0, b":0\r\n", b":0\r\n"),
        (-42, b":-42\r\n", b":-42\r\n"),
        (2**63 - 1, b":9223372036854775807\r\n", b":9223372036854775807\r\n"),
        (b"", b"$0\r\n\r\n", b"$0\r\n\r\n"),
        (b"a\r\nb", b"$4\r\na\r\nb\r\n", b"$4\r\na\r\nb\r\n"),
        (None, b"$-1\r\n", b"_\r\n"),
        (NULL_ARRAY, b"*-1\r\n", b"_\r\n"),
        ([], b"*0\r\n", b"*0\r\n"),
        ([1, [b"x"]], b"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n", b"*2\r\n:1\r\n*1\r\n$1\r\nx\r\n"),
        (OK, b"+OK\r\n", b"+OK\r\n"),
        (Status("PONG"), b"+PONG\r\n", b"+PONG\r\n"),
        (ReplyMap(), b"*0\r\n", b"%0\r\n"),
        (
            ReplyMap([(b"k", 1), (b"m", ReplyMap([(b"n", None)]))]),
            b"*4\r\n$1\r\nk\r\n:1\r\n$1\r\nm\r\n*2\r\n$1\r\nn\r\n$-1\r\n",
            b"%2\r\n$1\r\nk\r\n:1\r\n$1\r\nm\r\n%1\r\n$1\r\nn\r\n_\r\n",
        ),
    ],
)
def test_encode_every_type(reply: Reply, resp2: bytes, resp3: bytes) -> None:
    assert encode(reply) == resp2
    assert encode(reply, 2) == resp2
    assert encode(reply, 3) == resp3


def test_encode_lengths_past_the_prebuilt_headers() -> None:
    big = b"y" * 5000
    assert encode(big) == b"$5000\r\n" + big + b"\r\n"
    many: Reply = [1] * 1500
    assert encode(many) == b"*1500\r\n" + b":1\r\n" * 1500
    pairs = ReplyMap([(b"k", 1)] * 600)
    assert encode(pairs).startswith(b"*1200\r\n$1\r\nk\r\n:1\r\n")
    assert encode(pairs, 3).startswith(b"%600\r\n")


def test_encode_bulks_is_each_encoded_back_to_back() -> None:
    ids = [b"1764183600000-0", b"", b"y" * 1023, b"y" * 1024, b"y" * 5000]
    assert encode_bulks(list(ids)) == b"".join(encode(i) for i in ids)
    assert encode_bulks([]) == b""
    for other in (1, None, [b"a"], StreamError("ERR x")):  # a batch with another reply
        assert encode_bulks([b"1-1", other]) is None


def test_encode_xrange_shape() -> None:
    assert encode(XRANGE_REPLY).startswith(
        b"*2\r\n*2\r\n$3\r\n1-1\r\n*4\r\n$5\r\nfield\r\n$5\r\nvalue\r\n$2\r\nf2\r\n$0\r\n\r\n"
    )


def test_encode_rejects_what_is_not_a_reply() -> None:
    with pytest.raises(TypeError):
        encode(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode([b"a", "str"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="protocol version"):
        encode(1, 4)


@pytest.mark.parametrize(
    ("err", "line"),
    [
        (StreamError("syntax error"), b"-ERR syntax error\r\n"),
        (StreamError("No such key 'k'", "NOGROUP"), b"-NOGROUP No such key 'k'\r\n"),
        (StreamError("a\r\nb\nc\r\n"), b"-ERR a  b c\r\n"),
        (StreamError("\xff"), b"-ERR \xc3\xbf\r\n"),
    ],
)
def test_encode_error(err: StreamError, line: bytes) -> None:
    assert encode_error(err) == line


# --- Replies: round trips and chunking -----------------------------------------------------------


ROUND_TRIP: list[Reply] = [
    0,
    -1,
    b"",
    None,
    NULL_ARRAY,
    OK,
    [],
    [None, NULL_ARRAY, [[]], b"x"],
    ReplyMap(),
    ReplyMap([(b"a", ReplyMap([(b"b", [1, 2])])), (b"c", XRANGE_REPLY)]),
    XRANGE_REPLY,
]


@pytest.mark.parametrize("reply", ROUND_TRIP)
def test_round_trip_resp2(reply: Reply) -> None:
    # RESP2 has no map type: a map comes back as its flat array.
    assert decode_reply(encode(reply)) == flatten(reply)
    assert replies_fed(encode(reply)) == [flatten(reply)]


@pytest.mark.parametrize("reply", ROUND_TRIP)
def test_round_trip_resp3(reply: Reply) -> None:
    # RESP3 has one null for both null bulk and null array.
    expected = None if reply is NULL_ARRAY else reply
    decoded = decode_reply(encode(reply, 3))
    assert decoded == _nulls_merged(expected)
    assert type(decoded) is type(_nulls_merged(expected))
    assert replies_fed(encode(reply, 3)) == [decoded]


def _nulls_merged(reply: Reply) -> Reply:
    if isinstance(reply, ReplyMap):
        return ReplyMap((k, _nulls_merged(v)) for k, v in reply)
    if isinstance(reply, list):
        return [_nulls_merged(r) for r in cast("list[Reply]", reply)]
    return None if reply is NULL_ARRAY else reply


def test_decoded_types() -> None:
    status = decode_reply(b"+OK\r\n")
    assert isinstance(status, Status)
    assert status == "OK"
    assert isinstance(decode_reply(b"%1\r\n+k\r\n:1\r\n"), ReplyMap)
    assert decode_reply(b"*-1\r\n") is NULL_ARRAY
    assert decode_reply(b"$-1\r\n") is None


def test_replies_in_any_chunking() -> None:
    stream = b"".join(encode(r, proto) for r in ROUND_TRIP for proto in (2, 3))
    whole = replies_fed(stream, [len(stream)])
    assert len(whole) == 2 * len(ROUND_TRIP)
    assert replies_fed(stream) == whole
    rng = random.Random(7)
    for _ in range(50):
        sizes = [rng.randint(0, 40) for _ in range(rng.randint(0, 60))]
        assert replies_fed(stream, sizes) == whole


def test_large_reply_in_socket_sized_chunks() -> None:
    reply: Reply = [[b"%d-0" % i, [b"f", b"v" * (i % 50)]] for i in range(20000)]
    data = encode(reply)
    assert replies_fed(data, [65536] * (len(data) // 65536 + 1)) == [reply]


def test_bulk_payload_may_hold_crlf_and_be_split_anywhere() -> None:
    data = encode([b"\r\n\r\n", b"$3\r\n"])
    assert replies_fed(data) == [[b"\r\n\r\n", b"$3\r\n"]]


# --- Replies: RESP3 types and errors -------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"_\r\n", None),
        (b"#t\r\n", 1),
        (b"#f\r\n", 0),
        (b",3.14\r\n", b"3.14"),
        (b",-inf\r\n", b"-inf"),
        (b",nan\r\n", b"nan"),
        (
            b"(3492890328409238509324850943850943825024385\r\n",
            b"3492890328409238509324850943850943825024385",
        ),
        (b"=15\r\ntxt:Some string\r\n", b"Some string"),
        (b"~3\r\n:1\r\n:2\r\n:3\r\n", [1, 2, 3]),
        (b">2\r\n+message\r\n$2\r\nhi\r\n", [Status("message"), b"hi"]),
        (
            b"%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n:2\r\n",
            ReplyMap([(b"first", 1), (b"second", 2)]),
        ),
        (b"%1\r\n:7\r\n:1\r\n", ReplyMap([(b"7", 1)])),
        (b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n:5\r\n", 5),
        (b"*2\r\n|1\r\n+ttl\r\n:3600\r\n:1\r\n:2\r\n", [1, 2]),
        (b"|0\r\n+OK\r\n", OK),
        (b"~0\r\n", []),
        (b"%0\r\n", ReplyMap()),
        (b":+5\r\n", 5),
    ],
)
def test_resp3_types(data: bytes, value: Reply) -> None:
    assert decode_reply(data) == value
    assert replies_fed(data) == [value]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"-ERR unknown command 'FOO'\r\n", StreamError("unknown command 'FOO'")),
        (
            b"-WRONGTYPE Operation against a key\r\n",
            StreamError("Operation against a key", "WRONGTYPE"),
        ),
        (b"-NOGROUP No such key\r\n", StreamError("No such key", "NOGROUP")),
        (b"!21\r\nSYNTAX invalid syntax\r\n", StreamError("invalid syntax", "SYNTAX")),
    ],
)
def test_error_replies_are_values(data: bytes, error: StreamError) -> None:
    reply = decode_reply(data)
    assert isinstance(reply, StreamError)
    assert (reply.prefix, reply.message) == (error.prefix, error.message)
    assert encode_error(reply) == (data if data[0:1] == b"-" else b"-" + data[5:])


def test_error_inside_an_aggregate_stays_an_element() -> None:
    reply = decode_reply(b"*2\r\n+OK\r\n-ERR bad\r\n")
    assert reply == [OK, StreamError("bad")]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"?x\r\n", "Protocol error: unknown reply type '?'"),
        (b":abc\r\n", "Protocol error: bad integer b'abc'"),
        (b":\r\n", "Protocol error: bad integer b''"),
        (b"$-2\r\n", "Protocol error: invalid bulk length"),
        (b"$x\r\n", "Protocol error: bad integer b'x'"),
        (b"$3\r\nabcXY", "Protocol error: bulk string not ended by CRLF"),
        (b"*-2\r\n", "Protocol error: invalid multibulk length"),
        (b"%-1\r\n", "Protocol error: invalid multibulk length"),
        (b"#x\r\n", "Protocol error: bad boolean b'x'"),
        (b",one\r\n", "Protocol error: bad double b'one'"),
        (b"(1.5\r\n", "Protocol error: bad integer b'1.5'"),
        (b"_x\r\n", "Protocol error: bad null b'x'"),
        (b"=3\r\nabc\r\n", "Protocol error: verbatim string without a format"),
        (b"%1\r\n*0\r\n:1\r\n", "Protocol error: unsupported map key []"),
    ],
)
def test_malformed_replies(data: bytes, message: str) -> None:
    assert reply_error(data) == message


def test_reply_limits_are_configurable() -> None:
    assert reply_error(b"$11\r\n", ReplyParser(max_bulk_len=10)) == (
        "Protocol error: invalid bulk length"
    )
    assert replies_fed(b"$10\r\n0123456789\r\n") == [b"0123456789"]
    assert reply_error(b"*3\r\n", ReplyParser(max_multibulk_len=2)) == (
        "Protocol error: invalid multibulk length"
    )


def test_reply_protocol_error_is_final() -> None:
    parser = ReplyParser()
    parser.feed(b"?\r\n")
    with pytest.raises(ProtocolError):
        parser.next_reply()
    parser.feed(b"+OK\r\n")
    with pytest.raises(ProtocolError):
        parser.next_reply()


def test_decode_reply_wants_exactly_one() -> None:
    with pytest.raises(ProtocolError, match="incomplete"):
        decode_reply(b"*2\r\n:1\r\n")
    with pytest.raises(ProtocolError, match="after"):
        decode_reply(b":1\r\n:2\r\n")


# --- Requests ------------------------------------------------------------------------------------


def test_multibulk_commands() -> None:
    data = encode([b"XADD", b"s", b"*", b"f", b"\r\n\x00"]) + encode([b"PING"])
    expected = [[b"XADD", b"s", b"*", b"f", b"\r\n\x00"], [b"PING"]]
    assert commands_fed(data, [len(data)]) == expected
    assert commands_fed(data) == expected


def test_big_bulk_in_pieces() -> None:
    value = bytes(range(256)) * 4000
    data = encode([b"SET", b"k", value])
    assert commands_fed(data, [1000] * (len(data) // 1000)) == [[b"SET", b"k", value]]


def test_mixed_requests_in_any_chunking() -> None:
    data = (
        b"PING\r\n"
        + encode([b"ECHO", b"a b"])
        + b"\r\n\n   \r\n"  # blank lines are skipped
        + b"*0\r\n*-1\r\n"  # empty multibulks are skipped
        + b"set \"k 1\" 'v\\'x'\n"
        + encode([b"GET", b""])
    )
    expected = [[b"PING"], [b"ECHO", b"a b"], [b"set", b"k 1", b"v'x"], [b"GET", b""]]
    assert commands_fed(data, [len(data)]) == expected
    assert commands_fed(data) == expected
    rng = random.Random(11)
    for _ in range(50):
        sizes = [rng.randint(0, 9) for _ in range(rng.randint(0, 40))]
        assert commands_fed(data, sizes) == expected


def test_redis_framing_quirks() -> None:
    # The two bytes after a bulk and the byte after a length line's \r go unchecked.
    assert commands_fed(b"*1\r\n$4\r\nPINGxx*1\rx$4\rxPING\r\n") == [[b"PING"], [b"PING"]]
    # A negative multibulk count is an empty command, then the next request follows.
    assert commands_fed(b"*-5\r\nPING\r\n") == [[b"PING"]]


def test_largest_multibulk_count_waits_for_its_bulks() -> None:
    parser = RespParser()
    parser.feed(b"*2147483647\r\n$1\r\nx\r\n")
    assert parser.next_command() is None


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        (b"", []),
        (b"  \t ", []),
        (b"a  b\tc", [b"a", b"b", b"c"]),
        (b"a\vb", [b"a\vb"]),  # \v and \f separate words only between them
        (b'"a b" c', [b"a b", b"c"]),
        (b'"\\x41\\x4a\\n\\r\\t\\b\\a\\"\\\\\\q"', [b'AJ\n\r\t\b\a"\\q']),
        (b'"\\x4"', [b"x4"]),
        (b"'a\\'b' 'c\\n'", [b"a'b", b"c\\n"]),
        (b'ab"cd"', [b"abcd"]),  # a quote inside a word opens quotes
        (b'""', [b""]),
        (b"echo a\x00b c", [b"echo", b"a"]),  # a C string ends at NUL
        (b'"a"b', None),
        (b"'a'b", None),
        (b'"a', None),
        (b"'a", None),
        (b'"a\\"', None),
    ],
)
def test_split_args(line: bytes, argv: list[bytes] | None) -> None:
    assert split_args(line) == argv


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"*01\r\n", "Protocol error: invalid multibulk length"),
        (b"*+1\r\n", "Protocol error: invalid multibulk length"),
        (b"*x\r\n", "Protocol error: invalid multibulk length"),
        (b"*\r\n", "Protocol error: invalid multibulk length"),
        (b"*2147483648\r\n", "Protocol error: invalid multibulk length"),
        (b"*1\r\n$-1\r\n", "Protocol error: invalid bulk length"),
        (b"*1\r\n$01\r\n", "Protocol error: invalid bulk length"),
        (b"*1\r\n$\r\n", "Protocol error: invalid bulk length"),
        (b"*1\r\n$536870913\r\n", "Protocol error: invalid bulk length"),
        (b"*1\r\nx\r\n", "Protocol error: expected '$', got 'x'"),
        (b"*1\r\n\r\n", "Protocol error: expected '$', got '\r'"),
        (b'ping "a\r\n', "Protocol error: unbalanced quotes in request"),
        (b'echo "a"b\r\n', "Protocol error: unbalanced quotes in request"),
        (b"x" * (PROTO_INLINE_MAX_SIZE + 1), "Protocol error: too big inline request"),
        (b"*" * (PROTO_INLINE_MAX_SIZE + 1), "Protocol error: too big mbulk count string"),
        (
            b"*1\r\n" + b"$" * (PROTO_INLINE_MAX_SIZE + 1),
            "Protocol error: too big bulk count string",
        ),
    ],
)
def test_malformed_requests(data: bytes, message: str) -> None:
    assert command_error(data) == message


def test_bulk_limit_is_configurable_and_exact() -> None:
    parser = RespParser(max_bulk_len=3)
    parser.feed(b"*1\r\n$3\r\nabc\r\n")
    assert parser.next_command() == [b"abc"]
    parser.feed(b"*1\r\n$4\r\n")
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        parser.next_command()
    parser = RespParser()
    parser.feed(b"*1\r\n$536870912\r\n")
    assert parser.next_command() is None  # the largest bulk Redis accepts: wait for it


def test_protocol_error_reply_and_finality() -> None:
    parser = RespParser()
    parser.feed(b"PING\r\n*1\r\n\xff\r\nPING\r\n")
    assert parser.next_command() == [b"PING"]
    with pytest.raises(ProtocolError) as info:
        parser.next_command()
    # Redis sends the offending byte raw.
    assert encode_error(info.value.error) == b"-ERR Protocol error: expected '$', got '\xff'\r\n"
    with pytest.raises(ProtocolError):
        parser.next_command()


def test_empty_line_error_is_sent_with_a_blank() -> None:
    parser = RespParser()
    parser.feed(b"*1\r\n\r\n")
    with pytest.raises(ProtocolError) as info:
        parser.next_command()
    assert encode_error(info.value.error) == b"-ERR Protocol error: expected '$', got ' '\r\n"


def test_buffer_is_reclaimed() -> None:
    parser = RespParser()
    one = encode([b"XADD", b"s", b"*", b"f", b"v" * 100])
    for _ in range(1000):
        parser.feed(one[:50])
        assert parser.next_command() is None
        parser.feed(one[50:])
        assert parser.next_command() is not None
    assert parser.buffered == 0
    assert len(parser._buf) < 10 * len(one)


# --- Fuzz: handle it, or raise ProtocolError -----------------------------------------------------

_replies = st.recursive(
    st.none()
    | st.just(NULL_ARRAY)
    | st.integers(-(2**63), 2**63 - 1)
    | st.binary(max_size=20)
    | st.sampled_from([OK, Status("PONG"), Status("QUEUED")]),
    lambda children: (
        st.lists(children, max_size=5)
        | st.lists(st.tuples(st.binary(max_size=5), children), max_size=4).map(ReplyMap)
    ),
    max_leaves=30,
)


@settings(derandomize=True, database=None, max_examples=200)
@given(reply=_replies, proto=st.sampled_from([2, 3]), cuts=st.lists(st.integers(0, 50)))
def test_fuzz_round_trip_any_chunking(reply: Reply, proto: int, cuts: list[int]) -> None:
    data = encode(reply, proto)
    expected = flatten(reply) if proto == 2 else _nulls_merged(reply)
    assert replies_fed(data, cuts) == [expected]


@settings(derandomize=True, database=None, max_examples=300)
@given(data=st.binary(max_size=80), cuts=st.lists(st.integers(0, 20), max_size=8))
def test_fuzz_reply_parser_raises_only_protocol_error(data: bytes, cuts: list[int]) -> None:
    parser = ReplyParser()
    try:
        for chunk in _chunks(data, cuts):
            parser.feed(chunk)
            while parser.next_reply() is not NEED_MORE:
                pass
    except ProtocolError:
        pass


_request_bytes = st.lists(
    st.sampled_from([b"*", b"$", b"1", b"2", b"-", b"0", b"\r", b"\n", b"\r\n", b" ", b'"'])
    | st.sampled_from([b"'", b"\\", b"x", b"4", b"a", b"\x00"])
    | st.binary(max_size=3),
    max_size=40,
).map(b"".join)


@settings(derandomize=True, database=None, max_examples=300)
@given(data=_request_bytes, cuts=st.lists(st.integers(0, 20), max_size=8))
def test_fuzz_request_parser_chunking_is_invisible(data: bytes, cuts: list[int]) -> None:
    def run(sizes: list[int] | None) -> tuple[list[list[bytes]], str | None]:
        parser, out = RespParser(), []
        try:
            for chunk in _chunks(data, sizes):
                parser.feed(chunk)
                while (argv := parser.next_command()) is not None:
                    assert argv
                    out.append(argv)
        except ProtocolError as e:
            return out, e.message
        return out, None

    assert run(cuts) == run([len(data)])


def test_xread_reply_is_an_array_of_pairs_in_resp2_and_a_map_in_resp3() -> None:
    e = Engine()
    e.execute([b"XADD", b"s", b"1-1", b"a", b"1"])
    for argv in (
        [b"XREAD", b"STREAMS", b"s", b"0"],
        [b"XGROUP", b"CREATE", b"s", b"g", b"0"],
        [b"XREADGROUP", b"GROUP", b"g", b"c", b"STREAMS", b"s", b">"],
    ):
        reply = e.execute(argv, 5).reply
        if argv[0] == b"XGROUP":
            continue
        body = b"$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"
        assert encode(reply, 2) == b"*1\r\n*2\r\n" + body
        assert encode(reply, 3) == b"%1\r\n" + body
