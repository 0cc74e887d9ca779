"""engine/argvs.py, the compiled encoder and decoder of record payloads: every payload is the
form records.py draws (checked against struct, independently) and decodes to the argvs
encoded, and a payload cut or grown inside an argv is refused (records.decode_payload raises
CorruptRecordError), never read past or half returned."""

from __future__ import annotations

import random
import struct
import zlib

import pytest

from xstream.engine import argvs
from xstream.node import records
from xstream.node.records import CorruptRecordError


def random_argvs(rng: random.Random) -> list[list[bytes]]:
    out = []
    for _ in range(rng.randint(1, 8)):
        argc = rng.choice([1, 2, 5, 9, 300])
        out.append([rng.randbytes(rng.choice([0, 1, 12, 255, 256, 70000])) for _ in range(argc)])
    return out


def struct_form(effects: list[list[bytes]]) -> bytes:
    return b"".join(
        struct.pack(f"<{len(argv) + 1}I", len(argv), *map(len, argv)) + b"".join(argv)
        for argv in effects
    )


@pytest.mark.parametrize("seed", range(20))
def test_records_are_the_struct_form(seed: int) -> None:
    effects = random_argvs(random.Random(seed))
    effects.append([b"x" * n for n in (1023, 1024, 1025)] * 400)  # argc past the cached lengths
    payload = struct_form(effects)
    assert argvs.encode(effects) == payload
    header = struct.pack("<II", len(payload), zlib.crc32(payload))
    assert records.encode(effects) == header + payload


@pytest.mark.parametrize("seed", range(20))
def test_payloads_decode_to_what_was_encoded(seed: int) -> None:
    effects = random_argvs(random.Random(seed))
    payload = records.encode(effects)[records.HEADER.size :]
    assert argvs.decode(payload) == effects
    assert records.decode_payload(memoryview(payload)) == effects


@pytest.mark.parametrize("seed", range(20))
def test_a_payload_cut_or_grown_inside_an_argv_is_corrupt(seed: int) -> None:
    rng = random.Random(seed)
    effects = [[b"XADD", b"k", b"1-1", b"f", b"v"], *random_argvs(rng)]
    payload = records.encode(effects)[records.HEADER.size :]
    bounds = {len(records.encode(effects[:k])) - records.HEADER.size for k in range(1, 9)}
    cut = rng.choice([c for c in range(1, len(payload)) if c not in bounds])
    one_more = b"\x01\x00\x00\x00" + b"\x05\x00\x00\x00" + b"abc"  # 3 of its 5 bytes
    for bad in (payload[:cut], payload + b"\x01\x00", payload + one_more):
        assert argvs.decode(bad) is None
        with pytest.raises(CorruptRecordError):
            records.decode_payload(bad)


@pytest.mark.parametrize("seed", range(20))
def test_split_gives_the_payloads_scan_finds_and_its_error(seed: int) -> None:
    """records.split (argvs.split, compiled) against records.scan: the same whole records, as
    their payloads, up to an incomplete one or the first corrupt one, and scan's error."""
    rng = random.Random(seed)
    recs = [records.encode(random_argvs(rng)) for _ in range(rng.randint(1, 5))]
    buf = b"".join(recs)
    damaged = bytearray(buf)
    at = rng.randrange(len(buf))
    damaged[at] ^= 0x40
    zero_length = buf + b"\x00" * 12
    for case in (buf, buf[: rng.randrange(len(buf))], bytes(damaged), zero_length):
        want: list[bytes] = []
        want_error = ""
        try:
            for start, stop in records.scan(case):
                want.append(bytes(records.payload(case, start, stop)))
        except CorruptRecordError as e:
            want_error = str(e)
        got: list[bytes] = []
        end, error = records.split(case, got)
        assert got == want
        assert end == sum(records.HEADER.size + len(p) for p in want)
        assert (str(error) if error else "") == want_error
