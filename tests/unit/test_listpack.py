"""listpack.py against the bytes Redis's listpack.c writes: every integer width, every string
length encoding, back-length sizes at their thresholds, canonical-integer detection, walking
backwards, validation of corrupted listpacks."""

from __future__ import annotations

import random
import struct

import pytest

from xstream.engine import listpack as lp

I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1


def le(v: int, n: int) -> bytes:
    return (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")


# Element bytes as lpEncodeIntegerGetType + lpEncodeBacklen produce them.
INTS = [
    (0, b"\x00\x01"),
    (1, b"\x01\x01"),
    (127, b"\x7f\x01"),  # last 7-bit value
    (128, b"\xc0\x80\x02"),  # first 13-bit value
    (-1, b"\xdf\xff\x02"),
    (4095, b"\xcf\xff\x02"),
    (-4096, b"\xd0\x00\x02"),
    (4096, b"\xf1\x00\x10\x03"),
    (-4097, b"\xf1\xff\xef\x03"),
    (32767, b"\xf1\xff\x7f\x03"),
    (-32768, b"\xf1\x00\x80\x03"),
    (32768, b"\xf2\x00\x80\x00\x04"),
    (-32769, b"\xf2\xff\x7f\xff\x04"),
    (8388607, b"\xf2\xff\xff\x7f\x04"),
    (-8388608, b"\xf2\x00\x00\x80\x04"),
    (8388608, b"\xf3\x00\x00\x80\x00\x05"),
    (-8388609, b"\xf3\xff\xff\x7f\xff\x05"),
    (2147483647, b"\xf3\xff\xff\xff\x7f\x05"),
    (-2147483648, b"\xf3\x00\x00\x00\x80\x05"),
    (2147483648, b"\xf4" + le(2147483648, 8) + b"\x09"),
    (-2147483649, b"\xf4" + le(-2147483649, 8) + b"\x09"),
    (I64_MAX, b"\xf4" + b"\xff" * 7 + b"\x7f\x09"),
    (I64_MIN, b"\xf4" + b"\x00" * 7 + b"\x80\x09"),
]


@pytest.mark.parametrize(("value", "encoded"), INTS, ids=[str(v) for v, _ in INTS])
def test_integer_encodings(value: int, encoded: bytes) -> None:
    assert lp.encode_int(value) == encoded
    assert lp.encode_str(b"%d" % value) == encoded  # canonical decimal strings become ints
    assert lp.element_size(encoded + b"\xff", 0) == len(encoded)
    assert lp.get(encoded + b"\xff", 0) == (value, len(encoded))


def test_every_small_integer_round_trips() -> None:
    for v in range(-5000, 5000):
        enc = lp.encode_int(v)
        assert lp.get(enc, 0) == (v, len(enc))


def str_element(n: int) -> bytes:
    return bytes(random.Random(n).randrange(97, 123) for _ in range(n))


def backlen(n: int) -> bytes:
    """lpEncodeBacklen written out by hand, for the sizes the tests use."""
    if n <= 127:
        return bytes((n,))
    if n < 16383:
        return bytes((n >> 7, (n & 127) | 128))
    return bytes((n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128))


@pytest.mark.parametrize(
    ("n", "head"),
    [
        (0, b"\x80"),
        (1, b"\x81"),
        (63, b"\xbf"),  # last 6-bit length
        (64, b"\xe0\x40"),  # first 12-bit length
        (125, b"\xe0\x7d"),  # element of 127 bytes: 1-byte backlen
        (126, b"\xe0\x7e"),  # element of 128 bytes: 2-byte backlen
        (4095, b"\xef\xff"),  # last 12-bit length
        (4096, b"\xf0" + struct.pack("<I", 4096)),  # first 32-bit length
        (16377, b"\xf0" + struct.pack("<I", 16377)),  # element of 16382 bytes: 2-byte backlen
        (16378, b"\xf0" + struct.pack("<I", 16378)),  # element of 16383 bytes: 3-byte backlen
    ],
)
def test_string_encodings(n: int, head: bytes) -> None:
    s = str_element(n)
    encoded = head + s + backlen(len(head) + n)
    assert lp.encode_str(s) == encoded
    assert lp.element_size(encoded + b"\xff", 0) == len(encoded)
    assert lp.get(encoded + b"\xff", 0) == (s, len(encoded))
    assert lp.encoded_size(s) == len(encoded)


def test_backlen_sizes_at_thresholds() -> None:
    sizes = {1: 1, 127: 1, 128: 2, 16382: 2, 16383: 3, 2097150: 3, 2097151: 4}
    sizes |= {268435454: 4, 268435455: 5, (1 << 32) + 5: 5}
    for n, size in sizes.items():
        assert lp.backlen_size(n) == size, n


def test_large_strings_walk_back_over_three_and_four_byte_backlens() -> None:
    for n in (2097146 - 1, 2097146):  # elements of 2097150 and 2097151 bytes
        s = b"x" * n
        packed = lp.build([b"a", s, 7])
        assert lp.validate(packed) == 3
        assert lp.decode_all(packed) == [b"a", s, 7]
        end = len(packed) - 1
        last = lp.prev(packed, end)
        middle = lp.prev(packed, last)
        assert lp.get(packed, middle)[0] == s
        assert lp.prev(packed, middle) == lp.HEADER_SIZE
        assert end - last == 2
        assert last - middle == 5 + n + (3 if n + 5 < 2097151 else 4)


@pytest.mark.parametrize(
    ("text", "as_int"),
    [
        (b"0", 0),
        (b"-1", -1),
        (b"42", 42),
        (b"9223372036854775807", I64_MAX),
        (b"-9223372036854775808", I64_MIN),
        (b"05", None),
        (b"00", None),
        (b"-0", None),
        (b"-05", None),
        (b"+5", None),
        (b" 5", None),
        (b"5 ", None),
        (b"-", None),
        (b"", None),
        (b"1.0", None),
        (b"9223372036854775808", None),  # int64 overflow
        (b"-9223372036854775809", None),
        (b"18446744073709551615", None),  # 20 digits
        (b"123456789012345678901", None),  # 21 bytes
        (b"\xd9\xa1", None),  # a non-ASCII digit
    ],
)
def test_canonical_integer_detection(text: bytes, as_int: int | None) -> None:
    encoded = lp.encode_str(text)
    if as_int is None:
        assert encoded == bytes((0x80 | len(text),)) + text + bytes((len(text) + 1,))
        assert lp.get(encoded, 0)[0] == text
    else:
        assert encoded == lp.encode_int(as_int)


def sample_elements() -> list[lp.Element]:
    rng = random.Random(7)
    out: list[lp.Element] = [v for v, _ in INTS]
    out += [str_element(n) for n in (0, 1, 63, 64, 125, 126, 127, 4095, 4096, 5000)]
    out += [b"05", b"-0", b"+5", b"\x00\xff"]
    out += [rng.randrange(I64_MIN, I64_MAX) for _ in range(50)]
    rng.shuffle(out)
    return out


def test_build_decode_and_header() -> None:
    elements = sample_elements()
    packed = lp.build(elements)
    assert lp.total_bytes(packed) == len(packed)
    assert lp.num_elements_header(packed) == len(elements)
    assert packed[-1] == 0xFF
    assert lp.decode_all(packed) == elements
    assert lp.validate(packed) == len(elements)


def test_empty_listpack() -> None:
    empty = lp.new()
    assert bytes(empty) == b"\x07\x00\x00\x00\x00\x00\xff"
    assert lp.decode_all(empty) == []
    assert lp.validate(empty) == 0


def test_forward_and_backward_walks_agree() -> None:
    packed = lp.build(sample_elements())
    forward = []
    pos = lp.HEADER_SIZE
    while packed[pos] != 0xFF:
        forward.append(pos)
        pos = lp.get(packed, pos)[1]
    backward = []
    pos = len(packed) - 1
    while pos > lp.HEADER_SIZE:
        pos = lp.prev(packed, pos)
        backward.append(pos)
    assert backward == forward[::-1]


def test_get_bytes_gives_the_original_strings() -> None:
    elements = sample_elements()
    packed = bytes(lp.build(elements))
    pos = lp.HEADER_SIZE
    for e in elements:
        got, pos = lp.get_bytes(packed, pos)
        assert got == (e if isinstance(e, bytes) else b"%d" % e)
    assert packed[pos] == 0xFF


def test_append_bytes_appends_what_get_bytes_gives() -> None:
    elements = sample_elements()
    packed = bytes(lp.build(elements))
    pos = lp.HEADER_SIZE
    got: list[bytes] = []
    for _ in elements:
        pos = lp.append_bytes(packed, pos, got)
    assert got == [e if isinstance(e, bytes) else b"%d" % e for e in elements]
    assert packed[pos] == 0xFF


@pytest.mark.parametrize("low", [-2000, 0, 990, 99_990, 999_990, 1_000_990, 2**63 - 10])
def test_decimal_is_percent_d(low: int) -> None:
    """Every table boundary (0, 1000, a million) and past it, negatives, int64's top."""
    for v in [*range(low, low + 20), low * 7 // 3, -low]:
        assert lp.decimal(v) == b"%d" % v


def test_append_counts_and_saturates_at_65535() -> None:
    packed = lp.new()
    lp.append(packed, lp.encode_int(1) * 65534, 65534)
    assert lp.num_elements_header(packed) == 65534
    lp.append(packed, lp.encode_str(b"a") + lp.encode_int(2), 2)
    assert lp.num_elements_header(packed) == lp.NUMELE_UNKNOWN
    lp.append(packed, lp.encode_int(3), 1)
    assert lp.num_elements_header(packed) == lp.NUMELE_UNKNOWN  # stays unknown
    assert lp.validate(packed) == 65537
    assert lp.total_bytes(packed) == len(packed)


def test_replace_in_place_and_resizing() -> None:
    packed = lp.build([5, b"abc", 7])
    second = lp.get(packed, lp.HEADER_SIZE)[1]
    assert lp.replace(packed, second, lp.encode_str(b"xyz")) == 0
    assert lp.replace(packed, lp.HEADER_SIZE, lp.encode_int(100000)) == 5 - 2
    assert lp.replace(packed, lp.HEADER_SIZE, lp.encode_int(1)) == 2 - 5
    assert lp.decode_all(packed) == [1, b"xyz", 7]
    assert lp.validate(packed) == 3


GOOD = lp.build([1, b"hello", 300, b"x" * 200])


def corrupt(pos: int, byte: int) -> bytearray:
    bad = bytearray(GOOD)
    bad[pos] = byte
    return bad


def truncated() -> bytearray:
    bad = bytearray(GOOD[:-3] + b"\xff")
    struct.pack_into("<I", bad, 0, len(bad))
    return bad


def saturated_early() -> bytearray:
    bad = bytearray(GOOD)
    struct.pack_into("<H", bad, 4, lp.NUMELE_UNKNOWN)
    return bad


CORRUPTED = {
    "total-bytes": corrupt(0, GOOD[0] + 1),
    "end byte": corrupt(len(GOOD) - 1, 0),
    "element count": corrupt(4, 5),
    "encoding byte": corrupt(lp.HEADER_SIZE, 0xF5),
    "backlen": corrupt(lp.HEADER_SIZE + 1, 9),
    "string length": corrupt(lp.HEADER_SIZE + 2, 0x80 | 9),
    "two-byte backlen": corrupt(len(GOOD) - 2, GOOD[-2] ^ 1),
    "shorter than a header": bytearray(b"\x06\x00\x00\x00\x00\x00"),
    "truncated element": truncated(),
    "count saturated early": saturated_early(),
}


def test_validate_accepts_the_uncorrupted_listpack() -> None:
    assert lp.validate(GOOD) == 4


@pytest.mark.parametrize("bad", CORRUPTED.values(), ids=CORRUPTED.keys())
def test_validate_catches_corruption(bad: bytearray) -> None:
    with pytest.raises(ValueError):
        lp.validate(bad)


def test_decoders_reject_unknown_encodings() -> None:
    bad = b"\x07\x00\x00\x00\x01\x00\xf5\x01\xff"
    with pytest.raises(ValueError):
        lp.decode_all(bad)
    with pytest.raises(ValueError):
        lp.get(bad, lp.HEADER_SIZE)
    with pytest.raises(ValueError):
        lp.element_size(bad, lp.HEADER_SIZE)
